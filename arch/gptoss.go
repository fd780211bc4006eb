package arch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGptOss, "GptOssForCausalLM")
}

// gptOss is GptOssModel (conversion/gpt_oss.py, GGUF arch gpt-oss):
// TextModel's parameters plus the sliding window and the expert FFN
// length; experts either from the native MXFP4 checkpoint (*_blocks /
// *_scales pairs, repacked and written as MXFP4 before every other
// tensor, as its generate_extra_tensors does) or from a dequantized one
// (fused gate_up_proj [experts, hidden, 2·ff] and down_proj
// [experts, ff, hidden], transposed; gate and up interleaved by row).
type gptOss struct {
	text
	// mxfp4 is quantization_config.quant_method == "mxfp4" (the
	// converter's _is_mxfp4): the file type is then MXFP4_MOE for the
	// float outtypes.
	mxfp4 bool
}

func newGptOss(h HParams, dir string) (Model, error) {
	t, err := newText("gpt-oss", h, dir)
	if err != nil {
		return nil, err
	}
	m := &gptOss{text: t}
	if q := h.Map("quantization_config"); q != nil {
		m.mxfp4 = q["quant_method"] == "mxfp4"
	}
	return m, nil
}

// OwnsQuantization is GptOssModel.dequant_model: an MXFP4 checkpoint's
// experts are repacked by ExtraFrom, not dequantized.
func (m *gptOss) OwnsQuantization() bool { return m.mxfp4 }

// Vocab: GptOssModel.set_vocab is _set_vocab_gpt2.
func (m *gptOss) Vocab() VocabKind { return VocabGPT2 }

// Filter is GptOssModel.filter_tensors: the attention sinks get a
// ".weight" suffix, then TextModel's filter.
func (m *gptOss) Filter(name string) (string, bool) {
	if strings.Contains(name, "sinks") {
		name += ".weight"
	}
	return m.text.Filter(name)
}

// Params is GptOssModel.set_gguf_parameters. An MXFP4 checkpoint converted
// to f32, f16 or bf16 is labelled MXFP4_MOE (ModelBase.prepare_metadata
// changes the file type before the parameters are written).
func (m *gptOss) Params(ft gguf.FileType) ([]gguf.KV, error) {
	if m.mxfp4 && (ft == gguf.FileTypeAllF32 || ft == gguf.FileTypeF16 || ft == gguf.FileTypeBF16) {
		ft = gguf.FileTypeMXFP4_MOE
	}
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	sw, ok := m.h["sliding_window"]
	if !ok {
		return nil, &ConfigError{Key: "sliding_window", Msg: "is missing (GptOssModel writes it)"}
	}
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	ff, ok := m.h["intermediate_size"]
	if !ok {
		return nil, &ConfigError{Key: "intermediate_size", Msg: "is missing (GptOssModel writes it as the expert feed-forward length)"}
	}
	if err := k.u32("expert_feed_forward_length", ff); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// gptOssPacked are the MXFP4 pairs of a gpt-oss checkpoint: the part of
// the name before _blocks / _scales.
var gptOssPacked = []string{"mlp.experts.down_proj", "mlp.experts.gate_up_proj"}

// ExtraFrom is GptOssModel.generate_extra_tensors: every MXFP4 pair, in
// the order of its scales tensor, repacked into ggml MXFP4 (down_proj
// whole, gate_up_proj's even rows as gate and odd rows as up). The
// converter pairs a scales tensor with the last blocks tensor it saw; a
// pair is matched by name here, and a scales or blocks tensor without its
// partner, or of the wrong shape or dtype, is an error naming it.
func (m *gptOss) ExtraFrom(inputs []Input) ([]Output, error) {
	blocks := map[string]Input{}
	used := map[string]bool{}
	for _, in := range inputs {
		for _, p := range gptOssPacked {
			if strings.Contains(in.Name, p+"_blocks") {
				blocks[strings.Replace(in.Name, "_blocks", "", 1)] = in
			}
		}
	}
	var outs []Output
	for _, in := range inputs {
		var base string
		for _, p := range gptOssPacked {
			if strings.Contains(in.Name, p+"_scales") {
				base = p
			}
		}
		if base == "" {
			continue
		}
		key := strings.Replace(in.Name, "_scales", "", 1)
		b, ok := blocks[key]
		if !ok {
			return nil, fmt.Errorf("MXFP4 scales tensor %q has no blocks tensor %q", in.Source, strings.Replace(in.Name, "_scales", "_blocks", 1))
		}
		used[key] = true
		bid := BlockID(in.Name)
		if len(b.Shape) != 4 {
			return nil, fmt.Errorf("MXFP4 blocks tensor %q has shape %v, want [experts, rows, cols/32, 16]", b.Source, b.Shape)
		}
		type part struct {
			from string
			sel  mxfp4Rows
		}
		parts := []part{{"down_proj.weight", mxfp4AllRows}}
		if base == "mlp.experts.gate_up_proj" {
			parts = []part{{"gate_proj.weight", mxfp4EvenRows}, {"up_proj.weight", mxfp4OddRows}}
		}
		for _, p := range parts {
			hf := strings.Replace(in.Name, strings.TrimPrefix(base, "mlp.experts.")+"_scales", p.from, 1)
			_, gname, ok := m.names.Lookup(hf)
			if !ok {
				return nil, m.unmapped(hf, bid)
			}
			o, err := repackMXFP4(gname, bid, b, in, p.sel)
			if err != nil {
				return nil, err
			}
			outs = append(outs, o)
		}
	}
	var left []string
	for key, b := range blocks {
		if !used[key] {
			left = append(left, b.Source)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		return nil, fmt.Errorf("MXFP4 blocks tensor %q has no scales tensor", left[0])
	}
	return outs, nil
}

// Modify is GptOssModel.modify_tensors: MXFP4 pairs are done (ExtraFrom);
// down_proj_bias renamed; gate_up_proj_bias split by column parity into
// the gate and up biases; a dequantized down_proj or gate_up_proj
// transposed (and the latter split by row parity).
func (m *gptOss) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	packed := strings.Contains(name, "_blocks") || strings.Contains(name, "_scales")
	if strings.Contains(name, "down_proj") {
		switch {
		case strings.HasSuffix(name, "_bias"):
			name = strings.Replace(name, "down_proj_bias", "down_proj.bias", 1)
		case !packed:
			if len(in.Shape) < 2 {
				return nil, fmt.Errorf("down_proj of shape %v, want [experts, ff, hidden]", in.Shape)
			}
			o, err := m.mapped(in, strings.Replace(name, "down_proj", "down_proj.weight", 1), bid, nil)
			if err != nil {
				return nil, err
			}
			o[0].Shape, o[0].Build = transposeLast2(in.Shape, -1)
			return o, nil
		default:
			return nil, nil
		}
	}
	if !strings.Contains(name, "gate_up_proj") {
		return m.mapped(in, name, bid, nil)
	}
	switch {
	case strings.HasSuffix(name, "_bias"):
		s := in.Shape
		if len(s) < 1 || s[len(s)-1]%2 != 0 {
			return nil, fmt.Errorf("gate_up_proj_bias of shape %v, want an even last dimension", s)
		}
		var outs []Output
		for i, part := range []string{"gate_proj.bias", "up_proj.bias"} {
			o, err := m.mapped(in, strings.Replace(name, "gate_up_proj_bias", part, 1), bid, columnParity(i))
			if err != nil {
				return nil, err
			}
			o[0].Shape = append(slices.Clone(s[:len(s)-1]), s[len(s)-1]/2)
			outs = append(outs, o...)
		}
		return outs, nil
	case !packed:
		s := in.Shape
		if len(s) != 3 || s[2]%2 != 0 {
			return nil, fmt.Errorf("gate_up_proj of shape %v, want [experts, hidden, 2*ff]", s)
		}
		var outs []Output
		for i, part := range []string{"gate_proj.weight", "up_proj.weight"} {
			o, err := m.mapped(in, strings.Replace(name, "gate_up_proj", part, 1), bid, nil)
			if err != nil {
				return nil, err
			}
			o[0].Shape, o[0].Build = transposeLast2(s, i)
			outs = append(outs, o...)
		}
		return outs, nil
	}
	return nil, nil
}

// transposeLast2 is transpose(-1, -2) of a tensor of shape s, keeping all
// rows of the result (parity -1) or only the even (0) or odd (1) ones
// ([:, ::2, :] / [:, 1::2, :]). It returns the result's shape and values.
func transposeLast2(s []int64, parity int) ([]int64, func([][]float32) ([]float32, error)) {
	rows, cols := s[len(s)-2], s[len(s)-1]
	outer := numel(s[:len(s)-2])
	outRows := cols
	if parity >= 0 {
		outRows = cols / 2
	}
	shape := append(slices.Clone(s[:len(s)-2]), outRows, rows)
	return shape, func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, 0, outer*outRows*rows)
		for o := range outer {
			base := o * rows * cols
			for c := range cols {
				if parity >= 0 && c%2 != int64(parity) {
					continue
				}
				for r := range rows {
					dst = append(dst, src[base+r*cols+c])
				}
			}
		}
		return dst, nil
	}
}

// columnParity selects the even (0) or odd (1) entries of the last
// dimension ([..., ::2] / [..., 1::2]).
func columnParity(parity int) func([][]float32) ([]float32, error) {
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, 0, len(src)/2)
		for i := parity; i < len(src); i += 2 {
			dst = append(dst, src[i])
		}
		return dst, nil
	}
}
