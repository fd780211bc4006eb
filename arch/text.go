package arch

import (
	"fmt"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// text is the part every text model shares: llama.cpp's TextModel
// (conversion/base.py): the block count, the name map, the rope
// parameters gathered from the config, the generic hyperparameter keys and
// the multimodal filter.
type text struct {
	arch   string
	h      HParams
	dir    string
	hfArch string
	blocks int
	names  *NameMap
	// rope is TextModel.rope_parameters.
	rope map[string]any
}

func newText(arch string, h HParams, dir string) (text, error) {
	n, err := h.MustInt("n_layers", "num_hidden_layers", "n_layer", "num_layers")
	if err != nil {
		return text{}, err
	}
	if n < 0 || n > 1<<16 {
		return text{}, fmt.Errorf("config.json: block count %d out of range", n)
	}
	names, err := NewNameMap(arch, int(n))
	if err != nil {
		return text{}, err
	}
	t := text{arch: arch, h: h, dir: dir, blocks: int(n), names: names}
	if archs, _ := h["architectures"].([]any); len(archs) > 0 {
		t.hfArch, _ = archs[0].(string)
	}
	t.rope = map[string]any{}
	for _, key := range []string{"rope_parameters", "rope_scaling"} {
		if v := h[key]; v != nil {
			if _, ok := v.(map[string]any); !ok {
				// The converter calls .get on it.
				return text{}, &ConfigError{Key: key, Value: v, Msg: "is not an object"}
			}
		}
	}
	src, _ := h["rope_parameters"].(map[string]any)
	if src == nil {
		src, _ = h["rope_scaling"].(map[string]any)
	}
	for k, v := range src {
		t.rope[k] = v
	}
	_, hasFull := t.rope["full_attention"]
	_, hasSliding := t.rope["sliding_attention"]
	if !hasFull && !hasSliding {
		theta, _, okTheta := h.Find("global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base")
		local, _, okLocal := h.Find("local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq")
		partial, _, okPartial := h.Find("partial_rotary_factor", "rope_pct", "rope_percent")
		orig, _, okOrig := h.Find("original_max_position_embeddings")
		if okLocal && local != nil {
			t.rope["sliding_attention"] = map[string]any{"rope_theta": local}
		}
		if _, ok := t.rope["rope_theta"]; !ok && okTheta && theta != nil {
			t.rope["rope_theta"] = theta
		}
		if _, ok := t.rope["rope_type"]; !ok {
			if typ, ok := t.rope["type"]; ok && typ != nil {
				t.rope["rope_type"] = typ
			}
		}
		if _, ok := t.rope["partial_rotary_factor"]; !ok && okPartial && partial != nil {
			t.rope["partial_rotary_factor"] = partial
		}
		if _, ok := t.rope["original_max_position_embeddings"]; !ok && okOrig && orig != nil {
			t.rope["original_max_position_embeddings"] = orig
		}
	}
	return t, nil
}

func (t *text) Arch() string             { return t.arch }
func (t *text) Names() *NameMap          { return t.names }
func (t *text) BlockCount() int          { return t.blocks }
func (t *text) Finish() error            { return nil }
func (t *text) Extra() ([]Output, error) { return nil, nil }

func (t *text) ForceType(*Output, int) (gguf.Type, bool) { return 0, false }

// unmapped is the error for a tensor name the name map does not know,
// which says so when the name's block is past the block count.
func (t *text) unmapped(name string, bid int) error {
	if bid >= t.blocks {
		return fmt.Errorf("can not map tensor %q: block %d, but config.json has %d blocks", name, bid, t.blocks)
	}
	return fmt.Errorf("can not map tensor %q", name)
}

// ropeParams is rope_parameters["full_attention"] or rope_parameters.
func (t *text) ropeParams() map[string]any {
	if full, ok := t.rope["full_attention"].(map[string]any); ok {
		return full
	}
	return t.rope
}

// multimodalPrefixes and multimodalParts are the names TextModel's filter
// drops (vision, audio and projector tensors of multimodal checkpoints).
var (
	multimodalPrefixes = []string{"mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.",
		"sound_encoder.", "sound_projection.", "speech_embeddings."}
	multimodalParts = []string{"visual.", "vision.", "audio.", "talker.", "vision_", "audio_", "token2wav.",
		"code2wav.", "projector.", "pre_mm_projector_norm", "image_newline", "view_seperator", "patch_embed",
		"patch_embedding", "patch_merger.", "patch_merge_mlp.", "model.connector."}
)

// Filter is TextModel.filter_tensors followed by ModelBase's.
func (t *text) Filter(name string) (string, bool) {
	for _, p := range multimodalPrefixes {
		if strings.HasPrefix(name, p) {
			return "", false
		}
	}
	for _, p := range multimodalParts {
		if strings.Contains(name, p) {
			return "", false
		}
	}
	if strings.HasSuffix(name, "e_score_correction_bias") {
		name = strings.Replace(name, "e_score_correction_bias", "e_score_correction.bias", 1)
	}
	name = strings.ReplaceAll(name, "language_model.", "")
	return name, true
}

// kv appends arch-prefixed keys the way gguf-py's add_* methods do.
type kv struct {
	arch string
	l    gguf.KVList
}

func (k *kv) key(suffix string) string { return k.arch + "." + suffix }

func (k *kv) u32(suffix string, v any) error {
	n, err := asInt(v)
	if err != nil || n < 0 || n > 1<<32-1 {
		return fmt.Errorf("%w: %s: %s is not a uint32", ErrConfig, k.key(suffix), describe(v))
	}
	k.l.Set(k.key(suffix), gguf.Uint32(uint32(n)))
	return nil
}

func (k *kv) f32(suffix string, v any) error {
	f, err := asFloat(v)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, k.key(suffix), err)
	}
	if math.IsInf(float64(float32(f)), 0) {
		// struct.pack("<f") refuses a float beyond float32's range.
		return fmt.Errorf("%w: %s: %s is out of float32 range", ErrConfig, k.key(suffix), describe(v))
	}
	k.l.Set(k.key(suffix), gguf.Float32(float32(f)))
	return nil
}

// boolean is an add_* of a bool key.
func (k *kv) boolean(suffix string, v any) error {
	b, ok := v.(bool)
	if !ok {
		return fmt.Errorf("%w: %s: %s is not a boolean", ErrConfig, k.key(suffix), describe(v))
	}
	k.l.Set(k.key(suffix), gguf.Bool(b))
	return nil
}

// i32Array is an add_array of a list of ints: INT32.
func (k *kv) i32Array(suffix string, v any) error {
	if _, ok := v.([]any); !ok {
		return fmt.Errorf("%w: %s: %s is not a list of integers", ErrConfig, k.key(suffix), describe(v))
	}
	return k.u32OrArray(suffix, v)
}

// u32OrArray is add_feed_forward_length / add_head_count: an int, or a
// per-layer list written as an array.
func (k *kv) u32OrArray(suffix string, v any) error {
	if list, ok := v.([]any); ok {
		xs := make([]int32, len(list))
		for i, e := range list {
			n, err := asInt(e)
			if err != nil {
				return fmt.Errorf("%w: %s[%d]: %w", ErrConfig, k.key(suffix), i, err)
			}
			if n != int64(int32(n)) {
				// struct.pack("<i") refuses it.
				return fmt.Errorf("%w: %s[%d]: %d is not an int32", ErrConfig, k.key(suffix), i, n)
			}
			xs[i] = int32(n)
		}
		// gguf-py types an int list by its first element: INT32.
		k.l.Set(k.key(suffix), gguf.Array(xs))
		return nil
	}
	return k.u32(suffix, v)
}

// Params is TextModel.set_gguf_parameters.
func (t *text) params(ft gguf.FileType) (*kv, error) {
	k := &kv{arch: t.arch}
	h := t.h
	if err := k.u32("block_count", t.blocks); err != nil {
		return nil, err
	}
	steps := []struct {
		keys   []string
		suffix string
		add    func(string, any) error
	}{
		{[]string{"max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length"}, "context_length", k.u32},
		{[]string{"hidden_size", "n_embd", "dim"}, "embedding_length", k.u32},
		{[]string{"prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size", "n_inner", "hidden_dim"}, "feed_forward_length", k.u32OrArray},
		{[]string{"num_attention_heads", "n_head", "n_heads"}, "attention.head_count", k.u32OrArray},
		{[]string{"num_key_value_heads", "n_kv_heads"}, "attention.head_count_kv", k.u32OrArray},
	}
	for _, s := range steps {
		if v, _, ok := h.Find(s.keys...); ok && v != nil {
			if err := s.add(s.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	if causal, ok := h.Bool("is_causal"); ok && !causal {
		k.l.Set(k.key("attention.causal"), gguf.Bool(false))
	}
	rp := t.ropeParams()
	if typ, ok := rp["rope_type"].(string); ok {
		factor, hasFactor := rp["factor"]
		hasFactor = hasFactor && factor != nil
		switch {
		case typ == "linear" && hasFactor:
			k.l.Set(k.key("rope.scaling.type"), gguf.String("linear"))
			if err := k.f32("rope.scaling.factor", factor); err != nil {
				return nil, err
			}
		case typ == "yarn" && hasFactor:
			k.l.Set(k.key("rope.scaling.type"), gguf.String("yarn"))
			if err := k.f32("rope.scaling.factor", factor); err != nil {
				return nil, err
			}
			orig, ok := rp["original_max_position_embeddings"]
			if !ok {
				return nil, fmt.Errorf("config.json: yarn rope scaling without original_max_position_embeddings")
			}
			if err := k.u32("rope.scaling.original_context_length", orig); err != nil {
				return nil, err
			}
			for _, e := range []struct {
				keys   []string
				suffix string
			}{
				{[]string{"extrapolation_factor"}, "rope.scaling.yarn_ext_factor"},
				{[]string{"attention_factor", "attn_factor"}, "rope.scaling.yarn_attn_factor"},
				{[]string{"beta_fast"}, "rope.scaling.yarn_beta_fast"},
				{[]string{"beta_slow"}, "rope.scaling.yarn_beta_slow"},
			} {
				for _, key := range e.keys {
					if v, ok := rp[key]; ok && v != nil {
						if err := k.f32(e.suffix, v); err != nil {
							return nil, err
						}
						break
					}
				}
			}
		case typ == "su" || typ == "longrope":
			k.l.Set(k.key("rope.scaling.type"), gguf.String("longrope"))
		}
	}
	if sec, ok := t.rope["mrope_section"].([]any); ok {
		xs := make([]int32, 4)
		for i := 0; i < len(sec) && i < 4; i++ {
			n, err := asInt(sec[i])
			if err == nil && n != int64(int32(n)) {
				err = fmt.Errorf("%d is not an int32", n)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: config.json: mrope_section[%d]: %w", ErrConfig, i, err)
			}
			xs[i] = int32(n)
		}
		k.l.Set(k.key("rope.dimension_sections"), gguf.Array(xs))
	}
	if theta, ok := rp["rope_theta"]; ok && theta != nil {
		if err := k.f32("rope.freq_base", theta); err != nil {
			return nil, err
		}
	}
	if sw, ok := t.rope["sliding_attention"].(map[string]any); ok {
		if theta, ok := sw["rope_theta"]; ok && theta != nil {
			if err := k.f32("rope.freq_base_swa", theta); err != nil {
				return nil, err
			}
		}
	}
	floats := []struct {
		keys   []string
		suffix string
	}{
		{[]string{"rms_norm_eps", "norm_eps"}, "attention.layer_norm_rms_epsilon"},
		{[]string{"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"}, "attention.layer_norm_epsilon"},
	}
	for _, f := range floats {
		if v, _, ok := h.Find(f.keys...); ok && v != nil {
			if err := k.f32(f.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	ints := []struct {
		keys   []string
		suffix string
	}{
		{[]string{"num_local_experts", "num_experts", "n_routed_experts"}, "expert_count"},
		{[]string{"num_experts_per_tok", "num_experts_per_token", "top_k_experts"}, "expert_used_count"},
		{[]string{"n_group"}, "expert_group_count"},
		{[]string{"topk_group"}, "expert_group_used_count"},
	}
	for _, e := range ints {
		if v, _, ok := h.Find(e.keys...); ok && v != nil {
			if err := k.u32(e.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	if v, _, ok := h.Find("score_function", "scoring_func", "score_func", "moe_router_activation", "moe_router_activation_func", "expert_selection_fn"); ok && v != nil {
		gating := map[string]uint32{"softmax": 1, "sigmoid": 2, "sqrtsoftplus": 4} // ExpertGatingFuncType
		s, _ := v.(string)
		g, ok := gating[s]
		if !ok {
			return nil, fmt.Errorf("config.json: unsupported expert score gating function %v", v)
		}
		k.l.Set(k.key("expert_gating_func"), gguf.Uint32(g))
	}
	if hd, ok := h["head_dim"]; ok && hd != nil {
		if err := k.u32("attention.key_length", hd); err != nil {
			return nil, err
		}
		if err := k.u32("attention.value_length", hd); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k, nil
}
