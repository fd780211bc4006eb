package arch

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGemma3n, "Gemma3nForConditionalGeneration", "Gemma3nForCausalLM")
}

// gemma3n is Gemma3NModel (conversion/gemma.py), text only: Gemma3Model's
// conversion with norms stored as used, the AltUp projections stacked
// into one 3-D tensor each, both token embeddings zero-padded to the full
// vocabulary (the vision and audio token slots), and the AltUp, per-layer
// embedding, KV-sharing and activation-sparsity hyperparameters.
type gemma3n struct {
	gemma
	// altup holds altup_projections.{0,1,2} and
	// altup_unembed_projections.{0,1,2} until each set is complete
	// (Gemma3NModel._altup_proj / _altup_unembd).
	altup map[string]*[3]*Input
}

// gemma3nAltUpInputs is the only AltUp width the converter handles (it
// asserts altup_num_inputs == 4: the active prediction plus three
// projected ones).
const gemma3nAltUpInputs = 4

func newGemma3n(h HParams, dir string) (Model, error) {
	if n, err := asInt(h["altup_num_inputs"]); err != nil || n != gemma3nAltUpInputs {
		return nil, &ConfigError{Key: "altup_num_inputs", Value: h["altup_num_inputs"], Msg: "must be 4 (the only AltUp width llama.cpp's converter supports)"}
	}
	t, err := newText("gemma3n", h, dir)
	if err != nil {
		return nil, err
	}
	return &gemma3n{gemma: gemma{text: t, version: 3, noNormShift: true}, altup: map[string]*[3]*Input{}}, nil
}

// Filter is Gemma3NModel.filter_tensors: parameters named *_scale (AltUp's
// correct_output_scale) get a ".weight" suffix, then Gemma3Model's filter.
func (m *gemma3n) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, "_scale") {
		name += ".weight"
	}
	return m.gemma.Filter(name)
}

// Params is Gemma3NModel.set_gguf_parameters.
func (m *gemma3n) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.params3(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	h := m.h
	for _, s := range []struct{ suffix, key string }{
		{"altup.active_idx", "altup_active_idx"},
		{"altup.num_inputs", "altup_num_inputs"},
		{"embedding_length_per_layer_input", "hidden_size_per_layer_input"},
		{"attention.shared_kv_layers", "num_kv_shared_layers"},
	} {
		v, ok := h[s.key]
		if !ok {
			return nil, fmt.Errorf("%w: %s is missing", ErrConfig, s.key)
		}
		if err := k.u32(s.suffix, v); err != nil {
			return nil, err
		}
	}
	asp, ok := h["activation_sparsity_pattern"].([]any)
	if !ok {
		return nil, &ConfigError{Key: "activation_sparsity_pattern", Value: h["activation_sparsity_pattern"], Msg: "is not a list of sparsities"}
	}
	if len(asp) != m.blocks {
		return nil, &ConfigError{Key: "activation_sparsity_pattern", Value: h["activation_sparsity_pattern"], Msg: fmt.Sprintf("has %d entries for %d blocks", len(asp), m.blocks)}
	}
	scale := make([]float32, len(asp))
	for i, v := range asp {
		p, err := asFloat(v)
		if err != nil {
			return nil, &ConfigError{Key: fmt.Sprintf("activation_sparsity_pattern[%d]", i), Value: v, Msg: "is not a number"}
		}
		scale[i] = normalQuantile(float32(p))
	}
	k.l.Set(k.key("activation_sparsity_scale"), gguf.Array(scale))
	types, err := layerTypes(h, m.blocks)
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(slidingPattern(types)))
	return k.l.KVs(), nil
}

// normalQuantile is torch.distributions.Normal(0, 1).icdf of a float32
// probability, loc + scale · erfinv(2p - 1) · √2, in float32 step by step
// as torch computes it: 2p - 1, erfinv rounded to float32, then the
// product with √2 rounded to float32 (outside [0, 1] it is NaN, at 0 and 1
// infinite).
func normalQuantile(p float32) float32 {
	x := 2*p - 1
	e := float32(math.Erfinv(float64(x)))
	return e * float32(math.Sqrt2)
}

// Modify is Gemma3NModel.modify_tensors.
func (m *gemma3n) Modify(in Input, bid int) ([]Output, error) {
	switch {
	case strings.Contains(in.Name, "embed_tokens.weight") || strings.Contains(in.Name, "embed_tokens_per_layer"):
		return m.padVocab(in, bid)
	case strings.Contains(in.Name, "altup_unembed_projections"):
		return m.stackAltUp(in, "model.altup_unembed_projections.weight")
	case strings.Contains(in.Name, "altup_projections"):
		return m.stackAltUp(in, "model.altup_projections.weight")
	}
	return m.mapped(in, in.Name, bid, nil)
}

// padVocab zero-pads a token embedding to vocab_size rows (262400 by
// default): the vision and audio token slots past the text vocabulary,
// which get their embeddings from the towers.
func (m *gemma3n) padVocab(in Input, bid int) ([]Output, error) {
	vs, ok, err := m.h.Int("vocab_size")
	if err != nil {
		return nil, err
	}
	if !ok {
		vs = 262400
	}
	if len(in.Shape) != 2 || in.Shape[1] <= 0 || in.Shape[1] > 1<<32 {
		return nil, fmt.Errorf("tensor %q: shape %v, want [vocabulary, width]", in.Name, in.Shape)
	}
	if vs > MaxTensorRows {
		return nil, &ConfigError{Key: "vocab_size", Value: vs, Msg: "is too large"}
	}
	rows := in.Shape[0]
	if rows >= vs {
		return m.mapped(in, in.Name, bid, nil)
	}
	out, err := m.mapped(in, in.Name, bid, func(srcs [][]float32) ([]float32, error) {
		v := make([]float32, vs*in.Shape[1])
		copy(v, srcs[0])
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	out[0].Shape = []int64{vs, in.Shape[1]}
	out[0].PadValues = (vs - rows) * in.Shape[1]
	return out, nil
}

// MaxTensorRows bounds the row count a padded embedding may be given from
// config.json (real vocabularies are a few hundred thousand).
const MaxTensorRows = 1 << 24

// stackAltUp holds projection 0, 1 or 2 (".0." … in the name) of a set
// and, once the three are there, writes them stacked along a new first
// dimension under the name as.
func (m *gemma3n) stackAltUp(in Input, as string) ([]Output, error) {
	idx := -1
	for i := range 3 {
		if strings.Contains(in.Name, fmt.Sprintf(".%d.", i)) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("unknown AltUp projection %q (only 0, 1 and 2 are expected)", in.Name)
	}
	set := m.altup[as]
	if set == nil {
		set = &[3]*Input{}
		m.altup[as] = set
	}
	c := in
	set[idx] = &c
	for _, s := range set {
		if s == nil {
			return nil, nil
		}
	}
	srcs := []Input{*set[0], *set[1], *set[2]}
	for _, s := range srcs[1:] {
		if !slices.Equal(s.Shape, srcs[0].Shape) {
			return nil, fmt.Errorf("AltUp projections %q and %q differ in shape (%v, %v)", srcs[0].Name, s.Name, srcs[0].Shape, s.Shape)
		}
	}
	_, gname, ok := m.names.Lookup(as)
	if !ok {
		return nil, m.unmapped(as, -1)
	}
	delete(m.altup, as)
	shape := append([]int64{3}, srcs[0].Shape...)
	out := Output{Name: gname, Shape: shape, Sources: srcs, HFName: as, Bid: -1,
		Build: func(v [][]float32) ([]float32, error) { return slices.Concat(v...), nil }}
	return []Output{out}, nil
}

// Finish refuses a checkpoint whose AltUp projections are incomplete. The
// converter silently leaves such a set out, which gives a GGUF llama.cpp
// cannot load.
func (m *gemma3n) Finish() error {
	for as, set := range m.altup {
		for i, s := range set {
			if s == nil {
				return fmt.Errorf("AltUp projection %d of %s is missing", i, strings.TrimSuffix(as, ".weight"))
			}
		}
	}
	return nil
}
