package arch

import "github.com/ggufkit/ggufkit/gguf"

func init() {
	register(newARWKV7, "RwkvHybridForCausalLM")
}

// arwkv7 is ARwkv7Model (conversion/rwkv.py): RWKV-7 time mixing in a
// Qwen2 body (RMS norms, SwiGLU mlp, the Qwen2 vocabulary), with
// Rwkv7Model's tensor handling and fixed LoRA ranks.
type arwkv7 struct {
	*rwkv7
}

func newARWKV7(h HParams, dir string) (Model, error) {
	m, err := newRWKV7As("arwkv7", h, dir)
	if err != nil {
		return nil, err
	}
	return &arwkv7{rwkv7: m}, nil
}

// Vocab is ARwkv7Model.set_vocab: SentencePiece, else GPT-2's BPE.
func (m *arwkv7) Vocab() VocabKind { return VocabQwen2 }

// Params is ARwkv7Model.set_gguf_parameters: the LoRA ranks are the
// modeling code's constants (64, 64, 32 and 128, or 0 without a gate), not
// read from the config.
func (m *arwkv7) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	vals := map[string]any{}
	for _, key := range []string{"hidden_size", "head_size", "rms_norm_eps", "intermediate_size", "wkv_has_gate", "wkv_version"} {
		v, err := mustHave(h, key)
		if err != nil {
			return nil, err
		}
		vals[key] = v
	}
	// A JSON true is no number here, as True == 7 is false in Python.
	if f, err := asFloat(vals["wkv_version"]); err != nil || f != 7 {
		return nil, &ConfigError{Key: "wkv_version", Value: vals["wkv_version"], Msg: "is not 7 (llama.cpp's converter asserts it)"}
	}
	gate := 0
	if Truthy(vals["wkv_has_gate"]) {
		gate = 128
	}
	k, err := m.params(ft, vals["hidden_size"], "attention.layer_norm_rms_epsilon", vals["rms_norm_eps"], vals["head_size"],
		[]any{64, 64, 32, gate}, vals["intermediate_size"])
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("token_shift_count"), gguf.Uint32(1))
	k.l.Set(k.key("attention.head_count"), gguf.Uint32(0)) // required by llama.cpp, unused
	return k.l.KVs(), nil
}
