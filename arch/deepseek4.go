package arch

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

func init() {
	register(newDeepseek4, "DeepseekV4ForCausalLM")
}

// The chat templates DeepseekV4Model adds by default, read from llama.cpp's
// models/templates (0c1e570) and taken here as data: the 0731 one when the
// model folder's name says "0731".
var (
	//go:embed templates/deepseek-ai-DeepSeek-V4.jinja
	deepseek4Template string
	//go:embed templates/deepseek-ai-DeepSeek-V4-Flash-0731.jinja
	deepseek4Template0731 string
)

// deepseek4FP8Block is the block DeepseekV4Model.dequant_model scales by
// (fixed, whatever quantization_config says).
const deepseek4FP8Block = 128

// deepseek4 is DeepseekV4Model (conversion/deepseek.py, GGUF arch
// deepseek4), for DeepSeek's own checkpoint layout (embed.weight,
// layers.N.attn.wq_a.weight, …): its FP8 projections (with F8_E8M0 block
// scales named ….scale) dequantized and written as Q8_0, the FP4 routed
// experts (I8 codes and F8_E8M0 scales) repacked into MXFP4 as they are,
// the hash-routing tables as I32, BF16 matrices kept in BF16 and F32
// tensors in F32 whatever the outtype; the MTP block skipped (no --mtp).
// The file type is MXFP4_MOE.
type deepseek4 struct {
	text
	// inputs are the filtered inputs by name (from ExtraFrom); fp8 the
	// scale of every dequantized weight, by the weight's name.
	inputs map[string]Input
	fp8    map[string]Input
	// nHash is num_hash_layers.
	nHash int
}

func newDeepseek4(h HParams, dir string) (Model, error) {
	t, err := newText("deepseek4", h, dir)
	if err != nil {
		return nil, err
	}
	n, err := h.MustInt("num_hash_layers")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(t.blocks) {
		return nil, &ConfigError{Key: "num_hash_layers", Value: h["num_hash_layers"], Msg: "is not a layer count of the model"}
	}
	return &deepseek4{text: t, nHash: int(n)}, nil
}

// OwnsQuantization is DeepseekV4Model.dequant_model: the model dequantizes
// its FP8 weights itself (E8M0 scales named .scale) and keeps the FP4
// experts, whatever quantization_config says.
func (m *deepseek4) OwnsQuantization() bool { return true }

// Vocab is TextModel.set_vocab: the gpt2 routine.
func (m *deepseek4) Vocab() VocabKind { return VocabGPT2 }

// EarlyKVs is the default chat template DeepseekV4Model.__init__ adds
// right after general.architecture (a tokenizer's own replaces it in
// place).
func (m *deepseek4) EarlyKVs() []gguf.KV {
	tmpl := deepseek4Template
	if strings.Contains(filepath.Base(m.dir), "0731") {
		tmpl = deepseek4Template0731
	}
	return []gguf.KV{{Key: "tokenizer.chat_template", Value: gguf.String(tmpl)}}
}

// Filter is DeepseekV4Model.filter_tensors: the vision aligner and image
// tensors and the multi-token-prediction block (mtp.*) dropped, then
// TextModel's filter.
func (m *deepseek4) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "aligner.") || strings.HasPrefix(name, "image_") || strings.HasPrefix(name, "mtp.") {
		return "", false
	}
	return m.text.Filter(name)
}

// need is hparams[key] of a key the converter reads without a default.
func (m *deepseek4) need(key string) (any, error) {
	v, ok := m.h[key]
	if !ok {
		return nil, &ConfigError{Key: key, Msg: "is missing (DeepseekV4Model reads it)"}
	}
	return v, nil
}

// Params is DeepseekV4Model.set_gguf_parameters: TextModel's, with the
// file type MXFP4_MOE (its prepare_tensors sets it for every outtype),
// then the DeepSeek-V4 keys.
func (m *deepseek4) Params(gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(gguf.FileTypeMXFP4_MOE)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct {
		key, suffix string
		add         func(string, any) error
	}{
		{"qk_rope_head_dim", "rope.dimension_count", k.u32},
		{"q_lora_rank", "attention.q_lora_rank", k.u32},
		{"sliding_window", "attention.sliding_window", k.u32},
		{"moe_intermediate_size", "expert_feed_forward_length", k.u32},
		{"n_shared_experts", "expert_shared_count", k.u32},
		{"routed_scaling_factor", "expert_weights_scale", k.f32},
		{"norm_topk_prob", "expert_weights_norm", k.boolean},
		{"swiglu_limit", "swiglu_clamp_exp", m.perBlock(k)},
		{"swiglu_limit", "swiglu_clamp_shexp", m.perBlock(k)},
		{"index_n_heads", "attention.indexer.head_count", k.u32},
		{"index_head_dim", "attention.indexer.key_length", k.u32},
		{"index_topk", "attention.indexer.top_k", k.u32},
		{"o_groups", "attention.output_group_count", k.u32},
		{"o_lora_rank", "attention.output_lora_rank", k.u32},
		{"compress_ratios", "attention.compress_ratios", k.i32Array},
		{"compress_rope_theta", "attention.compress_rope_freq_base", k.f32},
		{"hc_mult", "hyper_connection.count", k.u32},
		{"hc_sinkhorn_iters", "hyper_connection.sinkhorn_iterations", k.u32},
		{"hc_eps", "hyper_connection.epsilon", k.f32},
		{"num_hash_layers", "hash_layer_count", k.u32},
	} {
		v, err := m.need(e.key)
		if err != nil {
			return nil, err
		}
		if err := e.add(e.suffix, v); err != nil {
			return nil, err
		}
	}
	hidden, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	hc, err := m.h.MustInt("hc_mult")
	if err != nil {
		return nil, err
	}
	if err := k.u32("embedding_length_out", hidden*hc); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// perBlock writes [v] * block_count: an array of FLOAT32, or of INT32 when
// v is an integer literal (gguf-py types a list by its first element).
func (m *deepseek4) perBlock(k *kv) func(string, any) error {
	return func(suffix string, v any) error {
		if n, ok := v.(json.Number); ok && !strings.ContainsAny(string(n), ".eE") {
			x, err := asInt(v)
			if err != nil || x != int64(int32(x)) {
				return fmt.Errorf("%w: %s: %s is not an int32", ErrConfig, k.key(suffix), describe(v))
			}
			k.l.Set(k.key(suffix), gguf.Array(slices.Repeat([]int32{int32(x)}, m.blocks)))
			return nil
		}
		f, err := asFloat(v)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, k.key(suffix), err)
		}
		k.l.Set(k.key(suffix), gguf.Array(slices.Repeat([]float32{float32(f)}, m.blocks)))
		return nil
	}
}

// deepseek4Expert matches a routed expert's tensors, which ExtraFrom
// stacks (modify_tensors' first pattern).
var deepseek4Expert = regexp.MustCompile(`^layers\.\d+\.ffn\.experts\.\d+\.w[123]\.(weight|scale)$`)

// deepseek4Layer is _map_dsv4_tensor_name's r"layers\.(\d+)\.(.+)$".
var deepseek4Layer = regexp.MustCompile(`^layers\.(\d+)\.(.+)$`)

// deepseek4Root and deepseek4Block are _map_dsv4_tensor_name's tables: the
// checkpoint name (in a block: after "layers.N.") → the GGUF name (in a
// block: after "blk.N."). The nextn.* entries, reached only with --mtp,
// are left out.
var (
	deepseek4Root = map[string]string{
		"embed.weight":  "token_embd.weight",
		"norm.weight":   "output_norm.weight",
		"head.weight":   "output.weight",
		"hc_head_fn":    "output_hc_fn.weight",
		"hc_head_base":  "output_hc_base.weight",
		"hc_head_scale": "output_hc_scale.weight",
	}
	deepseek4Block = map[string]string{
		"hc_attn_fn":                           "hc_attn_fn.weight",
		"hc_attn_base":                         "hc_attn_base.weight",
		"hc_attn_scale":                        "hc_attn_scale.weight",
		"hc_ffn_fn":                            "hc_ffn_fn.weight",
		"hc_ffn_base":                          "hc_ffn_base.weight",
		"hc_ffn_scale":                         "hc_ffn_scale.weight",
		"attn.attn_sink":                       "attn_sinks.weight",
		"attn.wq_a.weight":                     "attn_q_a.weight",
		"attn.wq_b.weight":                     "attn_q_b.weight",
		"attn.q_norm.weight":                   "attn_q_a_norm.weight",
		"attn.wkv.weight":                      "attn_kv.weight",
		"attn.kv_norm.weight":                  "attn_kv_a_norm.weight",
		"attn.wo_a.weight":                     "attn_output_a.weight",
		"attn.wo_b.weight":                     "attn_output_b.weight",
		"attn.compressor.ape":                  "attn_compressor_ape.weight",
		"attn.compressor.wkv.weight":           "attn_compressor_kv.weight",
		"attn.compressor.wgate.weight":         "attn_compressor_gate.weight",
		"attn.compressor.norm.weight":          "attn_compressor_norm.weight",
		"attn.indexer.wq_b.weight":             "indexer.attn_q_b.weight",
		"attn.indexer.weights_proj.weight":     "indexer.proj.weight",
		"attn.indexer.compressor.ape":          "indexer_compressor_ape.weight",
		"attn.indexer.compressor.wkv.weight":   "indexer_compressor_kv.weight",
		"attn.indexer.compressor.wgate.weight": "indexer_compressor_gate.weight",
		"attn.indexer.compressor.norm.weight":  "indexer_compressor_norm.weight",
		"attn_norm.weight":                     "attn_norm.weight",
		"ffn_norm.weight":                      "ffn_norm.weight",
		"ffn.gate.weight":                      "ffn_gate_inp.weight",
		"ffn.gate.bias":                        "exp_probs_b.bias",
		"ffn.gate.bias_vl":                     "exp_probs_b_vl.bias",
		"ffn.gate.tid2eid":                     "ffn_gate_tid2eid.weight",
		"ffn.shared_experts.w1.weight":         "ffn_gate_shexp.weight",
		"ffn.shared_experts.w2.weight":         "ffn_down_shexp.weight",
		"ffn.shared_experts.w3.weight":         "ffn_up_shexp.weight",
	}
)

// ggufName is _map_dsv4_tensor_name with format_tensor_name.
func (m *deepseek4) ggufName(name string, bid int) (string, error) {
	if g, ok := deepseek4Root[name]; ok {
		return g, nil
	}
	sm := deepseek4Layer.FindStringSubmatch(name)
	if sm == nil {
		return "", fmt.Errorf("unsupported DeepSeek-V4 tensor %q", name)
	}
	if layer, err := strconv.Atoi(sm[1]); err != nil || layer != bid {
		return "", fmt.Errorf("tensor %q: block %d but its name says layer %s", name, bid, sm[1])
	}
	if bid >= m.blocks {
		return "", m.unmapped(name, bid)
	}
	g, ok := deepseek4Block[sm[2]]
	if !ok {
		return "", fmt.Errorf("unsupported DeepSeek-V4 tensor %q", name)
	}
	return "blk." + sm[1] + "." + g, nil
}

// ExtraFrom is DeepseekV4Model.dequant_model's pairing and its
// generate_extra_tensors: every ….scale beside an F8_E4M3/F8_E5M2 ….weight
// makes the weight dequantized (Modify); then the hash layers' gate.tid2eid
// tables as I32, then per block the routed experts' w1, w2, w3 (gate,
// down, up) stacked and repacked into MXFP4.
func (m *deepseek4) ExtraFrom(inputs []Input) ([]Output, error) {
	m.inputs = make(map[string]Input, len(inputs))
	for _, in := range inputs {
		m.inputs[in.Name] = in
	}
	m.fp8 = map[string]Input{}
	for _, in := range inputs {
		base, ok := strings.CutSuffix(in.Name, ".scale")
		if !ok {
			continue
		}
		w, ok := m.inputs[base+".weight"]
		if !ok || w.DType != readers.F8E4M3 && w.DType != readers.F8E5M2 {
			continue
		}
		m.fp8[w.Name] = in
	}
	var outs []Output
	for bid := range m.nHash {
		name := fmt.Sprintf("layers.%d.ffn.gate.tid2eid", bid)
		in, ok := m.inputs[name]
		if !ok {
			return nil, fmt.Errorf("missing hash routing tensor %q", name)
		}
		o, err := int32Table(in, fmt.Sprintf("blk.%d.ffn_gate_tid2eid.weight", bid), bid)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	nExp, err := m.h.MustInt("n_routed_experts")
	if err != nil {
		return nil, err
	}
	if nExp <= 0 || nExp > 1<<16 {
		return nil, &ConfigError{Key: "n_routed_experts", Value: m.h["n_routed_experts"], Msg: "is not an expert count"}
	}
	for bid := range m.blocks {
		for _, p := range []struct{ proj, name string }{{"w1", "ffn_gate_exps"}, {"w2", "ffn_down_exps"}, {"w3", "ffn_up_exps"}} {
			o, err := m.stackFP4(bid, int(nExp), p.proj, fmt.Sprintf("blk.%d.%s.weight", bid, p.name))
			if err != nil {
				return nil, err
			}
			outs = append(outs, o)
		}
	}
	return outs, nil
}

// int32Table is a table of integers written as I32 (torch's .to(int32),
// which keeps the low 32 bits of an I64).
func int32Table(in Input, name string, bid int) (Output, error) {
	size := in.DType.Size()
	if in.DType != readers.I64 && in.DType != readers.I32 {
		return Output{}, fmt.Errorf("tensor %q is %s, want an integer table (I64 or I32)", in.Source, in.DType)
	}
	n := numel(in.Shape)
	return Output{
		Name: name, Shape: slices.Clone(in.Shape), Sources: []Input{in}, HFName: in.Name, Bid: bid,
		PackedType: gguf.I32,
		Packed: func(srcs [][]byte) ([]byte, error) {
			if len(srcs) != 1 || int64(len(srcs[0])) != n*int64(size) {
				return nil, fmt.Errorf("tensor %q: %d bytes for %d values", in.Source, len(srcs[0]), n)
			}
			out := make([]byte, 4*n)
			for i := range n {
				copy(out[4*i:4*i+4], srcs[0][int64(size)*i:])
			}
			return out, nil
		},
	}, nil
}

// stackFP4 is _write_mxfp4_expert_tensor: the experts' proj weights (two
// E2M1 codes a byte, [rows, cols/2]) and their E8M0 scales
// ([rows, cols/32]) repacked by repack_mxfp4_blocks into one
// [experts, rows, cols] MXFP4 tensor.
func (m *deepseek4) stackFP4(bid, nExp int, proj, name string) (Output, error) {
	var srcs []Input
	var rows, cols int64
	for e := range nExp {
		wn := fmt.Sprintf("layers.%d.ffn.experts.%d.%s.weight", bid, e, proj)
		sn := fmt.Sprintf("layers.%d.ffn.experts.%d.%s.scale", bid, e, proj)
		w, okW := m.inputs[wn]
		s, okS := m.inputs[sn]
		if !okW || !okS {
			return Output{}, fmt.Errorf("missing routed expert tensors for %q", wn)
		}
		if w.DType.Size() != 1 || s.DType.Size() != 1 {
			return Output{}, fmt.Errorf("routed expert %q (%s) and its scale (%s): want byte tensors (packed FP4 codes, E8M0 exponents)", wn, w.DType, s.DType)
		}
		if len(w.Shape) != 2 || w.Shape[0] <= 0 || w.Shape[1] <= 0 {
			return Output{}, fmt.Errorf("routed expert %q has shape %v, want [rows, cols/2]", wn, w.Shape)
		}
		r, c := w.Shape[0], w.Shape[1]*2
		if c%mxfp4BlockValues != 0 {
			return Output{}, fmt.Errorf("routed expert %q: MXFP4 source row has %d values, expected a multiple of 32", wn, c)
		}
		if !slices.Equal(s.Shape, []int64{r, c / mxfp4BlockValues}) {
			return Output{}, fmt.Errorf("MXFP4 scale %q has shape %v, does not match [%d %d]", sn, s.Shape, r, c/mxfp4BlockValues)
		}
		if e == 0 {
			rows, cols = r, c
		} else if r != rows || c != cols {
			return Output{}, fmt.Errorf("routed expert %q has shape %v, expert 0's is [%d %d]", wn, w.Shape, rows, cols/2)
		}
		srcs = append(srcs, w, s)
	}
	nb := cols / mxfp4BlockValues
	return Output{
		Name: name, Shape: []int64{int64(nExp), rows, cols}, Sources: srcs, HFName: srcs[0].Name, Bid: bid,
		PackedType: gguf.MXFP4,
		Packed: func(data [][]byte) ([]byte, error) {
			if len(data) != 2*nExp {
				return nil, fmt.Errorf("MXFP4 repack of %s: %d sources", name, len(data))
			}
			out := make([]byte, 0, int64(nExp)*rows*nb*(1+mxfp4BlockBytes))
			for e := range nExp {
				codes, exps := data[2*e], data[2*e+1]
				if int64(len(codes)) != rows*nb*mxfp4BlockBytes || int64(len(exps)) != rows*nb {
					return nil, fmt.Errorf("MXFP4 repack of %q: %d code bytes and %d scales", srcs[2*e].Source, len(codes), len(exps))
				}
				for blk := range rows * nb {
					out = appendMXFP4Block(out, exps[blk], codes[blk*mxfp4BlockBytes:(blk+1)*mxfp4BlockBytes])
				}
			}
			return out, nil
		},
	}, nil
}

// Modify is DeepseekV4Model.modify_tensors: routed experts, the hash
// tables and the FP8 scales are done elsewhere (ExtraFrom, the weight's
// output), the hash layers' unused gate.bias dropped, an FP8 weight
// dequantized by its 128×128-block E8M0 scales, every other tensor
// renamed.
func (m *deepseek4) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	if deepseek4Expert.MatchString(name) {
		return nil, nil
	}
	if strings.HasSuffix(name, ".ffn.gate.bias") && bid >= 0 && bid < m.nHash {
		return nil, nil
	}
	if base, ok := strings.CutSuffix(name, ".scale"); ok {
		if _, paired := m.fp8[base+".weight"]; paired {
			return nil, nil
		}
	}
	g, err := m.ggufName(name, bid)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(g, "ffn_gate_tid2eid.weight") {
		return nil, nil
	}
	o := identity(in, g, bid)
	if (in.DType == readers.F8E4M3 || in.DType == readers.F8E5M2) && m.fp8[name].Name == "" {
		// The converter only dequantizes a weight beside its scale; the
		// FP8 codes alone are not the model's values.
		return nil, fmt.Errorf("%w: %s tensor %q has no scale tensor %q", readers.ErrScale, in.DType, in.Source,
			strings.TrimSuffix(in.Source, ".weight")+".scale")
	}
	if s, ok := m.fp8[name]; ok {
		build, err := fp8BlockDequant(in, s, deepseek4FP8Block)
		if err != nil {
			return nil, err
		}
		o.Sources, o.Build = []Input{in, s}, build
	}
	return []Output{o}, nil
}

// fp8BlockDequant is dequant_fp8_weight: weight.float() times its block's
// scale (the scale tensor [ceil(rows/block), ceil(cols/block)]), one
// float32 product per value; a non-finite scale is an error naming its
// block.
func fp8BlockDequant(w, s Input, block int64) (func([][]float32) ([]float32, error), error) {
	if len(w.Shape) != 2 {
		return nil, fmt.Errorf("FP8 weight %q has shape %v, want a matrix", w.Source, w.Shape)
	}
	rows, cols := w.Shape[0], w.Shape[1]
	want := []int64{(rows + block - 1) / block, (cols + block - 1) / block}
	if !slices.Equal(s.Shape, want) {
		return nil, fmt.Errorf("%w: scale tensor %q has shape %v, want %v (blocks of %d×%d) for weight %q of shape %v",
			readers.ErrScale, s.Source, s.Shape, want, block, block, w.Source, w.Shape)
	}
	return func(srcs [][]float32) ([]float32, error) {
		v, sc := srcs[0], srcs[1]
		if int64(len(v)) != rows*cols || int64(len(sc)) != want[0]*want[1] {
			return nil, fmt.Errorf("FP8 weight %q: %d values and %d scales", w.Source, len(v), len(sc))
		}
		for i, x := range sc {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: scale tensor %q: block [%d, %d] is %v", readers.ErrScale, s.Source, int64(i)/want[1], int64(i)%want[1], x)
			}
		}
		out := make([]float32, len(v))
		for r := range rows {
			srow := sc[(r/block)*want[1]:]
			for c := range cols {
				out[r*cols+c] = v[r*cols+c] * srow[c/block]
			}
		}
		return out, nil
	}, nil
}

// ForceType is DeepseekV4Model.tensor_force_quant: a dequantized FP8
// matrix is Q8_0, an F32 tensor F32, a BF16 matrix BF16.
func (m *deepseek4) ForceType(o *Output, nDims int) (gguf.Type, bool) {
	if _, ok := m.fp8[o.HFName]; ok && nDims >= 2 {
		return gguf.Q8_0, true
	}
	if len(o.Sources) == 1 {
		switch dt := o.Sources[0].DType; {
		case dt == readers.F32:
			return gguf.F32, true
		case dt == readers.BF16 && nDims >= 2:
			return gguf.BF16, true
		}
	}
	return 0, false
}
