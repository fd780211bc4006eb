package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGraniteMoe, "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM")
	// GraniteMoeConfig / GraniteMoeSharedConfig.__post_init__:
	// num_key_value_heads = num_attention_heads when None.
	derivedKeys["granitemoe"] = append(derivedKeys["granitemoe"], deriveKVHeads)
	derivedKeys["granitemoeshared"] = append(derivedKeys["granitemoeshared"], deriveKVHeads)
}

// graniteMoe is GraniteMoeModel (conversion/granite.py): GraniteModel with
// JetMoe's fused experts (input_linear holds gate and up along dim -2)
// split apart, and an optional shared expert.
type graniteMoe struct{ *granite }

func newGraniteMoe(h HParams, dir string) (Model, error) {
	g, err := newGranite(h, dir)
	if err != nil {
		return nil, err
	}
	gr := g.(*granite)
	gr.arch = "granitemoe"
	names, err := NewNameMap("granitemoe", gr.blocks)
	if err != nil {
		return nil, err
	}
	gr.names = names
	return &graniteMoe{gr}, nil
}

// Params is GraniteMoeModel.set_gguf_parameters: GraniteModel's, then
// shared_intermediate_size (when set and not zero).
func (m *graniteMoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.granite.Params(ft)
	if err != nil {
		return nil, err
	}
	v, ok := m.h["shared_intermediate_size"]
	if !ok || !Truthy(v) {
		return kvs, nil
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	if err := k.u32("expert_shared_feed_forward_length", v); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is GraniteMoeModel.modify_tensors: block_sparse_moe.input_linear
// splits into the experts' gate and up halves (intermediate_size rows
// each), shared_mlp.input_linear into the shared expert's (or, without
// routed experts, the dense FFN's, which granitemoe has no names for);
// everything else as GraniteModel.
func (m *graniteMoe) Modify(in Input, bid int) ([]Output, error) {
	var key string
	var parts [2]string
	switch {
	case strings.HasSuffix(in.Name, "block_sparse_moe.input_linear.weight"):
		key, parts = "intermediate_size", [2]string{"ffn_gate_exps", "ffn_up_exps"}
	case strings.HasSuffix(in.Name, "shared_mlp.input_linear.weight"):
		key, parts = "shared_intermediate_size", [2]string{"ffn_gate_shexp", "ffn_up_shexp"}
		if !Truthy(m.h["num_local_experts"]) {
			parts = [2]string{"ffn_gate", "ffn_up"}
		}
	case !Truthy(m.h["num_local_experts"]) && strings.HasSuffix(in.Name, "shared_mlp.output_linear.weight"):
		return m.split(in, bid, nil, "ffn_down")
	default:
		return m.granite.Modify(in, bid)
	}
	ffn, err := m.h.MustInt(key)
	if err != nil {
		return nil, err
	}
	s := in.Shape
	if len(s) < 2 || ffn <= 0 || s[len(s)-2] != 2*ffn {
		return nil, fmt.Errorf("%s: shape %v, want 2 × %s (%d) rows", in.Name, s, key, ffn)
	}
	var outs []Output
	for half, part := range parts {
		o, err := m.split(in, bid, halfDim2(s, half), part)
		if err != nil {
			return nil, err
		}
		o[0].Shape = append(append([]int64{}, s[:len(s)-2]...), ffn, s[len(s)-1])
		outs = append(outs, o...)
	}
	return outs, nil
}

// split is ModelBase.modify_tensors under the GGUF name
// blk.{bid}.{part}.weight (format_tensor_name).
func (m *granite) split(in Input, bid int, build func([][]float32) ([]float32, error), part string) ([]Output, error) {
	name := fmt.Sprintf("blk.%d.%s.weight", bid, part)
	outs, err := m.mapped(in, name, bid, build)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Name, err)
	}
	outs[0].HFName = name
	return outs, nil
}
