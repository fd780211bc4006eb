package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newPhiMoe, "PhiMoEForCausalLM")
	// PhimoeConfig.__post_init__: num_key_value_heads = num_attention_heads
	// when None.
	derivedKeys["phimoe"] = append(derivedKeys["phimoe"], deriveKVHeads)
}

// phiMoe is PhiMoeModel (conversion/phi.py, Phi-3.5-MoE): Phi3MiniModel
// under the phimoe architecture with the expert counts, and the
// block_sparse_moe experts' w1, w2, w3 stacked per block.
type phiMoe struct {
	*phi3
	experts blockSparseExperts
}

func newPhiMoe(h HParams, dir string) (Model, error) {
	t, err := newText("phimoe", h, dir)
	if err != nil {
		return nil, err
	}
	return &phiMoe{phi3: &phi3{text: t}}, nil
}

// Params is PhiMoeModel.set_gguf_parameters: Phi3MiniModel's, then the
// used and total expert counts.
func (m *phiMoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.phi3.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, e := range []struct {
		suffix string
		keys   []string
	}{
		{"expert_used_count", []string{"num_experts_per_tok", "num_experts_per_token"}},
		{"expert_count", []string{"num_local_experts", "num_experts"}},
	} {
		v, _, ok := m.h.Find(e.keys...)
		if !ok {
			return nil, &ConfigError{Key: e.keys[0], Value: nil, Msg: "is missing"}
		}
		if err := k.u32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is PhiMoeModel.modify_tensors: block_sparse_moe experts are held
// until their block is complete, then stacked (w1, w2, w3); everything
// else as Phi3MiniModel.
func (m *phiMoe) Modify(in Input, bid int) ([]Output, error) {
	if !strings.Contains(in.Name, "block_sparse_moe.experts") {
		return m.phi3.Modify(in, bid)
	}
	return m.experts.add(&m.text, in, bid)
}

func (m *phiMoe) Finish() error { return m.experts.finish() }
