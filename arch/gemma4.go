package arch

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGemma4, "Gemma4ForConditionalGeneration", "Gemma4ForCausalLM")
}

// gemma4 is Gemma4Model (conversion/gemma.py), text only: Gemma3Model's
// conversion with norms stored as used, sliding and full layers with their
// own head dims and rope dimension counts, KV-shared layers, per-layer
// embeddings, the double-wide MLP of the KV-shared layers, and rope_freqs
// factors that leave the unrotated dimensions of the full layers'
// proportional rope in place.
type gemma4 struct {
	gemma
}

func newGemma4(h HParams, dir string) (Model, error) {
	if v := h["use_bidirectional_attention"]; v == "all" {
		return nil, &ConfigError{Key: "use_bidirectional_attention", Value: v, Msg: "is not supported (Gemma4TextConfig halves the sliding window for it)"}
	}
	t, err := newText("gemma4", h, dir)
	if err != nil {
		return nil, err
	}
	return &gemma4{gemma{text: t, version: 3, noNormShift: true}}, nil
}

func (m *gemma4) Vocab() VocabKind { return VocabGemma4 }

// Filter is Gemma4Model.filter_tensors: per_dim_scale and layer_scalar
// parameters, and the fused expert parameters (experts.gate_up_proj,
// experts.down_proj), get a ".weight" suffix (so that the name map knows
// them), then Gemma3Model's filter.
func (m *gemma4) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, "per_dim_scale") || strings.HasSuffix(name, "layer_scalar") {
		name += ".weight"
	}
	if strings.Contains(name, ".experts.") && !hasAnySuffix(name, ".weight", ".weight_scale", ".weight_scale_2", ".input_scale") {
		name += ".weight"
	}
	return m.gemma.Filter(name)
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// Modify is Gemma4Model.modify_tensors: the router's scale vector becomes
// ffn_gate_inp.scale and its per-expert scale ffn_down_exps.scale (the
// scale of each expert's down projection output), both as stored; the
// rest goes through Gemma3Model's.
func (m *gemma4) Modify(in Input, bid int) ([]Output, error) {
	var kind Kind
	switch {
	case strings.HasSuffix(in.Name, "router.scale"):
		kind = KindFFNGateInp
	case strings.Contains(in.Name, ".per_expert_scale"):
		kind = KindFFNDownExp
	default:
		return m.gemma.Modify(in, bid)
	}
	if bid < 0 || bid >= m.blocks {
		return nil, m.unmapped(in.Name, bid)
	}
	name, err := m.names.Format(kind, bid, ".scale")
	if err != nil {
		return nil, err
	}
	return []Output{identity(in, name, bid)}, nil
}

// perLayerConfig returns the first full-attention layer's value of key in
// per_layer_config (Gemma4TextConfig puts global_head_dim and
// num_global_key_value_heads there), scanning the layers in index order,
// unless the hparams name it directly under direct.
func (m *gemma4) perLayerConfig(direct, key string, types []string) (any, error) {
	if v := m.h[direct]; v != nil {
		return v, nil
	}
	plc, ok := m.h["per_layer_config"].(map[string]any)
	if !ok {
		return nil, nil
	}
	idx := make([]int, 0, len(plc))
	byIdx := map[int]map[string]any{}
	for k, v := range plc {
		i, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil {
			return nil, &ConfigError{Key: "per_layer_config", Value: k, Msg: "has a key that is not a layer index"}
		}
		c, _ := v.(map[string]any)
		idx = append(idx, i)
		byIdx[i] = c
	}
	sort.Ints(idx)
	for _, i := range idx {
		if i >= 0 && i < len(types) && types[i] == "full_attention" {
			if v, ok := byIdx[i][key]; ok {
				return v, nil
			}
		}
	}
	return nil, nil
}

// fullHeadDim is the head dim of the full-attention layers.
func (m *gemma4) fullHeadDim(types []string) (int64, error) {
	v, err := m.perLayerConfig("global_head_dim", "head_dim", types)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, &ConfigError{Key: "global_head_dim", Value: nil, Msg: "is missing (and no full-attention layer of per_layer_config has a head_dim)"}
	}
	n, err := asInt(v)
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, &ConfigError{Key: "global_head_dim", Value: v, Msg: "is not a head dim"}
	}
	return n, nil
}

// Params is Gemma4Model.set_gguf_parameters.
func (m *gemma4) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.params3(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	h := m.h
	shared, ok := h["num_kv_shared_layers"]
	if !ok {
		return nil, fmt.Errorf("%w: num_kv_shared_layers is missing", ErrConfig)
	}
	if err := k.u32("attention.shared_kv_layers", shared); err != nil {
		return nil, err
	}
	var nPL any = 0
	if v := h["hidden_size_per_layer_input"]; Truthy(v) {
		nPL = v
	}
	if err := k.u32("embedding_length_per_layer_input", nPL); err != nil {
		return nil, err
	}
	types, err := layerTypes(h, m.blocks)
	if err != nil {
		return nil, err
	}
	swa := slidingPattern(types)
	k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(swa))

	hdFull, err := m.fullHeadDim(types)
	if err != nil {
		return nil, err
	}
	hdSWA, err := h.MustInt("head_dim")
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		suffix string
		v      int64
	}{
		{"attention.key_length", hdFull}, {"attention.value_length", hdFull},
		{"attention.key_length_swa", hdSWA}, {"attention.value_length_swa", hdSWA},
	} {
		if err := k.u32(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	ffExp, _, ok := h.Find("expert_intermediate_size", "moe_intermediate_size")
	if !ok {
		return nil, fmt.Errorf("%w: moe_intermediate_size is missing", ErrConfig)
	}
	if ffExp != nil {
		if err := k.u32("expert_feed_forward_length", ffExp); err != nil {
			return nil, err
		}
	}
	nShared, err := asInt(shared)
	if err != nil {
		return nil, &ConfigError{Key: "num_kv_shared_layers", Value: shared, Msg: "is not an integer"}
	}
	if Truthy(h["use_double_wide_mlp"]) {
		nFF, err := h.MustInt("intermediate_size")
		if err != nil {
			return nil, err
		}
		if 2*nFF != int64(int32(2*nFF)) {
			return nil, &ConfigError{Key: "intermediate_size", Value: nFF, Msg: "is out of int32 range when doubled"}
		}
		first := int64(m.blocks) - nShared
		ff := make([]int32, m.blocks)
		for i := range ff {
			ff[i] = int32(nFF)
			if int64(i) >= first {
				ff[i] = int32(2 * nFF)
			}
		}
		k.l.Set(k.key("feed_forward_length"), gguf.Array(ff))
	}
	kvFull, err := m.perLayerConfig("num_global_key_value_heads", "num_key_value_heads", types)
	if err != nil {
		return nil, err
	}
	if kvSWA := h["num_key_value_heads"]; kvFull != nil && kvSWA != nil {
		arr := make([]any, len(swa))
		for i, s := range swa {
			arr[i] = kvFull
			if s {
				arr[i] = kvSWA
			}
		}
		if err := k.u32OrArray("attention.head_count_kv", arr); err != nil {
			return nil, err
		}
	}
	prf := 1.0
	if v, ok := m.rope["partial_rotary_factor"]; ok {
		if prf, err = asFloat(v); err != nil {
			return nil, &ConfigError{Key: "partial_rotary_factor", Value: v, Msg: "is not a number"}
		}
	}
	if err := k.u32("rope.dimension_count", hdFull); err != nil {
		return nil, err
	}
	rotSWA := math.Trunc(float64(hdSWA) * prf)
	if !(rotSWA >= 0 && rotSWA <= float64(hdSWA)) {
		return nil, &ConfigError{Key: "partial_rotary_factor", Value: prf, Msg: "gives no valid rotary dimension count"}
	}
	if err := k.u32("rope.dimension_count_swa", int64(rotSWA)); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Extra is Gemma4Model.generate_extra_tensors: rope_freqs factors 1 for
// the rotated half-dimensions of the full layers' proportional rope and
// 1e30 (no rotation) for the rest, which keeps the unrotated dimensions in
// place where ggml's neox rope would rotate them.
func (m *gemma4) Extra() ([]Output, error) {
	rp, _ := m.h["rope_parameters"].(map[string]any)
	full, ok := rp["full_attention"].(map[string]any)
	if !ok {
		return nil, &ConfigError{Key: "rope_parameters", Value: m.h["rope_parameters"], Msg: "has no full_attention parameters"}
	}
	if full["rope_type"] != "proportional" {
		return nil, &ConfigError{Key: "rope_parameters.full_attention.rope_type", Value: full["rope_type"], Msg: "is not \"proportional\""}
	}
	types, err := layerTypes(m.h, m.blocks)
	if err != nil {
		return nil, err
	}
	hd, err := m.fullHeadDim(types)
	if err != nil {
		return nil, err
	}
	pv, ok := full["partial_rotary_factor"]
	if !ok {
		return nil, &ConfigError{Key: "rope_parameters.full_attention.partial_rotary_factor", Value: nil, Msg: "is missing"}
	}
	prf, err := asFloat(pv)
	if err != nil {
		return nil, &ConfigError{Key: "rope_parameters.full_attention.partial_rotary_factor", Value: pv, Msg: "is not a number"}
	}
	rot := math.Trunc(float64(hd) * prf / 2)
	half := hd / 2
	if !(rot >= 0 && rot <= float64(half)) {
		return nil, &ConfigError{Key: "rope_parameters.full_attention.partial_rotary_factor", Value: pv, Msg: fmt.Sprintf("gives %g rotary pairs of %d", rot, half)}
	}
	f := make([]float32, half)
	for i := range f {
		f[i] = 1
		if i >= int(rot) {
			f[i] = 1e30
		}
	}
	name := "rope_freqs.weight"
	return []Output{{Name: name, Shape: []int64{int64(len(f))}, Data: f, HFName: name, Bid: -1}}, nil
}
