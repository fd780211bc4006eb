package arch

import (
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newBailingMoeV2, "BailingMoeV2ForCausalLM")
}

// bailingMoeV2 is BailingMoeV2Model (conversion/bailingmoe.py, Ling 2.0,
// remote code): TextModel's parameters with a partial rope dimension
// count, the leading dense blocks and the expert keys, the router's
// expert_bias as exp_probs_b.bias, per-expert MLPs stacked per block.
// Checkpoints with multi-token-prediction blocks are refused.
type bailingMoeV2 struct {
	text
	experts mlpExperts
}

func newBailingMoeV2(h HParams, dir string) (Model, error) {
	if n, _, err := h.Int("num_nextn_predict_layers"); err != nil || n > 0 {
		return nil, &ConfigError{Key: "num_nextn_predict_layers", Value: h["num_nextn_predict_layers"], Msg: "asks for multi-token-prediction blocks, which are not converted"}
	}
	t, err := newText("bailingmoe2", h, dir)
	if err != nil {
		return nil, err
	}
	return &bailingMoeV2{text: t}, nil
}

// Vocab: BailingMoeV2Model.set_vocab is _set_vocab_gpt2.
func (m *bailingMoeV2) Vocab() VocabKind { return VocabGPT2 }

// Filter is BailingMoeV2Model.filter_tensors: expert_bias gets a .bias
// suffix.
func (m *bailingMoeV2) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, ".expert_bias") {
		name += ".bias"
	}
	return m.text.Filter(name)
}

// Params is BailingMoeV2Model.set_gguf_parameters.
func (m *bailingMoeV2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	dim, err := headDim(m.h)
	if err != nil {
		return nil, err
	}
	pct := 0.5
	if v, ok := m.rope["partial_rotary_factor"]; ok {
		if pct, err = asFloat(v); err != nil {
			return nil, &ConfigError{Key: "partial_rotary_factor", Value: v, Msg: "is not a number"}
		}
	}
	rot := math.Trunc(float64(dim) * pct)
	if !(rot >= 0 && rot < 1<<32) {
		return nil, &ConfigError{Key: "partial_rotary_factor", Value: pct, Msg: "does not give a rope dimension count"}
	}
	if err := k.u32("rope.dimension_count", int64(rot)); err != nil {
		return nil, err
	}
	moe, ok := m.h["moe_intermediate_size"]
	if !ok {
		return nil, &ConfigError{Key: "moe_intermediate_size", Value: nil, Msg: "is missing"}
	}
	shared, ok := m.h["num_shared_experts"]
	if !ok {
		return nil, &ConfigError{Key: "num_shared_experts", Value: nil, Msg: "is missing"}
	}
	sharedFF, ok := m.h["moe_shared_expert_intermediate_size"]
	if !ok {
		w, err1 := asInt(moe)
		n, err2 := asInt(shared)
		if err1 != nil || err2 != nil {
			return nil, &ConfigError{Key: "moe_intermediate_size", Value: moe, Msg: "and num_shared_experts must be integers"}
		}
		sharedFF = w * n
	}
	for _, p := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"leading_dense_block_count", m.h["first_k_dense_replace"], k.u32},
		{"vocab_size", m.h["vocab_size"], k.u32},
		{"expert_feed_forward_length", moe, k.u32OrArray},
		{"expert_shared_feed_forward_length", sharedFF, k.u32},
		{"expert_weights_scale", m.h["routed_scaling_factor"], k.f32},
		{"expert_shared_count", shared, k.u32},
	} {
		if err := p.add(p.suffix, p.v); err != nil {
			return nil, err
		}
	}
	// add_bool packs with struct's "?", which takes any value's truth.
	k.l.Set(k.key("expert_weights_norm"), gguf.Bool(Truthy(m.h["norm_topk_prob"])))
	if v := m.h["num_nextn_predict_layers"]; v != nil {
		if err := k.u32("nextn_predict_layers", v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is BailingMoeV2Model.modify_tensors.
func (m *bailingMoeV2) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "mlp.experts") {
		return m.experts.add(&m.text, in, bid, "num_local_experts", "num_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *bailingMoeV2) Finish() error { return m.experts.finish() }
