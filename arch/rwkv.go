package arch

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

func init() {
	register(newRWKV6, "Rwkv6ForCausalLM")
	register(newRWKV6Qwen2, "RWKV6Qwen2ForCausalLM")
	register(newRWKV7, "Rwkv7ForCausalLM", "RWKV7ForCausalLM")
}

// VocabRWKVWorld is _set_vocab_rwkv_world: RWKV's world vocabulary
// (rwkv_vocab_v20230424.txt), tokenizer model "rwkv".
const VocabRWKVWorld VocabKind = "rwkv-world"

// build is a tensor transform over its sources' float32 values.
type build = func([][]float32) ([]float32, error)

// chained applies transforms of a single source one after the other.
func chained(fs ...build) build {
	return func(srcs [][]float32) ([]float32, error) {
		v := srcs[0]
		for _, f := range fs {
			var err error
			if v, err = f([][]float32{v}); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

// concatenated is the Build of a torch.stack of same-shaped sources: their
// values one after the other.
func concatenated(srcs [][]float32) ([]float32, error) {
	var out []float32
	for _, s := range srcs {
		out = append(out, s...)
	}
	return out, nil
}

// withWeight is the RWKV classes' name fix: ".weight" appended to a GGUF
// name that has neither suffix (the bare lerp and decay parameters).
func withWeight(gname string) string {
	if strings.HasSuffix(gname, ".weight") || strings.HasSuffix(gname, ".bias") {
		return gname
	}
	return gname + ".weight"
}

// lerpFuser holds a block's token-shift lerp vectors back until all of
// them have arrived, then stacks them (in order) into
// blk.N.time_mix_lerp_fused.weight, as the RWKV classes' modify_tensors
// do.
type lerpFuser struct {
	order []string
	held  map[int]map[string]Input
}

// add holds in under key; when every key of the block is held it returns
// the fused output of shape lead + the lerp's shape.
func (f *lerpFuser) add(in Input, key string, bid int, lead []int64) ([]Output, error) {
	if f.held == nil {
		f.held = map[int]map[string]Input{}
	}
	if f.held[bid] == nil {
		f.held[bid] = map[string]Input{}
	}
	f.held[bid][key] = in
	srcs := make([]Input, 0, len(f.order))
	for _, k := range f.order {
		s, ok := f.held[bid][k]
		if !ok {
			return nil, nil
		}
		if numel(s.Shape) != numel(in.Shape) {
			return nil, fmt.Errorf("%w: block %d: lerp tensors of %d and %d values cannot be stacked", ErrConfig, bid, numel(s.Shape), numel(in.Shape))
		}
		srcs = append(srcs, s)
	}
	return []Output{{
		Name: "blk." + strconv.Itoa(bid) + ".time_mix_lerp_fused.weight", Shape: lead, Sources: srcs,
		Build: concatenated, Stacked: true, HFName: in.Name, Bid: bid,
	}}, nil
}

// rwkv6 is Rwkv6Model (conversion/rwkv.py); with qwen2 set it is
// RWKV6Qwen2Model, RWKV-6 time mixing on a Qwen2 layout.
type rwkv6 struct {
	text
	qwen2 bool
	lerps lerpFuser
}

func newRWKV6(h HParams, dir string) (Model, error) {
	t, err := newText("rwkv6", h, dir)
	return &rwkv6{text: t, lerps: lerpFuser{order: []string{"w", "k", "v", "r", "g"}}}, err
}

func newRWKV6Qwen2(h HParams, dir string) (Model, error) {
	t, err := newText("rwkv6qwen2", h, dir)
	return &rwkv6{text: t, qwen2: true, lerps: lerpFuser{order: []string{"w", "k", "v", "r", "g"}}}, err
}

func (m *rwkv6) Vocab() VocabKind {
	if m.qwen2 {
		return VocabQwen2 // sentencepiece, else gpt2
	}
	return VocabRWKVWorld
}

// mustHave is self.hparams[key]: a missing key fails the converter.
func mustHave(h HParams, key string) (any, error) {
	v, ok := h[key]
	if !ok {
		return nil, &ConfigError{Key: key, Value: nil, Msg: "is missing (llama.cpp's converter requires it)"}
	}
	return v, nil
}

// Params is Rwkv6Model.set_gguf_parameters or RWKV6Qwen2Model's.
func (m *rwkv6) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	hidden, err := h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	var headSize, tmix, tdecay, ffn, eps, rescale, kvHeads any
	if m.qwen2 {
		heads, err := h.MustInt("num_attention_heads")
		if err != nil {
			return nil, err
		}
		if heads <= 0 {
			return nil, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a positive head count"}
		}
		headSize = floorDiv(hidden, heads)
		if kvHeads, err = mustHave(h, "num_key_value_heads"); err != nil {
			return nil, err
		}
		if eps, err = mustHave(h, "rms_norm_eps"); err != nil {
			return nil, err
		}
		if ffn, err = mustHave(h, "intermediate_size"); err != nil {
			return nil, err
		}
		tmix, tdecay = h.get("lora_rank_tokenshift", 32), h.get("lora_rank_decay", 64)
		if hidden >= 4096 {
			tmix, tdecay = h.get("lora_rank_tokenshift", 64), h.get("lora_rank_decay", 128)
		}
	} else {
		for _, e := range []struct {
			key string
			dst *any
		}{{"head_size", &headSize}, {"layer_norm_epsilon", &eps}, {"rescale_every", &rescale}, {"intermediate_size", &ffn}} {
			if *e.dst, err = mustHave(h, e.key); err != nil {
				return nil, err
			}
		}
		if ffn == nil {
			ffn = int64(math.Floor(float64(hidden)*3.5/32)) * 32
		}
		tmix, tdecay = 32, 64
		if hidden == 4096 {
			tmix, tdecay = 64, 128
		}
	}
	k.l.Set(k.key("context_length"), gguf.Uint32(1<<20)) // RWKV isn't context limited
	steps := []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"embedding_length", hidden, k.u32}, {"block_count", m.blocks, k.u32},
	}
	if !m.qwen2 {
		steps = append(steps, []struct {
			suffix string
			v      any
			add    func(string, any) error
		}{{"attention.layer_norm_epsilon", eps, k.f32}, {"rescale_every_n_layers", rescale, k.u32}}...)
	}
	steps = append(steps, []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{{"wkv.head_size", headSize, k.u32}, {"time_mix_extra_dim", tmix, k.u32}, {"time_decay_extra_dim", tdecay, k.u32},
		{"feed_forward_length", ffn, k.u32}}...)
	for _, s := range steps {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	if m.qwen2 {
		if err := k.f32("attention.layer_norm_rms_epsilon", eps); err != nil {
			return nil, err
		}
		k.l.Set(k.key("token_shift_count"), gguf.Uint32(1))
		if err := k.u32("attention.head_count_kv", kvHeads); err != nil {
			return nil, err
		}
	}
	k.l.Set(k.key("attention.head_count"), gguf.Uint32(0)) // required by llama.cpp, unused
	return k.l.KVs(), nil
}

// Modify is Rwkv6Model.modify_tensors (and RWKV6Qwen2Model's, which
// reorders the five token-shift LoRA blocks from r,k,v,w,g to w,k,v,r,g).
func (m *rwkv6) Modify(in Input, bid int) ([]Output, error) {
	_, gname, ok := m.names.Lookup(in.Name)
	if !ok {
		return nil, m.unmapped(in.Name, bid)
	}
	gname = withWeight(gname)
	out := identity(in, gname, bid)
	var fs []build
	switch {
	case strings.HasSuffix(gname, "time_mix_w1.weight") || strings.HasSuffix(gname, "time_mix_decay_w1.weight") ||
		strings.HasSuffix(gname, "time_mix_decay_w2.weight"):
		if len(in.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %q of shape %v is not a matrix", ErrConfig, in.Name, in.Shape)
		}
		fs = append(fs, transpose(in.Shape))
		out.Shape = []int64{in.Shape[1], in.Shape[0]}
	case strings.HasSuffix(gname, "time_mix_w2.weight"):
		if len(in.Shape) != 3 {
			return nil, fmt.Errorf("%w: tensor %q of shape %v is not 3-D", ErrConfig, in.Name, in.Shape)
		}
		shape, f := transposeLast2(in.Shape, -1)
		fs = append(fs, f)
		out.Shape = shape
	case strings.HasSuffix(gname, "time_mix_decay.weight") || strings.Contains(gname, "lerp"):
		out.Shape = squeezeAll(in.Shape)
	}
	if n, ok := m.h["rescale_every"]; ok {
		every, err := asInt(n)
		if err != nil {
			return nil, &ConfigError{Key: "rescale_every", Value: n, Msg: "is not an integer"}
		}
		if every > 0 && bid >= 0 && (strings.HasSuffix(gname, "time_mix_output.weight") || strings.HasSuffix(gname, "channel_mix_value.weight")) {
			e := int64(bid) / every
			if e > 127 {
				return nil, fmt.Errorf("%w: rescale_every %d: 2^%d is past float32", ErrConfig, every, e)
			}
			scale := float32(math.Ldexp(1, -int(e)))
			fs = append(fs, elementwise(func(v float32) float32 {
				if in.DType == readers.F16 {
					// An F16 tensor is divided in F16 (addOne's note): a
					// quotient below F16's normal range is rounded.
					return roundF16(v * scale)
				}
				return v * scale
			}))
		}
	}
	if m.qwen2 && (strings.Contains(gname, "time_mix_w1") || strings.Contains(gname, "time_mix_w2")) {
		if len(out.Shape) == 0 || out.Shape[0]%5 != 0 {
			return nil, fmt.Errorf("%w: tensor %q of shape %v is not 5 blocks", ErrConfig, in.Name, out.Shape)
		}
		f, err := permuteRowBlocks(out.Shape, out.Shape[0]/5, []int64{3, 1, 2, 0, 4})
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %w", ErrConfig, in.Name, err)
		}
		fs = append(fs, f)
	}
	if len(fs) > 0 {
		out.Build = chained(fs...)
	}
	if bid >= 0 && strings.Contains(gname, "time_mix_lerp") && !strings.Contains(gname, "time_mix_lerp_x") {
		key := strings.TrimSuffix(strings.TrimPrefix(gname, "blk."+strconv.Itoa(bid)+".time_mix_lerp_"), ".weight")
		if !slices.Contains(m.lerps.order, key) {
			// Held by the converter and never written.
			return nil, nil
		}
		in.Shape = out.Shape
		return m.lerps.add(in, key, bid, append([]int64{5, 1, 1}, out.Shape...))
	}
	return []Output{out}, nil
}

// rwkv7 is Rwkv7Model (conversion/rwkv.py): RWKV's own RWKV-7 layout and
// flash-linear-attention's.
type rwkv7 struct {
	text
	lerps lerpFuser
	// loraTransposed is lora_needs_transpose: false once a
	// flash-linear-attention LoRA name ("_lora.lora") has been seen.
	loraTransposed bool
}

func newRWKV7(h HParams, dir string) (Model, error) { return newRWKV7As("rwkv7", h, dir) }

// newRWKV7As is Rwkv7Model's __init__ under architecture arch (rwkv7, or
// arwkv7 for ARwkv7Model).
func newRWKV7As(arch string, h HParams, dir string) (*rwkv7, error) {
	t, err := newText(arch, h, dir)
	if err != nil {
		return nil, err
	}
	order := []string{"r", "w", "k", "v", "a", "g"}
	if g, ok := h["wkv_has_gate"]; ok && !Truthy(g) {
		order = order[:5]
	}
	return &rwkv7{text: t, lerps: lerpFuser{order: order}, loraTransposed: true}, nil
}

func (m *rwkv7) Vocab() VocabKind { return VocabRWKVWorld }

// calcLoRARank is calc_lora_rank: max(1, round(hidden^exp × mult / 32)) ×
// 32, rounding half to even as Python's round.
func calcLoRARank(hidden int64, exp, mult float64) int64 {
	return max(1, int64(math.RoundToEven(math.Pow(float64(hidden), exp)*mult/32))) * 32
}

// Params is Rwkv7Model.set_gguf_parameters.
func (m *rwkv7) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	headKey, epsKey := "head_size", "layer_norm_epsilon"
	if !h.Has(headKey) || !h.Has(epsKey) {
		headKey, epsKey = "head_dim", "norm_eps"
	}
	headSize, err := mustHave(h, headKey)
	if err != nil {
		return nil, err
	}
	eps, err := mustHave(h, epsKey)
	if err != nil {
		return nil, err
	}
	hidden, err := h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	ffn, err := mustHave(h, "intermediate_size")
	if err != nil {
		return nil, err
	}
	if ffn == nil {
		ffn = hidden * 4
	}
	keys := []string{"lora_rank_decay", "lora_rank_iclr", "lora_rank_value_residual_mix", "lora_rank_gate"}
	for _, key := range keys {
		if !h.Has(key) {
			keys = []string{"decay_low_rank_dim", "a_low_rank_dim", "v_low_rank_dim", "gate_low_rank_dim"}
			break
		}
	}
	defaults := []int64{calcLoRARank(hidden, 0.5, 1.8), calcLoRARank(hidden, 0.5, 1.8), calcLoRARank(hidden, 0.5, 1.3),
		calcLoRARank(hidden, 0.8, 0.6)}
	ranks := make([]any, len(keys))
	for i, key := range keys {
		if ranks[i], err = mustHave(h, key); err != nil {
			return nil, err
		}
		if ranks[i] == nil {
			ranks[i] = defaults[i]
		}
	}
	k, err := m.params(ft, hidden, "attention.layer_norm_epsilon", eps, headSize, ranks, ffn)
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("attention.head_count"), gguf.Uint32(0)) // required by llama.cpp, unused
	return k.l.KVs(), nil
}

// params writes the hyperparameters Rwkv7Model and ARwkv7Model share, in
// their order, up to general.file_type: eps under epsSuffix, the four LoRA
// ranks decay, ICLR, value residual mix and gate.
func (m *rwkv7) params(ft gguf.FileType, hidden any, epsSuffix string, eps, headSize any, ranks []any, ffn any) (*kv, error) {
	k := &kv{arch: m.arch}
	k.l.Set(k.key("context_length"), gguf.Uint32(1<<20)) // RWKV isn't context limited
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"embedding_length", hidden, k.u32}, {"block_count", m.blocks, k.u32},
		{epsSuffix, eps, k.f32}, {"wkv.head_size", headSize, k.u32},
		{"attention.decay_lora_rank", ranks[0], k.u32}, {"attention.iclr_lora_rank", ranks[1], k.u32},
		{"attention.value_residual_mix_lora_rank", ranks[2], k.u32}, {"attention.gate_lora_rank", ranks[3], k.u32},
		{"feed_forward_length", ffn, k.u32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k, nil
}

// Filter is Rwkv7Model.filter_tensors: the two layouts' names unified,
// then TextModel's filter.
func (m *rwkv7) Filter(name string) (string, bool) {
	for _, r := range [][2]string{
		{"blocks", "layers"}, {"ffn", "feed_forward"}, {"self_attn", "attention"}, {"attn", "attention"},
		{"time_mixer.", ""}, {"feed_forward_norm", "ln2"}, {"g_norm", "ln_x"},
	} {
		name = strings.ReplaceAll(name, r[0], r[1])
	}
	return m.text.Filter(name)
}

// rwkv7Transposed are the LoRA factors RWKV's own layout stores [in, out].
var rwkv7Transposed = []string{"time_mix_w1.weight", "time_mix_w2.weight", "time_mix_a1.weight", "time_mix_a2.weight",
	"time_mix_v1.weight", "time_mix_v2.weight", "time_mix_g1.weight", "time_mix_g2.weight"}

// Modify is Rwkv7Model.modify_tensors.
func (m *rwkv7) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	if strings.Contains(name, "_lora.lora") {
		m.loraTransposed = false
	}
	name = strings.ReplaceAll(name, "_lora.lora.0.weight", "1.weight")
	name = strings.ReplaceAll(name, "_lora.lora.2.weight", "2.weight")
	name = strings.ReplaceAll(name, "_lora.lora.2.bias", "0.weight")
	if strings.Contains(name, "attention.v") && bid == 0 {
		_, gname, ok := m.names.Lookup(name)
		if !ok {
			return nil, m.unmapped(name, bid)
		}
		if !strings.Contains(gname, "value") {
			// Dummy v0/v1/v2 of block 0, unused: left out.
			return nil, nil
		}
	}
	if bid >= 0 && strings.Contains(name, "attention.x_") {
		if strings.Contains(name, "attention.x_x") {
			n := int64(len(m.lerps.order))
			if numel(in.Shape)%n != 0 {
				return nil, fmt.Errorf("%w: tensor %q of shape %v is not %d lerp vectors", ErrConfig, name, in.Shape, n)
			}
			return []Output{{Name: "blk." + strconv.Itoa(bid) + ".time_mix_lerp_fused.weight",
				Shape: []int64{n, 1, 1, numel(in.Shape) / n}, Sources: []Input{in}, Build: reshaped, HFName: name, Bid: bid}}, nil
		}
		prefix := "model.layers." + strconv.Itoa(bid) + ".attention.x_"
		key, ok := strings.CutPrefix(name, prefix)
		if !ok || !slices.Contains(m.lerps.order, key) {
			// Held by the converter and never written.
			return nil, nil
		}
		return m.lerps.add(in, key, bid, append([]int64{int64(len(m.lerps.order))}, in.Shape...))
	}
	_, gname, ok := m.names.Lookup(name)
	if !ok {
		return nil, m.unmapped(name, bid)
	}
	gname = withWeight(gname)
	out := identity(in, gname, bid)
	out.Shape = squeezeAll(in.Shape)
	if m.loraTransposed && slices.ContainsFunc(rwkv7Transposed, func(s string) bool { return strings.HasSuffix(gname, s) }) {
		if len(out.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %q of shape %v is not a matrix", ErrConfig, name, in.Shape)
		}
		out.Build = transpose(out.Shape)
		out.Shape = []int64{out.Shape[1], out.Shape[0]}
	}
	if strings.Contains(gname, "r_k") {
		out.Shape = []int64{numel(out.Shape)}
		if out.Build == nil {
			out.Build = reshaped
		}
	}
	if bid == 0 && strings.Contains(gname, "time_mix_a") {
		v := out
		v.Name = strings.Replace(gname, "time_mix_a", "time_mix_v", 1)
		v.Shape = slices.Clone(out.Shape)
		return []Output{v, out}, nil
	}
	return []Output{out}, nil
}
