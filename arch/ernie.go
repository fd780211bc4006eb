package arch

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newErnie4_5, "Ernie4_5_ForCausalLM", "Ernie4_5ForCausalLM")
	register(newErnie4_5Moe, "Ernie4_5_MoeForCausalLM")
	// Ernie4_5Config.__post_init__: num_key_value_heads = heads and
	// head_dim = hidden_size // heads when None (the defaults are numbers,
	// so only an explicit null is replaced).
	derivedKeys["ernie4_5"] = append(derivedKeys["ernie4_5"], deriveKVHeads, deriveHeadDim)
}

// ernie4_5 is Ernie4_5Model (conversion/ernie.py): TextModel's parameters
// and names, the remote-code checkpoints' "ernie." prefix made "model.",
// their fused qkv_proj and up_gate_proj split apart.
type ernie4_5 struct {
	text
}

func newErnie4_5(h HParams, dir string) (Model, error) {
	t, err := newText("ernie4_5", h, dir)
	if err != nil {
		return nil, err
	}
	return &ernie4_5{text: t}, nil
}

func (m *ernie4_5) Vocab() VocabKind { return VocabErnie4_5 }

func (m *ernie4_5) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is Ernie4_5Model.filter_tensors: "ernie." becomes "model.", then
// TextModel's filter.
func (m *ernie4_5) Filter(name string) (string, bool) {
	return m.text.Filter(strings.ReplaceAll(name, "ernie.", "model."))
}

// Modify is Ernie4_5Model.modify_tensors.
func (m *ernie4_5) Modify(in Input, bid int) ([]Output, error) {
	return ernieSplit(&m.text, in, bid)
}

// ernieSplit is Ernie4_5Model.modify_tensors: a fused qkv_proj
// ([(heads + 2·kv heads)·head_dim, hidden]) split into q, k and v rows, a
// fused up_gate_proj split into its gate (first half of the rows) and up
// halves, written gate then up; anything else under its mapped name.
func ernieSplit(t *text, in Input, bid int) ([]Output, error) {
	var names []string
	var sizes []int64
	fused := strings.Contains(in.Name, "qkv_proj") || strings.Contains(in.Name, "up_gate_proj")
	if fused && len(in.Shape) == 0 {
		return nil, fmt.Errorf("tensor %q: a scalar cannot be split", in.Name)
	}
	switch {
	case strings.Contains(in.Name, "qkv_proj"):
		nHead, err := t.h.MustInt("num_attention_heads")
		if err != nil {
			return nil, err
		}
		nKV, err := t.h.MustInt("num_key_value_heads")
		if err != nil {
			return nil, err
		}
		hd, ok, err := t.h.Int("head_dim")
		if err != nil {
			return nil, err
		}
		if !ok {
			hidden, err := t.h.MustInt("hidden_size")
			if err != nil {
				return nil, err
			}
			if nHead <= 0 {
				return nil, &ConfigError{Key: "num_attention_heads", Value: t.h["num_attention_heads"], Msg: "is not a positive head count"}
			}
			hd = hidden / nHead
		}
		for _, p := range []string{"q_proj", "k_proj", "v_proj"} {
			names = append(names, strings.Replace(in.Name, "qkv_proj.weight", p+".weight", 1))
		}
		sizes = []int64{nHead * hd, nKV * hd, nKV * hd}
	case strings.Contains(in.Name, "up_gate_proj"):
		half := in.Shape[0] / 2
		for _, p := range []string{"gate_proj", "up_proj"} {
			names = append(names, strings.Replace(in.Name, "up_gate_proj.weight", p+".weight", 1))
		}
		// torch.split(half) of an odd count gives a third piece, which the
		// two-name unpacking refuses: the sizes must add up below.
		sizes = []int64{half, half}
	default:
		return t.mapped(in, in.Name, bid, nil)
	}
	var total int64
	for _, s := range sizes {
		if s < 0 {
			return nil, fmt.Errorf("tensor %q: negative split size %v", in.Name, sizes)
		}
		total += s
	}
	if total != in.Shape[0] {
		// torch.split with sizes that do not add up to the dimension fails.
		return nil, fmt.Errorf("tensor %q of shape %v cannot be split into rows %v", in.Name, in.Shape, sizes)
	}
	var outs []Output
	var r0 int64
	for i, name := range names {
		o, err := t.mapped(in, name, bid, rowRange(in.Shape, r0, r0+sizes[i]))
		if err != nil {
			return nil, err
		}
		o[0].Shape = append([]int64{sizes[i]}, in.Shape[1:]...)
		o[0].HFName = name
		outs = append(outs, o...)
		r0 += sizes[i]
	}
	return outs, nil
}

// rowRange selects rows [r0, r1) along the first dimension.
func rowRange(shape []int64, r0, r1 int64) func([][]float32) ([]float32, error) {
	rowLen := numel(shape[1:])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != numel(shape) {
			return nil, fmt.Errorf("row range: %d values for shape %v", len(src), shape)
		}
		return append([]float32(nil), src[r0*rowLen:r1*rowLen]...), nil
	}
}

// ernie4_5Moe is Ernie4_5MoeModel: Ernie4_5Model with routed experts
// stacked per block (gate, up, down), the expert hyperparameters, and the
// multi-token-prediction tensors dropped.
type ernie4_5Moe struct {
	ernie4_5
	experts mlpExperts
}

func newErnie4_5Moe(h HParams, dir string) (Model, error) {
	t, err := newText("ernie4_5-moe", h, dir)
	if err != nil {
		return nil, err
	}
	return &ernie4_5Moe{ernie4_5: ernie4_5{text: t}, experts: mlpExperts{wids: []string{"gate_proj", "up_proj", "down_proj"}}}, nil
}

// Params is Ernie4_5MoeModel.set_gguf_parameters.
func (m *ernie4_5Moe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	for _, e := range []struct{ key, suffix string }{
		{"moe_num_experts", "expert_count"},
		{"moe_k", "expert_used_count"},
		{"moe_layer_interval", "interleave_moe_layer_step"},
		{"moe_layer_start_index", "leading_dense_block_count"},
	} {
		v, ok := h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Value: nil, Msg: "is missing"}
		}
		if err := k.u32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	if v := h["moe_intermediate_size"]; v != nil {
		if err := k.u32("expert_feed_forward_length", v); err != nil {
			return nil, err
		}
	}
	if v := h["moe_num_shared_experts"]; v != nil {
		if err := k.u32("expert_shared_count", v); err != nil {
			return nil, err
		}
		n, _ := asInt(v)
		ff, kvh := h["intermediate_size"], h["num_key_value_heads"]
		if n > 0 && ff != nil && kvh != nil {
			// intermediate_size // num_key_value_heads, as the converter
			// computes it (floor division of two integers).
			a, err1 := asInt(ff)
			b, err2 := asInt(kvh)
			if err1 != nil || err2 != nil || !isInt(ff) || !isInt(kvh) || b <= 0 || a < 0 {
				return nil, &ConfigError{Key: "intermediate_size", Value: ff, Msg: fmt.Sprintf("cannot be divided by num_key_value_heads (%s)", describe(kvh))}
			}
			if err := k.u32("expert_shared_feed_forward_length", a/b); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// ernieMTP matches the multi-token-prediction tensors Ernie4_5MoeModel's
// filter drops (re.match: anchored at the start, "." any character).
var ernieMTP = regexp.MustCompile(`^model.(mtp_block|mtp_emb_norm|mtp_hidden_norm|mtp_linear_proj).(\d+)`)

// Filter is Ernie4_5MoeModel.filter_tensors: the MTP tensors dropped (on
// the name before the "ernie." rename), then Ernie4_5Model's.
func (m *ernie4_5Moe) Filter(name string) (string, bool) {
	if ernieMTP.MatchString(name) {
		return "", false
	}
	return m.ernie4_5.Filter(name)
}

// Modify is Ernie4_5MoeModel.modify_tensors: "mlp.experts" tensors held
// until their block is complete, then stacked and passed through
// Ernie4_5Model's split; everything else mapped as it is (no split).
func (m *ernie4_5Moe) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "mlp.experts") {
		return m.experts.add(&m.text, in, bid, "moe_num_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *ernie4_5Moe) Finish() error { return m.experts.finish() }
