package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newAfmoe, "AfmoeForCausalLM")
}

// afmoe is AfmoeModel (conversion/afmoe.py, Arcee's Trinity): LlamaModel's
// parameters, vocabulary and rope factors under the afmoe architecture,
// with the MoE, routing and sliding-window keys the config has, the
// per-expert MLPs stacked per block (gate, up, down) and every other tensor
// mapped as it is (ModelBase.modify_tensors: no Q/K permutation).
type afmoe struct {
	*llama
	experts mlpExperts
}

func newAfmoe(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("afmoe", h, dir)
	if err != nil {
		return nil, err
	}
	return &afmoe{llama: l, experts: mlpExperts{wids: []string{"gate_proj", "up_proj", "down_proj"}}}, nil
}

// Filter is AfmoeModel.filter_tensors: the router's expert_bias gets a
// .bias suffix (exp_probs_b.bias), then LlamaModel's.
func (m *afmoe) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, ".expert_bias") {
		name = strings.TrimSuffix(name, ".expert_bias") + ".expert_bias.bias"
	}
	return m.llama.Filter(name)
}

// Params is AfmoeModel.set_gguf_parameters: LlamaModel's, then each of the
// MoE, routing and sliding-window keys the config sets (not None).
func (m *afmoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.llama.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, p := range []struct {
		key, suffix string
		add         func(string, any) error
	}{
		{"num_shared_experts", "expert_shared_count", k.u32},
		{"moe_intermediate_size", "expert_feed_forward_length", k.u32OrArray},
		{"num_dense_layers", "leading_dense_block_count", k.u32},
		{"route_norm", "expert_weights_norm", func(suffix string, v any) error {
			// add_bool packs with struct's "?", which takes any value's truth.
			k.l.Set(k.key(suffix), gguf.Bool(Truthy(v)))
			return nil
		}},
		{"route_scale", "expert_weights_scale", k.f32},
		{"sliding_window", "attention.sliding_window", k.u32},
	} {
		if v := m.h[p.key]; v != nil {
			if err := p.add(p.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// Modify is AfmoeModel.modify_tensors.
func (m *afmoe) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "mlp.experts") {
		return m.experts.add(&m.text, in, bid, "num_local_experts", "num_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *afmoe) Finish() error { return m.experts.finish() }
