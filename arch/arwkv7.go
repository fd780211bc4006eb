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
	if _, isBool := vals["wkv_version"].(bool); isBool {
		return nil, &ConfigError{Key: "wkv_version", Value: vals["wkv_version"], Msg: "is not 7 (llama.cpp's converter asserts it)"}
	}
	if f, err := asFloat(vals["wkv_version"]); err != nil || f != 7 {
		return nil, &ConfigError{Key: "wkv_version", Value: vals["wkv_version"], Msg: "is not 7 (llama.cpp's converter asserts it)"}
	}
	gate := 0
	if Truthy(vals["wkv_has_gate"]) {
		gate = 128
	}
	k := &kv{arch: m.arch}
	k.l.Set(k.key("context_length"), gguf.Uint32(1<<20)) // RWKV isn't context limited
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"embedding_length", vals["hidden_size"], k.u32}, {"block_count", m.blocks, k.u32},
		{"attention.layer_norm_rms_epsilon", vals["rms_norm_eps"], k.f32}, {"wkv.head_size", vals["head_size"], k.u32},
		{"attention.decay_lora_rank", 64, k.u32}, {"attention.iclr_lora_rank", 64, k.u32},
		{"attention.value_residual_mix_lora_rank", 32, k.u32}, {"attention.gate_lora_rank", gate, k.u32},
		{"feed_forward_length", vals["intermediate_size"], k.u32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	k.l.Set(k.key("token_shift_count"), gguf.Uint32(1))
	k.l.Set(k.key("attention.head_count"), gguf.Uint32(0)) // required by llama.cpp, unused
	return k.l.KVs(), nil
}
