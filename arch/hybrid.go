package arch

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newJamba, "JambaForCausalLM")
	registerRaw(newGraniteHybrid, "GraniteMoeHybridForCausalLM", "BambaForCausalLM")
	registerRaw(newFalconH1, "FalconH1ForCausalLM")
}

// jamba is JambaModel (conversion/jamba.py): Mamba-1 blocks interleaved
// with attention blocks, MoE feed-forwards on a period.
type jamba struct {
	text
	experts *expertStacker
}

func newJamba(h HParams, dir string) (Model, error) {
	t, err := newText("jamba", h, dir)
	if err != nil {
		return nil, err
	}
	return &jamba{text: t}, nil
}

// Vocab is JambaModel.set_vocab: SentencePiece with a tokenizer.model,
// else _set_vocab_llama_hf (ggufkit has the SentencePiece routine only).
func (m *jamba) Vocab() VocabKind { return VocabSentencePiece }

// Params is JambaModel.set_gguf_parameters, which does not call
// TextModel's.
func (m *jamba) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	if st, err := os.Stat(filepath.Join(m.dir, "tokenizer.model")); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: no tokenizer.model: JambaModel then reads the tokenizer with _set_vocab_llama_hf, which ggufkit does not do for jamba", ErrConfig)
	}
	dModel, err := h.MustInt("hidden_size", "mamba_d_model")
	if err != nil {
		return nil, err
	}
	dConv, err := ssmInt(h, 4, "mamba_d_conv")
	if err != nil {
		return nil, err
	}
	expand, err := h.MustInt("mamba_expand")
	if err != nil {
		return nil, err
	}
	dState, err := ssmInt(h, 16, "mamba_d_state")
	if err != nil {
		return nil, err
	}
	dtRank, err := ssmInt(h, -floorDiv(dModel, -16), "mamba_dt_rank")
	if err != nil {
		return nil, err
	}
	nKV, err := h.MustInt("num_key_value_heads")
	if err != nil {
		return nil, err
	}
	offset, err := h.MustInt("attn_layer_offset")
	if err != nil {
		return nil, err
	}
	period, err := h.MustInt("attn_layer_period")
	if err != nil {
		return nil, err
	}
	if period <= 0 || offset < 0 {
		return nil, &ConfigError{Key: "attn_layer_period", Value: h["attn_layer_period"], Msg: "is not a positive period"}
	}
	kvVec := make([]any, m.blocks)
	for i := range kvVec {
		kvVec[i] = int64(0)
		if int64(i) >= offset && (int64(i)-offset)%period == 0 {
			kvVec[i] = nKV
		}
	}
	ctx, _, ok := h.Find("max_position_embeddings", "n_ctx")
	if !ok {
		return nil, fmt.Errorf("config.json: could not find any of %q", []string{"max_position_embeddings", "n_ctx"})
	}
	k := &kv{arch: m.arch}
	steps := []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"block_count", m.blocks, k.u32},
		{"context_length", ctx, k.u32},
		{"embedding_length", dModel, k.u32},
		{"feed_forward_length", h["intermediate_size"], k.u32},
		{"attention.head_count", h["num_attention_heads"], k.u32},
		{"attention.head_count_kv", kvVec, k.u32OrArray},
		{"ssm.conv_kernel", dConv, k.u32},
		{"ssm.inner_size", expand * dModel, k.u32},
		{"ssm.state_size", dState, k.u32},
		{"ssm.time_step_rank", dtRank, k.u32},
	}
	for _, s := range steps {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	var eps any = 1e-6
	if v, _, ok := h.Find("layer_norm_epsilon", "rms_norm_eps"); ok && v != nil {
		if f, err := asFloat(v); err != nil || f != 0 {
			eps = v
		}
	}
	if err := k.f32("attention.layer_norm_rms_epsilon", eps); err != nil {
		return nil, err
	}
	for _, e := range []struct {
		suffix string
		keys   []string
	}{
		{"expert_count", []string{"num_local_experts", "num_experts"}},
		{"expert_used_count", []string{"num_experts_per_tok", "num_experts_per_token"}},
	} {
		v, _, ok := h.Find(e.keys...)
		if !ok {
			return nil, fmt.Errorf("config.json: could not find any of %q", e.keys)
		}
		if err := k.u32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify is JambaModel.modify_tensors: Mini-Jamba's ".moe." names, the
// single expert of a dense block unwrapped, experts stacked (down, gate,
// up), the convolution squeezed, A_log made -exp(A_log).
func (m *jamba) Modify(in Input, bid int) ([]Output, error) {
	name := strings.ReplaceAll(in.Name, ".moe.", ".feed_forward.")
	if bid >= 0 {
		offset, err := m.h.MustInt("expert_layer_offset")
		if err != nil {
			return nil, err
		}
		period, err := m.h.MustInt("expert_layer_period")
		if err != nil {
			return nil, err
		}
		if period <= 0 {
			return nil, &ConfigError{Key: "expert_layer_period", Value: m.h["expert_layer_period"], Msg: "is not a positive period"}
		}
		if !(int64(bid) >= offset && (int64(bid)-offset)%period == 0) {
			name = strings.ReplaceAll(name, ".experts.0.", ".")
		}
	}
	if strings.Contains(name, ".feed_forward.experts.") {
		if m.experts == nil {
			n, err := expertCount(m.h, "num_local_experts", "num_experts")
			if err != nil {
				return nil, err
			}
			m.experts = newExpertStacker(n, m.blocks, []string{"down_proj", "gate_proj", "up_proj"}, m.names)
		}
		in.Name = name
		return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.feed_forward.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.mlp.experts.%s.weight", bid, wid)
		})
	}
	kind, gname, ok := m.names.Lookup(name)
	if !ok {
		return nil, m.unmapped(in.Name, bid)
	}
	out := identity(in, gname, bid)
	out.HFName = name
	if kind == KindSSMConv1D && strings.HasSuffix(gname, ".weight") {
		out.Shape = squeezeAll(in.Shape)
	}
	if strings.HasSuffix(name, ".A_log") {
		out.Build = elementwise(negExp(in.DType))
	}
	return []Output{out}, nil
}

func (m *jamba) Finish() error { return m.experts.finish() }

// graniteHybrid is GraniteHybridModel (conversion/granite.py): Granite 4
// and Bamba, Mamba-2 blocks among GraniteMoe attention blocks; its
// hparams are config.json as it is (Mamba2Model's __init__), and every
// lookup also tries the "mamba_"-prefixed key after the plain ones.
type graniteHybrid struct {
	*graniteMoe
	ssm       *mamba2
	attn      []bool
	hasSSM    bool
	vocab     int64
	vocabKind VocabKind
}

// hfind is GraniteHybridModel.find_hparam: the keys, then each with the
// "mamba_" prefix.
func hfind(h HParams, keys ...string) (any, string, bool) {
	all := append([]string{}, keys...)
	for _, k := range keys {
		all = append(all, "mamba_"+k)
	}
	return h.Find(all...)
}

// hint is hfind for a required integer.
func hint(h HParams, keys ...string) (int64, error) {
	v, k, ok := hfind(h, keys...)
	if !ok {
		return 0, fmt.Errorf("config.json: could not find any of %q", keys)
	}
	n, err := asInt(v)
	if err != nil || n < 0 || n > 1<<32-1 {
		return 0, &ConfigError{Key: k, Value: v, Msg: "is not a size"}
	}
	return n, nil
}

func newGraniteHybrid(h HParams, dir string) (Model, error) {
	return newGraniteHybridAs(h, dir, "granitehybrid", hybridAttnLayers)
}

// newGraniteHybridAs is GraniteHybridModel.__init__ under the GGUF
// architecture ggufArch, with a subclass's get_attn_layers.
func newGraniteHybridAs(h HParams, dir, ggufArch string, attnLayers func(HParams, int) ([]bool, error)) (*graniteHybrid, error) {
	g, err := newGraniteMoe(h, dir)
	if err != nil {
		return nil, err
	}
	m := &graniteHybrid{graniteMoe: g.(*graniteMoe)}
	names, err := NewNameMap(ggufArch, m.blocks)
	if err != nil {
		return nil, err
	}
	m.names = names
	m.arch = ggufArch
	if m.attn, err = attnLayers(h, m.blocks); err != nil {
		return nil, err
	}
	for _, a := range m.attn {
		m.hasSSM = m.hasSSM || !a
	}
	if !m.hasSSM {
		// Every layer attention: plain granite or granitemoe (the name map
		// stays granitehybrid's, as the converter built it first).
		m.arch = "granite"
		if v, _, ok := hfind(h, "num_experts_per_tok", "num_experts_per_token"); ok && Truthy(v) {
			m.arch = "granitemoe"
		}
	}
	dModel, err := hint(h, "mamba_head_dim", "hidden_size", "d_model")
	if err != nil {
		return nil, err
	}
	nGroup, err := hint(h, "n_groups", "num_groups")
	if err != nil {
		return nil, err
	}
	expand, err := hint(h, "expand", "num_heads")
	if err != nil {
		return nil, err
	}
	m.ssm = &mamba2{text: m.text, dModel: dModel, dInner: expand * dModel, expand: expand, nGroup: nGroup}
	m.ssm.names = names
	hp := maps.Clone(h)
	hp["pad_vocab_size_multiple"] = json.Number("1")
	if m.hasSSM {
		hp["pad_vocab_size_multiple"] = json.Number("8")
	}
	if m.vocab, err = paddedVocab(hp, 16); err != nil {
		return nil, err
	}
	if m.vocabKind, err = ssmVocab(dir, true); err != nil {
		return nil, err
	}
	return m, nil
}

// hybridAttnLayers is GraniteHybridModel.get_attn_layers: layer_types'
// "attention" entries, else attn_layer_indices, else every
// attn_layer_period-th layer from attn_layer_offset.
func hybridAttnLayers(h HParams, blocks int) ([]bool, error) {
	attn := make([]bool, blocks)
	if types, ok := h["layer_types"].([]any); ok && len(types) > 0 {
		for i, t := range types {
			if t == "attention" && i < blocks {
				attn[i] = true
			}
		}
		return attn, nil
	}
	if idx, ok := h["attn_layer_indices"].([]any); ok && len(idx) > 0 {
		for _, v := range idx {
			i, err := asInt(v)
			if err != nil {
				return nil, &ConfigError{Key: "attn_layer_indices", Value: h["attn_layer_indices"], Msg: "is not a list of layer numbers"}
			}
			if i >= 0 && i < int64(blocks) {
				attn[i] = true
			}
		}
		return attn, nil
	}
	period, err := asInt(h["attn_layer_period"])
	if err != nil || period <= 0 {
		return nil, fmt.Errorf("%w: no attn_layer_indices nor attn_layer_period (llama.cpp's converter asserts one)", ErrConfig)
	}
	offset, err := asInt(h["attn_layer_offset"])
	if err != nil {
		return nil, fmt.Errorf("%w: no attention layer offset set with attn_layer_period", ErrConfig)
	}
	for i := range attn {
		attn[i] = int64(i)%period == offset
	}
	return attn, nil
}

func (m *graniteHybrid) Vocab() VocabKind         { return m.vocabKind }
func (m *graniteHybrid) VocabSize() (int64, bool) { return m.vocab, true }

// Filter is Mamba2Model.filter_tensors, then GraniteModel's.
func (m *graniteHybrid) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "model.backbone") || strings.HasPrefix(name, "model.lm_head") {
		name = strings.TrimPrefix(name, "model.")
	}
	if stem, ok := strings.CutSuffix(name, ".dt_bias"); ok {
		name = stem + ".dt_proj.bias"
	}
	return m.graniteMoe.Filter(name)
}

// Params is GraniteHybridModel.set_gguf_parameters: GraniteMoeModel's
// keys, then the Mamba-2 sizes, per-layer head_count_kv, rope use.
func (m *graniteHybrid) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	kvs, err := m.graniteMoe.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, e := range []struct {
		suffix string
		keys   []string
	}{
		{"ssm.conv_kernel", []string{"conv_kernel", "d_conv"}},
		{"ssm.state_size", []string{"state_size", "d_state", "state_dim", "ssm_state_size"}},
	} {
		n, err := hint(h, e.keys...)
		if err != nil {
			return nil, err
		}
		if err := k.u32(e.suffix, n); err != nil {
			return nil, err
		}
	}
	if err := k.u32("ssm.group_count", m.ssm.nGroup); err != nil {
		return nil, err
	}
	if err := k.u32("ssm.inner_size", m.ssm.dInner); err != nil {
		return nil, err
	}
	nh, err := hint(h, "n_heads", "num_heads")
	if err != nil {
		return nil, err
	}
	if err := k.u32("ssm.time_step_rank", nh); err != nil {
		return nil, err
	}
	nKV, err := hint(h, "num_key_value_heads", "n_head_kv")
	if err != nil {
		return nil, err
	}
	kvVec := make([]any, m.blocks)
	for i, a := range m.attn {
		kvVec[i] = int64(0)
		if a {
			kvVec[i] = nKV
		}
	}
	if v, ok := h["attn_rotary_emb"]; ok && Truthy(v) {
		if err := k.u32("rope.dimension_count", v); err != nil {
			return nil, err
		}
	}
	if err := k.u32OrArray("attention.head_count_kv", kvVec); err != nil {
		return nil, err
	}
	useRope := !m.hasSSM
	if archs, ok := h["architectures"].([]any); ok && slices.Contains(archs, any("BambaForCausalLM")) {
		useRope = true
	}
	k.l.Set(k.key("rope.scaling.finetuned"), gguf.Bool(useRope))
	if !useRope {
		k.l.Set(k.key("context_length"), gguf.Uint32(1<<20))
	}
	if act, ok := h["hidden_act"]; ok && act != nil && act != "silu" {
		return nil, fmt.Errorf("%w: hidden_act %v: only SiLU activation supported (llama.cpp's converter asserts it)", ErrConfig, act)
	}
	dHead, err := ssmInt(h, 64, "d_head", "mamba_d_head")
	if err != nil {
		return nil, err
	}
	if m.ssm.dInner%dHead != 0 {
		return nil, fmt.Errorf("%w: SSM inner size %d not a multiple of head dim %d", ErrConfig, m.ssm.dInner, dHead)
	}
	return k.l.KVs(), nil
}

// Modify is GraniteHybridModel.modify_tensors: the fused and shared
// expert tensors and attention blocks as GraniteMoeModel, Mamba blocks as
// Mamba2Model, the rest as ModelBase.
func (m *graniteHybrid) Modify(in Input, bid int) ([]Output, error) {
	switch {
	case strings.HasSuffix(in.Name, "block_sparse_moe.input_linear.weight") || strings.Contains(in.Name, "shared_mlp"):
		return m.graniteMoe.Modify(in, bid)
	case bid >= 0 && bid < len(m.attn) && !m.attn[bid]:
		return m.ssm.Modify(in, bid)
	case bid >= 0 && bid < len(m.attn):
		return m.graniteMoe.Modify(in, bid)
	}
	return m.mapped(in, in.Name, bid, nil)
}

// falconH1 is FalconH1Model (conversion/falcon_h1.py): Mamba2Model with an
// attention branch and an MLP in every block, mamba_-prefixed keys and
// Falcon-H1's multipliers folded into the weights (in float32, as torch
// multiplies the widened tensors).
type falconH1 struct {
	*mamba2
	dHead int64
}

func newFalconH1(h HParams, dir string) (Model, error) {
	m2, err := newMamba2Prefixed(h, dir, "falcon-h1")
	if err != nil {
		return nil, err
	}
	m := &falconH1{mamba2: m2}
	if m.nGroup, err = hint(h, "n_groups"); err != nil {
		return nil, err
	}
	if m.dInner, err = hint(h, "mamba_d_ssm"); err != nil {
		return nil, err
	}
	if m.dHead, err = hint(h, "d_head"); err != nil {
		return nil, err
	}
	if _, err := hint(h, "intermediate_size"); err != nil {
		return nil, err
	}
	// FalconH1Model.set_vocab: the GPT-2 routine, vocab_size unpadded.
	m.vocabKind = VocabGPT2
	if m.vocab, err = paddedVocab(HParams{"vocab_size": h["vocab_size"], "pad_vocab_size_multiple": json.Number("1")}, 1); err != nil {
		return nil, err
	}
	return m, nil
}

// newMamba2Prefixed is Mamba2Model.__init__ under a subclass whose
// find_hparam also tries the "mamba_"-prefixed keys.
func newMamba2Prefixed(h HParams, dir, ggufArch string) (*mamba2, error) {
	t, err := newText(ggufArch, h, dir)
	if err != nil {
		return nil, err
	}
	m := &mamba2{text: t}
	if m.dModel, err = hint(h, "hidden_size", "d_model", "dim"); err != nil {
		return nil, err
	}
	get := func(def int64, keys ...string) (int64, error) {
		all := append([]string{}, keys...)
		for _, k := range keys {
			all = append(all, "mamba_"+k)
		}
		return ssmInt(h, def, all...)
	}
	if m.expand, err = get(2, "mamba_expand", "expand"); err != nil {
		return nil, err
	}
	if m.dInner, err = get(m.expand*m.dModel, "mamba_d_ssm", "intermediate_size", "d_inner"); err != nil {
		return nil, err
	}
	if m.nGroup, err = get(1, "n_groups"); err != nil {
		return nil, err
	}
	return m, nil
}

// Params is Mamba2Model.set_gguf_parameters (its asserts skipped for
// Falcon-H1), then FalconH1Model's keys, several replacing Mamba2's in
// place.
func (m *falconH1) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	get := func(def int64, keys ...string) (int64, error) {
		all := append([]string{}, keys...)
		for _, k := range keys {
			all = append(all, "mamba_"+k)
		}
		return ssmInt(h, def, all...)
	}
	dConv, err := get(4, "conv_kernel", "d_conv")
	if err != nil {
		return nil, err
	}
	dState, err := get(128, "state_size", "d_state")
	if err != nil {
		return nil, err
	}
	headDim, err := get(64, "mamba_d_head", "head_dim")
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	if err := mambaCommonParams(k, m.blocks, m.dModel, dConv, m.dInner, dState, m.dInner/headDim); err != nil {
		return nil, err
	}
	if err := k.u32("ssm.group_count", m.nGroup); err != nil {
		return nil, err
	}
	var eps any = 1e-5
	if v, _, ok := hfind(h, "layer_norm_epsilon", "rms_norm_eps"); ok && v != nil {
		if f, err := asFloat(v); err != nil || f != 0 {
			eps = v
		}
	}
	if err := k.f32("attention.layer_norm_rms_epsilon", eps); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	var ctx any = json.Number("0")
	if v, ok := h["max_position_embeddings"]; ok {
		ctx = v
	}
	for _, e := range []struct {
		suffix string
		v      any
	}{
		{"vocab_size", h["vocab_size"]}, {"block_count", m.blocks}, {"context_length", ctx},
		{"feed_forward_length", h["intermediate_size"]}, {"attention.head_count", h["num_attention_heads"]},
		{"attention.head_count_kv", h["num_key_value_heads"]}, {"attention.key_length", h["head_dim"]},
		{"attention.value_length", h["head_dim"]},
	} {
		if err := k.u32(e.suffix, e.v); err != nil {
			return nil, err
		}
	}
	if act, ok := h["hidden_act"]; ok && act != nil && act != "silu" {
		return nil, fmt.Errorf("%w: hidden_act %v: only SiLU activation supported (llama.cpp's converter asserts it)", ErrConfig, act)
	}
	if m.dHead <= 0 || m.dInner%m.dHead != 0 {
		return nil, fmt.Errorf("%w: SSM inner size %d not a multiple of head dim %d", ErrConfig, m.dInner, m.dHead)
	}
	theta, ok := m.ropeParams()["rope_theta"]
	if !ok || theta == nil {
		return nil, fmt.Errorf("%w: no rope_theta (FalconH1Model reads rope_parameters[\"rope_theta\"])", ErrConfig)
	}
	if err := k.f32("rope.freq_base", theta); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is FalconH1Model.modify_tensors: Mamba2Model's output, then the
// multiplier its name calls for (the first match, in the converter's
// order).
func (m *falconH1) Modify(in Input, bid int) ([]Output, error) {
	outs, err := m.mamba2.Modify(in, bid)
	if err != nil || len(outs) != 1 {
		return outs, err
	}
	name := in.Name
	h := m.h
	num := func(key string) (float32, error) {
		v, k, ok := hfind(h, key)
		f, err := asFloat(v)
		if !ok || err != nil {
			return 0, &ConfigError{Key: k, Value: v, Msg: "is not a multiplier"}
		}
		return float32(f), nil
	}
	list := func(key string, n int) ([]float32, error) {
		v, k, _ := hfind(h, key)
		xs, ok := v.([]any)
		if !ok || len(xs) < n {
			return nil, &ConfigError{Key: k, Value: v, Msg: fmt.Sprintf("is not a list of %d multipliers", n)}
		}
		out := make([]float32, len(xs))
		for i, x := range xs {
			f, err := asFloat(x)
			if err != nil {
				return nil, &ConfigError{Key: k, Value: v, Msg: "is not a list of multipliers"}
			}
			out[i] = float32(f)
		}
		return out, nil
	}
	var muls []float32 // applied in turn to every value
	var rowMul func(row int64) float32
	switch {
	case strings.Contains(name, "down_proj"), strings.Contains(name, "gate_proj"):
		ms, err := list("mlp_multipliers", 2)
		if err != nil {
			return nil, err
		}
		if strings.Contains(name, "down_proj") {
			muls = []float32{ms[1]}
		} else {
			muls = []float32{ms[0]}
		}
	case strings.Contains(name, "k_proj"):
		km, err := num("key_multiplier")
		if err != nil {
			return nil, err
		}
		am, err := num("attention_in_multiplier")
		if err != nil {
			return nil, err
		}
		muls = []float32{km, am}
	case strings.Contains(name, "q_proj"), strings.Contains(name, "v_proj"):
		am, err := num("attention_in_multiplier")
		if err != nil {
			return nil, err
		}
		muls = []float32{am}
	case strings.Contains(name, "o_proj"), strings.Contains(name, "out_proj"):
		key := "attention_out_multiplier"
		if !strings.Contains(name, "o_proj") {
			key = "ssm_out_multiplier"
		}
		om, err := num(key)
		if err != nil {
			return nil, err
		}
		muls = []float32{om}
	case strings.Contains(name, "in_proj"):
		im, err := num("ssm_in_multiplier")
		if err != nil {
			return nil, err
		}
		muls = []float32{im}
		zx, err := list("ssm_multipliers", 5)
		if err != nil {
			return nil, err
		}
		dSSM, err := h.MustInt("mamba_d_ssm")
		if err != nil {
			return nil, err
		}
		groups, err := h.MustInt("mamba_n_groups")
		if err != nil {
			return nil, err
		}
		dState, err := h.MustInt("mamba_d_state")
		if err != nil {
			return nil, err
		}
		gts := groups * dState
		bounds := []int64{dSSM, 2 * dSSM, 2*dSSM + gts, 2*dSSM + 2*gts}
		rowMul = func(row int64) float32 {
			for i, b := range bounds {
				if row < b {
					return zx[i]
				}
			}
			return zx[4]
		}
	case strings.Contains(name, "lm_head"), strings.Contains(name, "embed_tokens"):
		key := "lm_head_multiplier"
		if !strings.Contains(name, "lm_head") {
			key = "embedding_multiplier"
		}
		v, ok := h[key]
		f, err := asFloat(v)
		if !ok || err != nil {
			return nil, &ConfigError{Key: key, Value: v, Msg: "is not a multiplier"}
		}
		muls = []float32{float32(f)}
	default:
		return outs, nil
	}
	out := &outs[0]
	prev := out.Build
	rowLen := int64(1)
	if len(in.Shape) > 1 {
		rowLen = numel(in.Shape[1:])
	}
	out.Build = func(srcs [][]float32) ([]float32, error) {
		vals := srcs[0]
		if prev != nil {
			var err error
			if vals, err = prev(srcs); err != nil {
				return nil, err
			}
		}
		dst := make([]float32, len(vals))
		for i, v := range vals {
			for _, f := range muls {
				v *= f
			}
			if rowMul != nil {
				v *= rowMul(int64(i) / rowLen)
			}
			dst[i] = v
		}
		return dst, nil
	}
	return outs, nil
}
