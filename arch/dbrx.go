package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newDbrx, "DbrxForCausalLM")
}

// dbrx is DbrxModel (conversion/dbrx.py): its own hyperparameters, read
// from the attn_config and ffn_config objects, and its experts stored as
// one 2-D tensor per projection without a .weight suffix.
type dbrx struct{ text }

func newDbrx(h HParams, dir string) (Model, error) {
	t, err := newText("dbrx", h, dir)
	if err != nil {
		return nil, err
	}
	return &dbrx{text: t}, nil
}

// Vocab: DbrxModel keeps TextModel.set_vocab, the gpt2 routine.
func (m *dbrx) Vocab() VocabKind { return VocabGPT2 }

// sub is hparams[obj][key], which the converter indexes without a default.
func (m *dbrx) sub(obj, key string) (any, error) {
	o, ok := m.h[obj].(map[string]any)
	if !ok {
		return nil, &ConfigError{Key: obj, Value: m.h[obj], Msg: "is not an object"}
	}
	v, ok := o[key]
	if !ok {
		return nil, &ConfigError{Key: obj + "." + key, Value: nil, Msg: "is missing"}
	}
	return v, nil
}

// Params is DbrxModel.set_gguf_parameters.
func (m *dbrx) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	for _, p := range []struct {
		suffix   string
		obj, key string
		add      func(string, any) error
	}{
		{"block_count", "", "", k.u32},
		{"context_length", "", "max_seq_len", k.u32},
		{"embedding_length", "", "d_model", k.u32},
		{"feed_forward_length", "ffn_config", "ffn_hidden_size", k.u32OrArray},
		{"attention.head_count", "", "n_heads", k.u32OrArray},
		{"attention.head_count_kv", "attn_config", "kv_n_heads", k.u32OrArray},
		{"rope.freq_base", "attn_config", "rope_theta", k.f32},
		{"attention.clamp_kqv", "attn_config", "clip_qkv", k.f32},
		{"expert_count", "ffn_config", "moe_num_experts", k.u32},
		{"expert_used_count", "ffn_config", "moe_top_k", k.u32},
		{"attention.layer_norm_epsilon", "", "", k.f32},
	} {
		var v any
		var err error
		switch {
		case p.suffix == "block_count":
			v = m.blocks
		case p.suffix == "attention.layer_norm_epsilon":
			v = 1e-5
		case p.obj != "":
			v, err = m.sub(p.obj, p.key)
		default:
			var ok bool
			if v, ok = m.h[p.key]; !ok {
				err = &ConfigError{Key: p.key, Value: nil, Msg: "is missing"}
			}
		}
		if err != nil {
			return nil, err
		}
		if err := p.add(p.suffix, v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify is DbrxModel.modify_tensors: an expert tensor (ffn.experts.mlp.w1,
// v1, w2, no .weight) is viewed as [experts, ffn, d_model], w2 transposed
// per expert to [experts, d_model, ffn], and mapped with .weight added.
func (m *dbrx) Modify(in Input, bid int) ([]Output, error) {
	var transposed bool
	switch {
	case strings.Contains(in.Name, "ffn.experts.mlp.w1"), strings.Contains(in.Name, "ffn.experts.mlp.v1"):
	case strings.Contains(in.Name, "ffn.experts.mlp.w2"):
		transposed = true
	default:
		return m.mapped(in, in.Name, bid, nil)
	}
	if strings.Contains(in.Name, ".weight") {
		return m.mapped(in, in.Name, bid, nil)
	}
	var dims [3]int64
	for i, p := range [][2]string{{"ffn_config", "moe_num_experts"}, {"ffn_config", "ffn_hidden_size"}, {"", "d_model"}} {
		v := m.h[p[1]]
		if p[0] != "" {
			var err error
			if v, err = m.sub(p[0], p[1]); err != nil {
				return nil, err
			}
		}
		n, err := asInt(v)
		if err != nil || n <= 0 {
			return nil, &ConfigError{Key: p[1], Value: v, Msg: "is not a size"}
		}
		dims[i] = n
	}
	if numel(in.Shape) != dims[0]*dims[1]*dims[2] {
		// torch's view fails.
		return nil, fmt.Errorf("%s of shape %v is not %d experts × ffn_hidden_size %d × d_model %d", in.Name, in.Shape, dims[0], dims[1], dims[2])
	}
	shape := dims[:]
	var build func([][]float32) ([]float32, error)
	if transposed {
		shape, build = transposeLast2(shape, -1)
	}
	out, err := m.mapped(in, in.Name+".weight", bid, build)
	if err != nil {
		return nil, err
	}
	out[0].Shape = shape
	return out, nil
}

// ForceType is DbrxModel.tensor_force_quant: every tensor of two or more
// dimensions takes the outtype's type, even those the converter otherwise
// keeps at F32 (the router).
func (m *dbrx) ForceType(_ *Output, nDims int) (gguf.Type, bool) {
	if nDims > 1 {
		return OutType, true
	}
	return 0, false
}
