package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

func init() {
	register(newGemma(1), "GemmaForCausalLM")
	register(newGemma(2), "Gemma2ForCausalLM")
	register(newGemma(3), "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
}

// gemma is GemmaModel, Gemma2Model and Gemma3Model (conversion/gemma.py,
// text only): RMSNorm weights stored as 1 + w, lm_head dropped (Gemma 1
// and 2), the token embedding cut to the real vocabulary (Gemma 3).
type gemma struct {
	text
	version int
	// noNormShift: the norm weights are stored as they are used (Gemma 3n
	// and Gemma 4 override Gemma3Model.norm_shift with 0).
	noNormShift bool
}

func newGemma(version int) Constructor {
	return func(h HParams, dir string) (Model, error) {
		name := "gemma"
		if version > 1 {
			name = fmt.Sprintf("gemma%d", version)
		}
		t, err := newText(name, h, dir)
		if err != nil {
			return nil, err
		}
		return &gemma{text: t, version: version}, nil
	}
}

func (m *gemma) Vocab() VocabKind {
	switch m.version {
	case 2:
		return VocabGemma2
	case 3:
		return VocabGemma3
	}
	return VocabGemma
}

// Filter drops lm_head.weight (Gemma 1 and 2 tie it to the embedding).
func (m *gemma) Filter(name string) (string, bool) {
	if m.version < 3 && name == "lm_head.weight" {
		return "", false
	}
	return m.text.Filter(name)
}

func (m *gemma) Params(ft gguf.FileType) ([]gguf.KV, error) {
	if m.version == 3 {
		return m.params3(ft)
	}
	k := &kv{arch: m.arch}
	h := m.h
	headsKV := "num_key_value_heads"
	if !h.Has(headsKV) {
		headsKV = "num_attention_heads"
	}
	steps := []struct {
		suffix string
		key    string
		add    func(string, any) error
	}{
		{"context_length", "max_position_embeddings", k.u32},
		{"embedding_length", "hidden_size", k.u32},
		{"block_count", "", k.u32},
		{"feed_forward_length", "intermediate_size", k.u32OrArray},
		{"attention.head_count", "num_attention_heads", k.u32OrArray},
		{"attention.head_count_kv", headsKV, k.u32OrArray},
		{"attention.layer_norm_rms_epsilon", "rms_norm_eps", k.f32},
		{"attention.key_length", "head_dim", k.u32},
		{"attention.value_length", "head_dim", k.u32},
	}
	for _, s := range steps {
		var v any = m.blocks
		if s.key != "" {
			var ok bool
			if v, ok = h[s.key]; !ok {
				return nil, fmt.Errorf("config.json: %s is missing", s.key)
			}
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	if m.version == 2 {
		for _, s := range []struct {
			suffix, key string
			add         func(string, any) error
		}{
			{"attn_logit_softcapping", "attn_logit_softcapping", k.f32},
			{"final_logit_softcapping", "final_logit_softcapping", k.f32},
			{"attention.sliding_window", "sliding_window", k.u32},
		} {
			v, ok := h[s.key]
			if !ok {
				return nil, fmt.Errorf("config.json: %s is missing", s.key)
			}
			if err := s.add(s.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// params3 is Gemma3Model.set_gguf_parameters: the generic keys, then
// Gemma 3's defaults for what its configs may leave out.
func (m *gemma) params3(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	get := func(key string, def any) any {
		if v, ok := h[key]; ok && v != nil {
			return v
		}
		return def
	}
	if err := k.u32("context_length", get("max_position_embeddings", 131072)); err != nil {
		return nil, err
	}
	if err := k.u32OrArray("attention.head_count", get("num_attention_heads", 8)); err != nil {
		return nil, err
	}
	if err := k.f32("attention.layer_norm_rms_epsilon", get("rms_norm_eps", 1e-6)); err != nil {
		return nil, err
	}
	if err := k.u32("attention.key_length", get("head_dim", 256)); err != nil {
		return nil, err
	}
	if err := k.u32("attention.value_length", get("head_dim", 256)); err != nil {
		return nil, err
	}
	var theta any = 1_000_000.0
	if v, ok := m.ropeParams()["rope_theta"]; ok {
		theta = v
	}
	if err := k.f32("rope.freq_base", theta); err != nil {
		return nil, err
	}
	if v, ok := h["attn_logit_softcapping"]; ok && v != nil {
		return nil, fmt.Errorf("config.json: attn_logit_softcapping is not expected in a Gemma 3 model")
	}
	if v, ok := h["final_logit_softcapping"]; ok && v != nil && !isZero(v) {
		if err := k.f32("final_logit_softcapping", v); err != nil {
			return nil, err
		}
	}
	if p, ok := h["sliding_window_pattern"]; !ok || p == nil || !isOne(p) {
		sw, ok := h["sliding_window"]
		if !ok {
			return nil, fmt.Errorf("config.json: sliding_window is missing")
		}
		if err := k.u32("attention.sliding_window", sw); err != nil {
			return nil, err
		}
	}
	if err := k.u32OrArray("attention.head_count_kv", get("num_key_value_heads", 4)); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

func isZero(v any) bool { f, err := asFloat(v); return err == nil && f == 0 }
func isOne(v any) bool  { f, err := asFloat(v); return err == nil && f == 1 && isInt(v) }

func (m *gemma) Modify(in Input, bid int) ([]Output, error) {
	var build func([][]float32) ([]float32, error)
	shape := in.Shape
	if m.version == 3 && strings.Contains(in.Name, "embed_tokens.weight") && len(shape) > 0 {
		// _create_vocab_sentencepiece's find_hparam order.
		vs, _, err := m.h.Int("vocab_size_per_layer_input", "vocab_size")
		if err != nil {
			return nil, err
		}
		rows, err := load.Gemma3VocabRows(m.dir, load.Options{VocabSize: int(vs)})
		if err != nil {
			return nil, err
		}
		if int64(rows) < shape[0] {
			shape = append([]int64{int64(rows)}, shape[1:]...)
			n := numel(shape)
			build = func(srcs [][]float32) ([]float32, error) { return srcs[0][:n], nil }
		}
	}
	if strings.HasSuffix(in.Name, "norm.weight") && !m.noNormShift {
		build = addOne(in.DType)
	}
	out, err := m.mapped(in, in.Name, bid, build)
	if err != nil {
		return nil, err
	}
	out[0].Shape = shape
	return out, nil
}

// addOne adds 1 to every value, in the precision torch computes it in: an
// F16 tensor stays F16 in the converter (other dtypes become float32
// first), so its sum is rounded to F16.
func addOne(dt readers.DType) func([][]float32) ([]float32, error) {
	return func(srcs [][]float32) ([]float32, error) {
		out := make([]float32, len(srcs[0]))
		for i, v := range srcs[0] {
			s := v + 1
			if dt == readers.F16 {
				s = roundF16(s)
			}
			out[i] = s
		}
		return out, nil
	}
}

// roundF16 rounds to the nearest float16 value (ties to even).
func roundF16(v float32) float32 { return quantize.FP16ToFP32(quantize.FP32ToFP16(v)) }
