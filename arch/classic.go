package arch

import (
	"fmt"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Older decoders of llama.cpp's converter on the Llama layout, most of them
// remote-code models whose config.json the converter reads as it is:
// MiniCPM and MiniCPM3 (conversion/minicpm.py), Orion (conversion/orion.py),
// PLM (conversion/plm.py), XVERSE (conversion/xverse.py).
func init() {
	register(newXverse, "XverseForCausalLM")
	register(newOrion, "OrionForCausalLM")
	register(newPLM, "PLMForCausalLM")
	register(newMiniCPM, "MiniCPMForCausalLM")
	register(newMiniCPM3, "MiniCPM3ForCausalLM")
	// MiniCPM3Config.__post_init__: num_key_value_heads = heads when None.
	derivedKeys["minicpm3"] = append(derivedKeys["minicpm3"], deriveKVHeads)
}

// VocabXverse is XverseModel.set_vocab: tokenizer.json's full vocabulary
// through AutoTokenizer, typed by the routine's own rules, without scores.
const VocabXverse VocabKind = "xverse"

// mustFloat is hparams[key] as a number: a missing key is the converter's
// KeyError.
func (t *text) mustFloat(key string) (float64, error) {
	f, ok, err := t.h.Float(key)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("config.json: %s is missing", key)
	}
	return f, nil
}

// mappedQK maps a tensor under its GGUF name, Q and K projection weights
// permuted with LlamaModel.permute: Q by nHead heads, K by kHead and
// kHeadKV (kHeadKV 0 is None).
func (t *text) mappedQK(in Input, bid int, nHead, kHead, kHeadKV int64) ([]Output, error) {
	var build func([][]float32) ([]float32, error)
	var order []int64
	var err error
	switch {
	case strings.HasSuffix(in.Name, "q_proj.weight"):
		build, order, err = permuteQK(in.Shape, nHead, nHead)
	case strings.HasSuffix(in.Name, "k_proj.weight"):
		build, order, err = permuteQK(in.Shape, kHead, kHeadKV)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: Q/K permutation: %w", in.Name, err)
	}
	outs, err := t.mapped(in, in.Name, bid, build)
	if err == nil {
		outs[0].RowOrder = order
	}
	return outs, err
}

// minicpm is MiniCPMModel: TextModel's keys plus the embedding, residual
// and logit scales, Q/K permuted like Llama, long-context rope factors.
type minicpm struct{ text }

func newMiniCPM(h HParams, dir string) (Model, error) {
	t, err := newText("minicpm", h, dir)
	return &minicpm{t}, err
}

func (m *minicpm) Vocab() VocabKind { return VocabSentencePiece }

// Params adds embedding_scale (scale_emb), residual_scale (scale_depth /
// √n_layer) and logit_scale (hidden_size / dim_model_base).
func (m *minicpm) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	emb, err := m.mustFloat("scale_emb")
	if err != nil {
		return nil, err
	}
	depth, err := m.mustFloat("scale_depth")
	if err != nil {
		return nil, err
	}
	layers, err := m.mustFloat("num_hidden_layers")
	if err != nil {
		return nil, err
	}
	hidden, err := m.mustFloat("hidden_size")
	if err != nil {
		return nil, err
	}
	base, err := m.mustFloat("dim_model_base")
	if err != nil {
		return nil, err
	}
	if layers <= 0 || base == 0 {
		// Python's division by zero (or a complex power).
		return nil, &ConfigError{Key: "dim_model_base", Value: m.h["dim_model_base"], Msg: fmt.Sprintf("and num_hidden_layers %g give no scales", layers)}
	}
	for _, s := range []struct {
		suffix string
		v      float64
	}{{"embedding_scale", emb}, {"residual_scale", depth / math.Sqrt(layers)}, {"logit_scale", hidden / base}} {
		if err := k.f32(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Extra is generate_extra_tensors: rope_factors_long/short when the rope
// parameters have long or short factors, n_rot/2 values each (n_rot =
// hidden_size // num_attention_heads).
func (m *minicpm) Extra() ([]Output, error) {
	dims, err := hiddenPerHead(m.h)
	if err != nil {
		return nil, err
	}
	return m.longRopeFactors(dims)
}

// longRopeFactors is MiniCPM's and MiniCPM3's check of the rope factors
// (both present when either is non-empty, dims/2 values each) and the
// tensors.
func (t *text) longRopeFactors(dims int64) ([]Output, error) {
	long, short := t.rope["long_factor"], t.rope["short_factor"]
	if !Truthy(long) && !Truthy(short) {
		return nil, nil
	}
	l, okL := long.([]any)
	s, okS := short.([]any)
	if !okL || !okS {
		return nil, fmt.Errorf("config.json: rope scaling needs both long_factor and short_factor lists")
	}
	if len(l) != len(s) || int64(2*len(l)) != dims {
		return nil, fmt.Errorf("config.json: rope long and short factors must have %g values each, have %d and %d", float64(dims)/2, len(l), len(s))
	}
	return t.ropeFactors(l, s)
}

// Modify permutes Q (by num_attention_heads) and K (by
// num_key_value_heads, None: by num_attention_heads).
func (m *minicpm) Modify(in Input, bid int) ([]Output, error) {
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV, _, err := m.h.Int("num_key_value_heads")
	if err != nil {
		return nil, err
	}
	return m.mappedQK(in, bid, nHead, nHead, nKV)
}

// minicpm3 is MiniCPM3Model: multi-head latent attention with the
// compressed K/V projection kept whole (attn_kv_b), tensors mapped
// unchanged, its own short list of keys.
type minicpm3 struct{ text }

func newMiniCPM3(h HParams, dir string) (Model, error) {
	t, err := newText("minicpm3", h, dir)
	return &minicpm3{t}, err
}

func (m *minicpm3) Vocab() VocabKind { return VocabSentencePiece }

// Params is MiniCPM3Model.set_gguf_parameters, which does not call
// TextModel's: the file type first, then the sizes, the optional Q LoRA
// rank, the KV LoRA rank, key_length (qk_nope_head_dim +
// qk_rope_head_dim) and the rope dimension count (qk_rope_head_dim).
func (m *minicpm3) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	get := func(key string) (any, error) {
		v, ok := m.h[key]
		if !ok {
			return nil, fmt.Errorf("config.json: %s is missing", key)
		}
		return v, nil
	}
	steps := []struct {
		key, suffix string
		add         func(string, any) error
	}{
		{"max_position_embeddings", "context_length", k.u32},
		{"hidden_size", "embedding_length", k.u32},
		{"", "block_count", k.u32},
		{"intermediate_size", "feed_forward_length", k.u32},
		{"num_attention_heads", "attention.head_count", k.u32},
		{"num_key_value_heads", "attention.head_count_kv", k.u32},
		{"rms_norm_eps", "attention.layer_norm_rms_epsilon", k.f32},
		{"vocab_size", "vocab_size", k.u32},
		{"q_lora_rank", "attention.q_lora_rank", k.u32},
		{"kv_lora_rank", "attention.kv_lora_rank", k.u32},
	}
	for _, s := range steps {
		var v any = m.blocks
		if s.key == "q_lora_rank" {
			if v = m.h[s.key]; v == nil {
				continue
			}
		} else if s.key != "" {
			var err error
			if v, err = get(s.key); err != nil {
				return nil, err
			}
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	nope, err := m.h.MustInt("qk_nope_head_dim")
	if err != nil {
		return nil, err
	}
	rot, err := m.h.MustInt("qk_rope_head_dim")
	if err != nil {
		return nil, err
	}
	if err := k.u32("attention.key_length", nope+rot); err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", rot); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Extra is generate_extra_tensors: the rope factors, qk_rope_head_dim/2
// values each.
func (m *minicpm3) Extra() ([]Output, error) {
	if !Truthy(m.rope["long_factor"]) && !Truthy(m.rope["short_factor"]) {
		return nil, nil
	}
	rot, err := m.h.MustInt("qk_rope_head_dim")
	if err != nil {
		return nil, err
	}
	return m.longRopeFactors(rot)
}

func (m *minicpm3) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}

// orion is OrionModel: TextModel's tensors unchanged, its own key list
// (no rope keys; the config's rms_norm_eps is the epsilon of its
// LayerNorms).
type orion struct{ text }

func newOrion(h HParams, dir string) (Model, error) {
	t, err := newText("orion", h, dir)
	return &orion{t}, err
}

func (m *orion) Vocab() VocabKind { return VocabSentencePiece }

// Params is OrionModel.set_gguf_parameters, which does not call
// TextModel's: the file type, the tensor data layout, the context length
// (max_sequence_length, max_position_embeddings or model_max_length), the
// sizes, head_count_kv (num_key_value_heads, else the head count) and the
// LayerNorm epsilon from rms_norm_eps.
func (m *orion) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	k.l.Set(k.key("tensor_data_layout"), gguf.String("Meta AI original pth"))
	var ctx any
	found := false
	for _, key := range []string{"max_sequence_length", "max_position_embeddings", "model_max_length"} {
		if v, ok := m.h[key]; ok {
			ctx, found = v, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("config.json: can not find ctx length parameter")
	}
	heads, ok := m.h["num_attention_heads"]
	if !ok {
		return nil, fmt.Errorf("config.json: num_attention_heads is missing")
	}
	kvHeads, ok := m.h["num_key_value_heads"]
	if !ok {
		kvHeads = heads
	}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", ctx, k.u32},
		{"embedding_length", m.h["hidden_size"], k.u32},
		{"block_count", m.blocks, k.u32},
		{"feed_forward_length", m.h["intermediate_size"], k.u32},
		{"attention.head_count", heads, k.u32},
		{"attention.head_count_kv", kvHeads, k.u32},
		{"attention.layer_norm_epsilon", m.h["rms_norm_eps"], k.f32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

func (m *orion) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}

// plm is PLMModel: TextModel's keys and tensors, plus the vocabulary size
// and the latent attention's sizes.
type plm struct{ text }

func newPLM(h HParams, dir string) (Model, error) {
	t, err := newText("plm", h, dir)
	return &plm{t}, err
}

func (m *plm) Vocab() VocabKind { return VocabGPT2 }

// Params adds vocab_size, kv_lora_rank, key_length (qk_nope_head_dim +
// qk_rope_head_dim), value_length (v_head_dim) and the rope dimension
// count (qk_rope_head_dim).
func (m *plm) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	ints := map[string]int64{}
	for _, key := range []string{"vocab_size", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"} {
		if ints[key], err = m.h.MustInt(key); err != nil {
			return nil, err
		}
	}
	for _, s := range []struct {
		suffix string
		v      int64
	}{
		{"vocab_size", ints["vocab_size"]},
		{"attention.kv_lora_rank", ints["kv_lora_rank"]},
		{"attention.key_length", ints["qk_nope_head_dim"] + ints["qk_rope_head_dim"]},
		{"attention.value_length", ints["v_head_dim"]},
		{"rope.dimension_count", ints["qk_rope_head_dim"]},
	} {
		if err := k.u32(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

func (m *plm) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}

// xverse is XverseModel: TextModel's keys plus the tensor data layout and
// the rope dimension count (hidden_size // num_attention_heads), Q and K
// permuted by its own _reverse_hf_permute.
type xverse struct{ text }

func newXverse(h HParams, dir string) (Model, error) {
	t, err := newText("xverse", h, dir)
	return &xverse{t}, err
}

func (m *xverse) Vocab() VocabKind { return VocabXverse }

func (m *xverse) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("tensor_data_layout"), gguf.String("Meta AI original pth"))
	dim, err := hiddenPerHead(m.h)
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", dim); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is XverseModel.modify_tensors: Q permuted by the head count; K by
// head_count // head_count_kv when the two differ (its _reverse_hf_permute
// divides where LlamaModel.permute replaces), else by the head count.
func (m *xverse) Modify(in Input, bid int) ([]Output, error) {
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV := nHead
	if _, ok := m.h["num_key_value_heads"]; ok {
		if nKV, err = m.h.MustInt("num_key_value_heads"); err != nil {
			return nil, err
		}
	}
	if strings.HasSuffix(in.Name, "k_proj.weight") && nKV != nHead {
		if nKV <= 0 {
			return nil, &ConfigError{Key: "num_key_value_heads", Value: nKV, Msg: "is not a head count"}
		}
		n := floorDiv(nHead, nKV)
		return m.mappedQK(in, bid, nHead, n, n)
	}
	return m.mappedQK(in, bid, nHead, nHead, nHead)
}
