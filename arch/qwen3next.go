package arch

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
)

func init() {
	register(newQwen3Next("qwen3next"), "Qwen3NextForCausalLM")
	register(newQwen3Next("qwen35"), "Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM")
	register(newQwen3Next("qwen35moe"), "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM")
	for _, mt := range []string{"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"} {
		derivedKeys[mt] = append(derivedKeys[mt], deriveIntervalLayerTypes)
	}
}

// qwen3Next is Qwen3NextModel and its Qwen3.5 / Qwen3.5-MoE successors
// Qwen3_5TextModel and Qwen3_5MoeTextModel (conversion/qwen.py): hybrids
// of gated-delta-net linear-attention blocks and gated full-attention
// blocks (per layer_types), Qwen2MoeModel's experts (Qwen3.5 dense has
// none), zero-centred RMS norms stored +1, and the multi-token-prediction
// head (_QwenMtpMixin) written as extra blocks past the config's layers.
// The Qwen3.5 classes (_LinearAttentionVReorderBase) also reorder the
// value heads from grouped-by-key-head to tiled and always write mrope
// sections (_Qwen35MRopeMixin).
type qwen3Next struct {
	qwenMoe
	qwen35 bool
	// layers is config.json's num_hidden_layers, the block count before
	// the MTP blocks (_original_block_count).
	layers int
	types  []string
	// mtp is mtp_num_hidden_layers, or when that is 0 the count of
	// mtp.layers.N tensors (set by IndexTensors).
	mtp int
	// Linear attention sizes: key heads, value heads, key and value head
	// dimensions (only read where a tensor needs them).
	nK, nV, dK, dV int64
}

func newQwen3Next(ggufArch string) Constructor {
	return func(h HParams, dir string) (Model, error) {
		t, err := newText(ggufArch, h, dir)
		if err != nil {
			return nil, err
		}
		m := &qwen3Next{qwenMoe: qwenMoe{text: t}, qwen35: ggufArch != "qwen3next", layers: t.blocks}
		// _QwenMtpMixin reads self.hparams["num_hidden_layers"] itself.
		if _, err := h.MustInt("num_hidden_layers"); err != nil {
			return nil, err
		}
		n, _, err := h.Int("mtp_num_hidden_layers")
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<10 {
			return nil, &ConfigError{Key: "mtp_num_hidden_layers", Value: h["mtp_num_hidden_layers"], Msg: "is out of range"}
		}
		m.mtp = int(n)
		if v, ok := h["layer_types"]; ok && v != nil {
			if m.types, err = layerTypes(h, t.blocks); err != nil {
				return nil, err
			}
		}
		for _, p := range []struct {
			key string
			dst *int64
		}{
			{"linear_num_key_heads", &m.nK}, {"linear_num_value_heads", &m.nV},
			{"linear_key_head_dim", &m.dK}, {"linear_value_head_dim", &m.dV},
		} {
			v, ok, err := h.Int(p.key)
			if err != nil {
				return nil, err
			}
			if ok && (v < 0 || v > 1<<20) {
				return nil, &ConfigError{Key: p.key, Value: h[p.key], Msg: "is out of range"}
			}
			*p.dst = v
		}
		if m.mtp > 0 {
			if err := m.setBlocks(); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
}

// setBlocks is _QwenMtpMixin.__init__: the block count (and so the name
// map) extended by the MTP layers.
func (m *qwen3Next) setBlocks() error {
	m.blocks = m.layers + m.mtp
	names, err := NewNameMap(m.arch, m.blocks)
	if err != nil {
		return err
	}
	m.names = names
	return nil
}

// IndexTensors is _QwenMtpMixin.index_tensors / filter_tensors: a config
// without mtp_num_hidden_layers (Qwen3-Next) counts its MTP layers from
// the checkpoint's mtp.layers.N tensors; the converter asserts there is
// at least one.
func (m *qwen3Next) IndexTensors(names []string) error {
	if m.mtp > 0 {
		return nil
	}
	for _, name := range names {
		name, ok := m.text.Filter(name)
		if !ok {
			continue
		}
		if strings.HasPrefix(name, "model.mtp.") {
			name = strings.TrimPrefix(name, "model.")
		}
		// filter_tensors counts mtp.layers.N.<rest> (four dot-separated
		// parts, N decimal).
		if rest, ok := strings.CutPrefix(name, "mtp.layers."); ok {
			idx, tail, _ := strings.Cut(rest, ".")
			if i, err := strconv.Atoi(idx); err == nil && tail != "" && idx != "" && strings.Trim(idx, "0123456789") == "" && i < 1<<10 {
				m.mtp = max(m.mtp, i+1)
			}
		}
	}
	if m.mtp == 0 {
		// _QwenMtpMixin.__init__: assert self.opt_num_mtp_layers != 0.
		return fmt.Errorf("arch: %s: config.json has no mtp_num_hidden_layers and the checkpoint no mtp.layers.N tensors: llama.cpp's converter fails on such a model (AssertionError) unless run with --no-mtp, which ggufkit does not offer", m.hfArch)
	}
	return m.setBlocks()
}

// Filter is _QwenMtpMixin.filter_tensors: TextModel's filter, then the
// MTP head's tensors renamed to block layers+i (mtp.layers.i.*) and to
// the nextn names of block layers (fc → eh_proj, the pre-fc norms →
// enorm / hnorm, norm → shared_head.norm).
func (m *qwen3Next) Filter(name string) (string, bool) {
	name, ok := m.text.Filter(name)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(name, "model.mtp.") {
		name = strings.TrimPrefix(name, "model.")
	}
	if !strings.HasPrefix(name, "mtp.") {
		return name, true
	}
	parts := strings.SplitN(name, ".", 4)
	if len(parts) == 4 && parts[1] == "layers" && parts[2] != "" && strings.Trim(parts[2], "0123456789") == "" {
		if i, err := strconv.Atoi(parts[2]); err == nil {
			return fmt.Sprintf("model.layers.%d.%s", m.layers+i, parts[3]), true
		}
	}
	remap := map[string]string{"fc": "eh_proj", "pre_fc_norm_embedding": "enorm", "pre_fc_norm_hidden": "hnorm",
		"norm": "shared_head.norm"}
	if len(parts) == 3 {
		if r, ok := remap[parts[1]]; ok {
			return fmt.Sprintf("model.layers.%d.%s.%s", m.layers, r, parts[2]), true
		}
	}
	return name, true
}

// Vocab: TextModel.set_vocab, the gpt2 routine.
func (m *qwen3Next) Vocab() VocabKind { return VocabGPT2 }

// Params is Qwen3NextModel.set_gguf_parameters (after _QwenMtpMixin's and
// Qwen2MoeModel's), then _Qwen35MRopeMixin's default mrope sections.
func (m *qwen3Next) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.moeParams(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	if n := m.blocks - m.layers; n > 0 {
		if err := k.u32("nextn_predict_layers", n); err != nil {
			return nil, err
		}
	}
	for _, e := range []struct{ suffix, key string }{
		{"ssm.conv_kernel", "linear_conv_kernel_dim"},
		{"ssm.state_size", "linear_key_head_dim"},
		{"ssm.group_count", "linear_num_key_heads"},
		{"ssm.time_step_rank", "linear_num_value_heads"},
	} {
		v, ok := h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Value: nil, Msg: "is missing"}
		}
		if err := k.u32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	for _, key := range []string{"linear_value_head_dim", "linear_num_value_heads"} {
		if !isInt(h[key]) {
			return nil, &ConfigError{Key: key, Value: h[key], Msg: "is not an integer"}
		}
	}
	if err := k.u32("ssm.inner_size", m.dV*m.nV); err != nil {
		return nil, err
	}
	if m.types != nil {
		k.l.Set(k.key("attention.recurrent_layers"), gguf.Array(recurrentLayers(m.types, m.blocks)))
	}
	var interval any = 4
	if v, ok := h["full_attention_interval"]; ok {
		interval = v
	}
	if err := k.u32("full_attention_interval", interval); err != nil {
		return nil, err
	}
	rope, err := m.ropeDimensionCount()
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", rope); err != nil {
		return nil, err
	}
	if _, ok := m.rope["mrope_section"]; m.qwen35 && !ok {
		// Qwen3.5 always applies interleaved MRoPE; llama.cpp's loaders
		// require the sections: the upstream default.
		k.l.Set(k.key("rope.dimension_sections"), gguf.Array([]int32{11, 11, 10, 0}))
	}
	return k.l.KVs(), nil
}

// ropeDimensionCount is int(head_dim × partial_rotary_factor), head_dim
// defaulting to hidden_size // num_attention_heads and the factor (from
// the rope parameters) to 0.25.
func (m *qwen3Next) ropeDimensionCount() (int64, error) {
	hd, ok, err := m.h.Int("head_dim")
	if err != nil {
		return 0, err
	}
	if !ok {
		hidden, err := m.h.MustInt("hidden_size")
		if err != nil {
			return 0, err
		}
		heads, err := m.h.MustInt("num_attention_heads")
		if err != nil {
			return 0, err
		}
		if heads <= 0 {
			return 0, &ConfigError{Key: "num_attention_heads", Value: m.h["num_attention_heads"], Msg: "is not a head count"}
		}
		hd = floorDiv(hidden, heads)
	}
	f := 0.25
	if v, ok := m.rope["partial_rotary_factor"]; ok {
		if f, err = asFloat(v); err != nil {
			return 0, &ConfigError{Key: "partial_rotary_factor", Value: v, Msg: "is not a number"}
		}
	}
	r := float64(hd) * f
	if math.IsNaN(r) || r < 0 || r >= 1<<32 {
		return 0, &ConfigError{Key: "partial_rotary_factor", Value: m.rope["partial_rotary_factor"], Msg: "gives no rope dimension count"}
	}
	return int64(r), nil
}

// Modify is _LinearAttentionVReorderBase.modify_tensors (Qwen3.5: value
// heads reordered), then Qwen3NextModel.modify_tensors, then Qwen2MoeModel's.
func (m *qwen3Next) Modify(in Input, bid int) ([]Output, error) {
	if m.qwen35 && m.nK > 0 && m.nV > 0 && m.nK != m.nV && strings.Contains(in.Name, "linear_attn.") {
		return m.reorderV(in, bid)
	}
	return m.modifyNext(in, bid, nil)
}

// reorderV is _LinearAttentionVReorderBase.modify_tensors for a tensor of
// a linear-attention block when there are more value heads than key heads.
func (m *qwen3Next) reorderV(in Input, bid int) ([]Output, error) {
	if m.nV%m.nK != 0 {
		return nil, &ConfigError{Key: "linear_num_value_heads", Value: m.h["linear_num_value_heads"],
			Msg: fmt.Sprintf("is not a multiple of linear_num_key_heads (%d)", m.nK)}
	}
	perK := m.nV / m.nK
	name, s := in.Name, in.Shape
	rowsOf := func(off, n, dim int64) ([]int64, error) {
		if len(s) == 0 || s[0] != off+n || n != m.nK*perK*dim {
			return nil, fmt.Errorf("tensor %q of shape %v: want %d rows after %d for %d value heads of %d", name, s, n, off, m.nV, dim)
		}
		order := make([]int64, 0, s[0])
		for i := range off {
			order = append(order, i)
		}
		for _, r := range vHeadOrder(m.nK, perK, dim) {
			order = append(order, off+r)
		}
		return order, nil
	}
	var order []int64
	var err error
	switch {
	case strings.Contains(name, ".in_proj_qkv."):
		qk := 2 * m.dK * m.nK
		if len(s) > 0 {
			order, err = rowsOf(qk, s[0]-qk, m.dV)
		}
	case strings.Contains(name, ".in_proj_z."):
		order, err = rowsOf(0, m.nV*m.dV, m.dV)
	case strings.Contains(name, ".in_proj_b.") || strings.Contains(name, ".in_proj_a."):
		order, err = rowsOf(0, m.nV, 1)
	case strings.Contains(name, ".A_log") || strings.Contains(name, ".dt_bias") || strings.Contains(name, ".dt_proj"):
		if len(s) != 1 {
			return nil, fmt.Errorf("tensor %q of shape %v: only 1-D %s is supported", name, s, name[strings.LastIndex(name, ".")+1:])
		}
		order, err = rowsOf(0, m.nV, 1)
	case strings.Contains(name, ".conv1d"):
		sq := squeezeAll(s)
		if len(sq) != 2 {
			return nil, fmt.Errorf("tensor %q of shape %v: conv1d weight not [channels, 1, kernel]", name, s)
		}
		qk := 2 * m.dK * m.nK
		ss := s
		s = sq
		order, err = rowsOf(qk, sq[0]-qk, m.dV)
		s = ss
		if err != nil {
			return nil, err
		}
		return m.modifyNext(in, bid, order)
	case strings.Contains(name, ".out_proj."):
		if len(s) != 2 || s[1] != m.nV*m.dV {
			return nil, fmt.Errorf("tensor %q of shape %v: want %d columns", name, s, m.nV*m.dV)
		}
		cols := vHeadOrder(m.nK, perK, m.dV)
		out, err := m.modifyNext(in, bid, nil)
		if err != nil {
			return nil, err
		}
		rows, n := s[0], s[1]
		out[0].Build = func(srcs [][]float32) ([]float32, error) {
			src := srcs[0]
			if int64(len(src)) != rows*n {
				return nil, fmt.Errorf("reorder: %d values for shape %v", len(src), s)
			}
			dst := make([]float32, len(src))
			for r := range rows {
				for c, from := range cols {
					dst[r*n+int64(c)] = src[r*n+from]
				}
			}
			return dst, nil
		}
		return out, nil
	default:
		return m.modifyNext(in, bid, nil)
	}
	if err != nil {
		return nil, err
	}
	return m.modifyNext(in, bid, order)
}

// modifyNext is Qwen3NextModel.modify_tensors on a tensor whose rows are
// first put in order (nil: as stored).
func (m *qwen3Next) modifyNext(in Input, bid int, order []int64) ([]Output, error) {
	name := in.Name
	shape := in.Shape
	var elem func(float32) float32
	switch {
	case strings.HasSuffix(name, ".A_log"):
		elem = negExp(in.DType)
	case strings.HasSuffix(name, ".dt_bias"):
		name = strings.TrimSuffix(name, ".dt_bias") + ".dt_proj.bias"
	case strings.Contains(name, "conv1d"):
		shape = squeezeAll(shape)
	case strings.HasSuffix(name, "norm.weight") && !strings.HasSuffix(name, "linear_attn.norm.weight"):
		// torch adds in the tensor's dtype: F16 stays F16 (see addOne).
		f16 := in.DType == readers.F16
		elem = func(v float32) float32 {
			if f16 {
				return roundF16(v + 1)
			}
			return v + 1
		}
	}
	var outs []Output
	var err error
	if strings.Contains(name, "in_proj_qkvz.weight") {
		if order != nil {
			return nil, fmt.Errorf("tensor %q: unexpected value-head reorder", name)
		}
		outs, err = m.splitQKVZ(in, bid)
	} else {
		in2 := in
		in2.Name = name
		in2.Shape = shape
		outs, err = m.qwenMoe.Modify(in2, bid)
	}
	if err != nil || (order == nil && elem == nil) {
		return outs, err
	}
	if len(outs) != 1 || outs[0].Build != nil {
		return nil, fmt.Errorf("tensor %q: cannot transform a stacked or split tensor", in.Name)
	}
	rowLen := int64(1)
	if len(shape) > 1 {
		rowLen = numel(shape[1:])
	}
	if order != nil {
		outs[0].RowOrder = order
	}
	outs[0].Build = func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		var dst []float32
		if order != nil {
			if int64(len(src)) != int64(len(order))*rowLen {
				return nil, fmt.Errorf("reorder: %d values for shape %v", len(src), shape)
			}
			dst = make([]float32, len(src))
			for o, i := range order {
				copy(dst[int64(o)*rowLen:int64(o+1)*rowLen], src[i*rowLen:(i+1)*rowLen])
			}
		} else {
			dst = append([]float32(nil), src...)
		}
		if elem != nil {
			for i, v := range dst {
				dst[i] = elem(v)
			}
		}
		return dst, nil
	}
	if elem != nil {
		outs[0].RowOrder = nil
	}
	return outs, nil
}

// splitQKVZ is Qwen3NextModel's regrouping of in_proj_qkvz, stored per key
// head as [q, k, v, z] rows: attn_qkv gets every head's q rows, then every
// head's k rows, then every head's v rows; attn_gate every head's z rows.
func (m *qwen3Next) splitQKVZ(in Input, bid int) ([]Output, error) {
	s := in.Shape
	if m.nK <= 0 || m.nV%m.nK != 0 {
		return nil, &ConfigError{Key: "linear_num_value_heads", Value: m.h["linear_num_value_heads"],
			Msg: fmt.Sprintf("is not a multiple of linear_num_key_heads (%d)", m.nK)}
	}
	if _, err := m.h.MustInt("hidden_size"); err != nil {
		return nil, err
	}
	vz := m.nV / m.nK * m.dV
	per := 2*m.dK + 2*vz
	if len(s) != 2 || s[0] != m.nK*per {
		return nil, fmt.Errorf("in_proj_qkvz of shape %v: want %d rows (%d key heads of %d)", s, m.nK*per, m.nK, per)
	}
	var qkv, z []int64
	for _, part := range []struct{ off, n int64 }{{0, m.dK}, {m.dK, m.dK}, {2 * m.dK, vz}} {
		for h := range m.nK {
			for d := range part.n {
				qkv = append(qkv, h*per+part.off+d)
			}
		}
	}
	for h := range m.nK {
		for d := range vz {
			z = append(z, h*per+2*m.dK+vz+d)
		}
	}
	var outs []Output
	for _, p := range []struct {
		kind  string
		order []int64
	}{{"attn_qkv", qkv}, {"attn_gate", z}} {
		o := identity(in, fmt.Sprintf("blk.%d.%s.weight", bid, p.kind), bid)
		o.Shape = []int64{int64(len(p.order)), s[1]}
		o.Build = selectRows(s, p.order)
		outs = append(outs, o)
	}
	return outs, nil
}

// negExp is the converter's A_log transform -torch.exp(x) on float32
// values widened from the tensor's dtype: float64's exp rounded to
// float32, except where torch's float32 kernel (accurate to about an ulp,
// not correctly rounded) gives other bits for a 16-bit input
// (torchNegExpExceptions). For an F32 checkpoint the last bit may differ
// from llama.cpp's (docs/compat.md).
func negExp(dt readers.DType) func(float32) float32 {
	var exc map[uint16]uint32
	switch dt {
	case readers.BF16:
		exc = torchNegExpExceptions["bf16"]
	case readers.F16:
		exc = torchNegExpExceptions["f16"]
	}
	return func(v float32) float32 {
		if exc != nil {
			var key uint16
			if dt == readers.BF16 {
				key = uint16(math.Float32bits(v) >> 16)
			} else {
				key = quantize.FP32ToFP16(v)
			}
			if bits, ok := exc[key]; ok {
				return math.Float32frombits(bits)
			}
		}
		return -float32(math.Exp(float64(v)))
	}
}
