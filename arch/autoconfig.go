package arch

import (
	"encoding/json"
	"maps"
	"strconv"
)

// The converter does not read config.json itself: its hparams are
// AutoConfig.from_pretrained(dir).to_dict() (ModelBase.load_hparams), so
// what a transformers config class derives in __post_init__ shows up as if
// config.json had it. derivedKeys lists, per config.json model_type, the
// derivations of transformers 5.24.0's config classes
// (models/<type>/configuration_<type>.py) that reach keys the wave-1 model
// classes read.
var derivedKeys = map[string][]derivation{
	// LlamaConfig, MistralConfig: head_dim = hidden_size //
	// num_attention_heads, and num_key_value_heads = num_attention_heads,
	// when unset. (MixtralConfig leaves head_dim None.)
	"llama":   {deriveHeadDim, deriveKVHeads},
	"mistral": {deriveHeadDim, deriveKVHeads},
	"mixtral": {deriveKVHeads},
	"qwen2":   {deriveKVHeads},
	"qwen3":   {deriveKVHeads},
	"phi3":    {deriveKVHeads},
}

// A derivation sets a key the config class computes from others.
type derivation func(h HParams)

// unset is a key absent or null (a config class field left at None).
func unset(h HParams, key string) bool { return h[key] == nil }

func deriveHeadDim(h HParams) {
	if !unset(h, "head_dim") {
		return
	}
	hidden, okH := h["hidden_size"].(json.Number)
	heads, okN := h["num_attention_heads"].(json.Number)
	if !okH || !okN {
		return
	}
	x, err1 := strconv.ParseInt(string(hidden), 10, 64)
	n, err2 := strconv.ParseInt(string(heads), 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || x < 0 {
		return
	}
	h["head_dim"] = json.Number(strconv.FormatInt(x/n, 10))
}

func deriveKVHeads(h HParams) {
	if unset(h, "num_key_value_heads") && !unset(h, "num_attention_heads") {
		h["num_key_value_heads"] = h["num_attention_heads"]
	}
}

// autoConfig returns h with its config class's derived keys set (a copy:
// h itself is not changed).
func autoConfig(h HParams) HParams {
	mt, _ := h["model_type"].(string)
	ds := derivedKeys[mt]
	if len(ds) == 0 {
		return h
	}
	out := maps.Clone(h)
	for _, d := range ds {
		d(out)
	}
	return out
}
