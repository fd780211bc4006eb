package arch

import (
	"fmt"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newLlama, "LLaMAForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "LlamaModel", "LlavaForConditionalGeneration", "VoxtralForConditionalGeneration")
}

// llama is LlamaModel (conversion/llama.py): Llama, Mistral and Mixtral.
type llama struct {
	text
	experts *expertStacker
	// noPermute is undo_permute = False (Llama4Model, ApertusModel): Q and
	// K are stored as llama.cpp wants them.
	noPermute bool
}

func newLlama(h HParams, dir string) (Model, error) { return newLlamaArch("llama", h, dir) }

// newLlamaArch is LlamaModel under another GGUF architecture name, as its
// subclasses that only change model_arch have it (SmolLM3Model, and
// GraniteModel underneath its extra parameters).
func newLlamaArch(ggufArch string, h HParams, dir string) (*llama, error) {
	t, err := newText(ggufArch, h, dir)
	if err != nil {
		return nil, err
	}
	return &llama{text: t}, nil
}

func (m *llama) Vocab() VocabKind { return VocabLlama }

// Filter also drops SmolVLM's "text_model." prefix.
func (m *llama) Filter(name string) (string, bool) {
	name = strings.ReplaceAll(name, "text_model.", "")
	return m.text.Filter(name)
}

// Params adds the vocabulary size and rope dimension count to the generic
// keys.
func (m *llama) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	vocab, err := m.h.MustInt("vocab_size")
	if err != nil {
		return nil, err
	}
	if err := k.u32("vocab_size", vocab); err != nil {
		return nil, err
	}
	dim, err := headDim(m.h)
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", dim); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// headDim is hparams.get("head_dim"), else hidden_size //
// num_attention_heads (Python's floor division).
func headDim(h HParams) (int64, error) {
	if d, ok, err := h.Int("head_dim"); err != nil || ok {
		return d, err
	}
	return hiddenPerHead(h)
}

// hiddenPerHead is hidden_size // num_attention_heads (Python's floor
// division).
func hiddenPerHead(h HParams) (int64, error) {
	hidden, err := h.MustInt("hidden_size")
	if err != nil {
		return 0, err
	}
	heads, err := h.MustInt("num_attention_heads")
	if err != nil {
		return 0, err
	}
	if heads <= 0 {
		return 0, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a head count"}
	}
	return floorDiv(hidden, heads), nil
}

// Modify permutes Q and K for llama.cpp's rotary layout, stacks Mixtral's
// experts and maps names.
func (m *llama) Modify(in Input, bid int) ([]Output, error) {
	nHead, err := m.h.MustInt("n_heads", "num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV, err := m.h.MustInt("n_kv_heads", "num_key_value_heads")
	if err != nil {
		return nil, err
	}
	name := in.Name
	if m.hfArch == "LlamaModel" {
		name = "model." + name
	}
	var build func([][]float32) ([]float32, error)
	var order []int64
	switch {
	case m.noPermute:
	case strings.HasSuffix(name, "q_proj.weight") || strings.HasSuffix(name, "q_proj.bias"):
		build, order, err = permuteQK(in.Shape, nHead, nHead)
	case strings.HasSuffix(name, "k_proj.weight") || strings.HasSuffix(name, "k_proj.bias"):
		build, order, err = permuteQK(in.Shape, nHead, nKV)
	}
	if err != nil {
		return nil, fmt.Errorf("Q/K permutation: %w", err)
	}
	if strings.Contains(name, "block_sparse_moe.experts") {
		n, err := expertCount(m.h, "num_local_experts")
		if err != nil {
			return nil, err
		}
		if m.experts == nil {
			m.experts = newExpertStacker(n, m.blocks, []string{"w1", "w2", "w3"}, m.names)
		}
		in.Name = name
		return m.experts.add(in, build, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("layers.%d.feed_forward.experts.%s.weight", bid, wid)
		})
	}
	_, gname, ok := m.names.Lookup(name)
	if !ok {
		return nil, m.unmapped(in.Name, bid)
	}
	out := identity(in, gname, bid)
	out.HFName = in.Name
	out.Build, out.RowOrder = build, order
	return []Output{out}, nil
}

func (m *llama) Finish() error { return m.experts.finish() }

// Extra is LlamaModel.generate_extra_tensors: llama3 rope scaling becomes
// the rope_freqs tensor of per-frequency factors.
func (m *llama) Extra() ([]Output, error) { return m.llama3RopeFreqs(8) }

// llama3RopeFreqs is the rope_freqs tensor of llama3 rope scaling, as
// LlamaModel and Exaone4Model generate it; they differ only in the scaling
// factor a config without one gets (factorDefault).
func (t *text) llama3RopeFreqs(factorDefault float64) ([]Output, error) {
	rp := t.ropeParams()
	if len(rp) == 0 {
		return nil, nil
	}
	typ, _ := rp["rope_type"].(string)
	if strings.ToLower(typ) != "llama3" {
		return nil, nil
	}
	get := func(key string, def float64) (float64, error) {
		v, ok := rp[key]
		if !ok || v == nil {
			return def, nil
		}
		f, err := asFloat(v)
		if err != nil {
			return 0, &ConfigError{Key: "rope_scaling." + key, Value: v, Msg: "is not a number"}
		}
		return f, nil
	}
	base, err := get("rope_theta", 10000)
	if err != nil {
		return nil, err
	}
	dim, err := headDim(t.h)
	if err != nil {
		return nil, err
	}
	factor, err := get("factor", factorDefault)
	if err != nil {
		return nil, err
	}
	lowFF, err := get("low_freq_factor", 1)
	if err != nil {
		return nil, err
	}
	highFF, err := get("high_freq_factor", 4)
	if err != nil {
		return nil, err
	}
	oldCtx, err := get("original_max_position_embeddings", 8192)
	if err != nil {
		return nil, err
	}
	if dim <= 0 || dim > maxRopeDims {
		// One factor per pair of dimensions: a hostile head_dim must not
		// size the tensor.
		return nil, &ConfigError{Key: "head_dim", Value: dim, Msg: fmt.Sprintf("is not a head size for llama3 rope factors (1 to %d)", maxRopeDims)}
	}
	factors := llama3RopeFactors(base, int(dim), factor, lowFF, highFF, oldCtx)
	name, err := t.names.Format(KindRopeFreqs, -1, ".weight")
	if err != nil {
		return nil, err
	}
	return []Output{{Name: name, Shape: []int64{int64(len(factors))}, Data: factors, HFName: name, Bid: -1}}, nil
}

// maxRopeDims bounds the head size the rope factor tensor is generated
// for (real models use 64 to 256).
const maxRopeDims = 1 << 16

// llama3RopeFactors follows generate_extra_tensors in float32 where torch
// computes in float32 (and, where a Python number is divided by a tensor,
// the way torch divides): freqs = 1 / base^(arange(0, dim, 2)/dim), then per
// frequency a factor of 1, factor, or the smooth interpolation.
func llama3RopeFactors(base float64, dim int, factor, lowFF, highFF, oldCtx float64) []float32 {
	lowWavelen := oldCtx / lowFF
	highWavelen := oldCtx / highFF
	var out []float32
	for i := 0; i < dim; i += 2 {
		exp := float32(i) / float32(dim)
		freq := float32(1) / float32(math.Pow(float64(float32(base)), float64(exp)))
		// A Python number divided by a tensor is Tensor.__rtruediv__,
		// which torch computes as reciprocal(tensor) × number.
		wavelen := float32(2*math.Pi) * (1 / freq)
		switch {
		case wavelen < float32(highWavelen):
			out = append(out, 1)
		case wavelen > float32(lowWavelen):
			out = append(out, float32(factor))
		default:
			smooth := (float32(oldCtx)*(1/wavelen) - float32(lowFF)) / float32(highFF-lowFF)
			out = append(out, float32(1)/((float32(1)-smooth)/float32(factor)+smooth))
		}
	}
	return out
}
