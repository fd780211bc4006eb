package arch

import (
	"encoding/json"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newExaone4, "Exaone4ForCausalLM")
}

// exaone4 is Exaone4Model (conversion/exaone.py), EXAONE 4.0: TextModel's
// tensors (q/k norms, post-norms), the vocabulary size, hybrid
// sliding-window attention and llama3 rope factors.
type exaone4 struct{ text }

func newExaone4(h HParams, dir string) (Model, error) {
	if unset(h, "layer_types") {
		// Exaone4Config derives layer_types from sliding_window_pattern
		// (deriveExaone4LayerTypes); where it cannot (no sliding_window, a
		// string pattern) AutoConfig raises and the converter falls back
		// to config.json as it is, without the config class's defaults.
		return nil, &ConfigError{Key: "layer_types", Value: nil, Msg: "is missing and Exaone4Config cannot derive it from sliding_window / sliding_window_pattern (not supported)"}
	}
	t, err := newText("exaone4", h, dir)
	return &exaone4{t}, err
}

// deriveExaone4LayerTypes is Exaone4Config.__post_init__'s layer_types:
// each sliding_window_pattern-th layer global, the others sliding (an
// unset sliding_window makes the pattern 0, which it divides by: left
// unset).
func deriveExaone4LayerTypes(h HParams) {
	if !unset(h, "layer_types") || unset(h, "sliding_window") {
		return
	}
	p, err1 := asInt(h["sliding_window_pattern"])
	n, err2 := asInt(h["num_hidden_layers"])
	if err1 != nil || err2 != nil || !isInt(h["sliding_window_pattern"]) || p <= 0 || n < 0 || n > 1<<16 {
		return
	}
	types := make([]any, n)
	for i := range n {
		types[i] = "full_attention"
		if (i+1)%p != 0 {
			types[i] = "sliding_attention"
		}
	}
	h["layer_types"] = types
}

func (m *exaone4) Vocab() VocabKind { return VocabGPT2 }

// Params is Exaone4Model.set_gguf_parameters: vocab_size, then for a
// sliding window the window and the per-layer pattern (layer_types, else
// sliding_window_pattern as a string like "LLLG" or an int period).
func (m *exaone4) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.u32("vocab_size", m.h["vocab_size"]); err != nil {
		return nil, err
	}
	sw := m.h["sliding_window"]
	if sw == nil {
		return k.l.KVs(), nil
	}
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	if v, ok := m.h["layer_types"]; ok {
		types, isList := v.([]any)
		if !isList {
			return nil, &ConfigError{Key: "layer_types", Value: v, Msg: "is not a list"}
		}
		pattern := make([]bool, len(types))
		for i, t := range types {
			pattern[i] = t == "sliding_attention"
		}
		k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
		return k.l.KVs(), nil
	}
	v, ok := m.h["sliding_window_pattern"]
	if !ok {
		return k.l.KVs(), nil
	}
	n, err := m.h.MustInt("num_hidden_layers")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > 1<<16 {
		return nil, &ConfigError{Key: "num_hidden_layers", Value: n, Msg: "is not a block count"}
	}
	var pattern []bool
	switch p := v.(type) {
	case string:
		for i := range n {
			if len(p) == 0 {
				return nil, &ConfigError{Key: "sliding_window_pattern", Value: v, Msg: "is empty"}
			}
			pattern = append(pattern, p[i%int64(len(p))] == 'L')
		}
	case json.Number:
		period, err := asInt(p)
		if err != nil || period == 0 {
			return nil, &ConfigError{Key: "sliding_window_pattern", Value: v, Msg: "is not a layer period"}
		}
		for i := range n {
			pattern = append(pattern, (i+1)%period != 0)
		}
	}
	if int64(len(pattern)) == n {
		k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
	}
	return k.l.KVs(), nil
}

// Extra is Exaone4Model.generate_extra_tensors: llama3 rope factors, with
// a scaling factor of 16 where the config has none.
func (m *exaone4) Extra() ([]Output, error) { return m.llama3RopeFreqs(16) }

func (m *exaone4) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }
