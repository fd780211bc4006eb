package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newQwen2("qwen2"), "Qwen2Model", "Qwen2ForCausalLM", "Qwen2AudioForConditionalGeneration")
	register(newQwen2("qwen3"), "Qwen3ForCausalLM", "Qwen3Model")
	register(newQwenMoe("qwen2moe"), "Qwen2MoeForCausalLM")
	register(newQwenMoe("qwen3moe"), "Qwen3MoeForCausalLM")
}

// qwen2 is Qwen2Model and Qwen3Model (conversion/qwen.py): generic
// tensors, sentencepiece-or-gpt2 vocabulary, sentence-transformers pooling.
type qwen2 struct {
	text
}

func newQwen2(ggufArch string) Constructor {
	return func(h HParams, dir string) (Model, error) {
		t, err := newText(ggufArch, h, dir)
		if err != nil {
			return nil, err
		}
		if ggufArch == "qwen3" && strings.Contains(strings.ToLower(t.hfArch), "sequenceclassification") {
			return nil, fmt.Errorf("arch: Qwen3 rerankers (%s) are not supported", t.hfArch)
		}
		return &qwen2{text: t}, nil
	}
}

func (m *qwen2) Vocab() VocabKind { return VocabQwen2 }

func (m *qwen2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

func (m *qwen2) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	if m.hfArch == "Qwen2Model" {
		name = "model." + name
	}
	return m.mapped(in, name, bid, nil)
}

// mapped is ModelBase.modify_tensors: the tensor under its mapped name.
func (t *text) mapped(in Input, name string, bid int, build func([][]float32) ([]float32, error)) ([]Output, error) {
	_, gname, ok := t.names.Lookup(name)
	if !ok {
		return nil, t.unmapped(in.Name, bid)
	}
	out := identity(in, gname, bid)
	out.Build = build
	return []Output{out}, nil
}

// qwenMoe is Qwen2MoeModel and Qwen3MoeModel: experts stacked per block
// (or split from transformers' fused gate_up_proj), expert FFN lengths.
type qwenMoe struct {
	text
	experts *expertStacker
}

func newQwenMoe(ggufArch string) Constructor {
	return func(h HParams, dir string) (Model, error) {
		t, err := newText(ggufArch, h, dir)
		if err != nil {
			return nil, err
		}
		return &qwenMoe{text: t}, nil
	}
}

// Vocab: Qwen2MoeModel (and Qwen3MoeModel after it) keeps
// TextModel.set_vocab, the gpt2 routine.
func (m *qwenMoe) Vocab() VocabKind { return VocabGPT2 }

func (m *qwenMoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.moeParams(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// moeParams is Qwen2MoeModel.set_gguf_parameters: TextModel's keys, then
// the expert and shared-expert feed-forward lengths.
func (m *qwenMoe) moeParams(ft gguf.FileType) (*kv, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{
		{"moe_intermediate_size", "expert_feed_forward_length"},
		{"shared_expert_intermediate_size", "expert_shared_feed_forward_length"},
	} {
		if v, ok := m.h[e.key]; ok && v != nil {
			if err := k.u32(e.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	return k, nil
}

func (m *qwenMoe) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	switch {
	case strings.HasSuffix(name, "mlp.experts.down_proj") || strings.HasSuffix(name, "mlp.experts.down_proj.weight"):
		if err := m.checkFusedExperts(in); err != nil {
			return nil, err
		}
		if !strings.HasSuffix(name, ".weight") {
			name += ".weight"
		}
		return m.mapped(in, name, bid, nil)
	case strings.HasSuffix(name, "mlp.experts.gate_up_proj") || strings.HasSuffix(name, "mlp.experts.gate_up_proj.weight"):
		if err := m.checkFusedExperts(in); err != nil {
			return nil, err
		}
		return m.splitGateUp(in, name, bid)
	case strings.Contains(name, "experts"):
		return m.stack(in, bid)
	}
	return m.mapped(in, name, bid, nil)
}

// stack holds a per-expert tensor (model.layers.N.mlp.experts.X.W.weight)
// until its block is complete, then stacks each of down, gate and up.
func (m *qwenMoe) stack(in Input, bid int) ([]Output, error) {
	n, err := expertCount(m.h, "num_local_experts", "num_experts")
	if err != nil {
		return nil, err
	}
	if m.experts == nil {
		m.experts = newExpertStacker(n, m.blocks, []string{"down_proj", "gate_proj", "up_proj"}, m.names)
	}
	return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%s.weight", bid, wid)
	})
}

// checkFusedExperts checks that a fused 3-D expert tensor holds the
// experts the config counts (expert_count is written from the same keys):
// llama.cpp would load neither more nor fewer.
func (m *qwenMoe) checkFusedExperts(in Input) error {
	n, err := expertCount(m.h, "num_local_experts", "num_experts", "n_routed_experts")
	if err != nil {
		return err
	}
	if len(in.Shape) != 3 || in.Shape[0] != int64(n) {
		return fmt.Errorf("fused expert tensor of shape %v, want [%d, rows, columns] for %d experts", in.Shape, n, n)
	}
	return nil
}

func (m *qwenMoe) Finish() error { return m.experts.finish() }

// splitGateUp splits a fused [experts, 2·n_ff, n_embd] tensor into its
// gate (first half of dim -2) and up halves.
func (m *qwenMoe) splitGateUp(in Input, name string, bid int) ([]Output, error) {
	s := in.Shape
	if len(s) < 3 || s[len(s)-2]%2 != 0 {
		return nil, fmt.Errorf("unexpected gate_up_proj shape %v", s)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".weight"), ".gate_up_proj")
	var outs []Output
	for half, part := range []string{"gate_proj", "up_proj"} {
		o, err := m.mapped(in, base+"."+part+".weight", bid, halfDim2(s, half))
		if err != nil {
			return nil, err
		}
		o[0].Shape = append(append([]int64{}, s[:len(s)-2]...), s[len(s)-2]/2, s[len(s)-1])
		outs = append(outs, o...)
	}
	return outs, nil
}

// halfDim2 selects the first (half 0) or second half of dimension -2.
func halfDim2(shape []int64, half int) func([][]float32) ([]float32, error) {
	rows := shape[len(shape)-2]
	cols := shape[len(shape)-1]
	outer := numel(shape[:len(shape)-2])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		h := rows / 2
		dst := make([]float32, 0, outer*h*cols)
		for o := range outer {
			base := (o*rows + int64(half)*h) * cols
			dst = append(dst, src[base:base+h*cols]...)
		}
		return dst, nil
	}
}
