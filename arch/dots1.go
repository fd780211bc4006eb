package arch

import (
	"maps"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newDots1, "Dots1ForCausalLM")
}

// dots1 is Dots1Model (conversion/dots1.py): Qwen2MoeModel under the
// dots1 architecture, with n_routed_experts as num_experts, the leading
// dense blocks and DeepSeek-style routing hyperparameters, and the shared
// experts mapped as they are (Qwen2MoeModel would take them for routed
// experts).
type dots1 struct {
	qwenMoe
}

func newDots1(h HParams, dir string) (Model, error) {
	t, err := newText("dots1", h, dir)
	if err != nil {
		return nil, err
	}
	// Dots1Model.__init__: hparams["num_experts"] = hparams["n_routed_experts"].
	v, ok := h["n_routed_experts"]
	if !ok {
		return nil, &ConfigError{Key: "n_routed_experts", Value: nil, Msg: "is missing"}
	}
	t.h = maps.Clone(h)
	t.h["num_experts"] = v
	return &dots1{qwenMoe{text: t}}, nil
}

// Params is Dots1Model.set_gguf_parameters: Qwen2MoeModel's, then the
// leading dense block count, shared expert count, routed scaling factor
// and norm_topk_prob.
func (m *dots1) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.qwenMoe.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, e := range []struct{ key, suffix string }{
		{"first_k_dense_replace", "leading_dense_block_count"},
		{"n_shared_experts", "expert_shared_count"},
	} {
		if err := k.u32(e.suffix, m.h[e.key]); err != nil {
			return nil, err
		}
	}
	if err := k.f32("expert_weights_scale", m.h["routed_scaling_factor"]); err != nil {
		return nil, err
	}
	norm, ok := m.h["norm_topk_prob"]
	if !ok {
		return nil, &ConfigError{Key: "norm_topk_prob", Value: nil, Msg: "is missing"}
	}
	// add_bool packs with struct's "?", which takes any value's truth.
	k.l.Set(k.key("expert_weights_norm"), gguf.Bool(Truthy(norm)))
	return k.l.KVs(), nil
}

// Modify is Dots1Model.modify_tensors.
func (m *dots1) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "shared_experts") {
		return m.mapped(in, in.Name, bid, nil)
	}
	return m.qwenMoe.Modify(in, bid)
}
