package arch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	registerRaw(newMamba, "MambaForCausalLM", "MambaLMHeadModel", "FalconMambaForCausalLM")
	registerRaw(newMamba2, "Mamba2ForCausalLM")
}

// VocabSizer is implemented by a model whose set_vocab changes the
// vocabulary size before the tokenizer routine reads it (Mamba pads it to
// a multiple of pad_vocab_size_multiple).
type VocabSizer interface {
	VocabSize() (int64, bool)
}

// Tensor kinds of the state-space blocks.
const (
	kindSSMA    Kind = "SSM_A"
	kindSSMD    Kind = "SSM_D"
	kindSSMNorm Kind = "SSM_NORM"
)

// ssmInt is find_hparam(keys, optional=True) or def: a key that is absent,
// null or zero gives def.
func ssmInt(h HParams, def int64, keys ...string) (int64, error) {
	v, k, ok := h.Find(keys...)
	if !ok || v == nil || v == false {
		return def, nil
	}
	n, err := asInt(v)
	if err != nil {
		return 0, &ConfigError{Key: k, Value: v, Msg: "is not an integer"}
	}
	if n == 0 {
		return def, nil
	}
	if n < 0 || n > 1<<32-1 {
		return 0, &ConfigError{Key: k, Value: v, Msg: "is out of range"}
	}
	return n, nil
}

// paddedVocab is the set_vocab of MambaModel and Mamba2Model: vocab_size
// rounded up to a multiple of pad_vocab_size_multiple (default def).
func paddedVocab(h HParams, def int64) (int64, error) {
	v, ok := h["vocab_size"]
	n, err := asInt(v)
	if !ok || err != nil || n < 0 || n > 1<<31 {
		return 0, &ConfigError{Key: "vocab_size", Value: v, Msg: "is not a vocabulary size"}
	}
	pad := def
	if p, ok := h["pad_vocab_size_multiple"]; ok {
		if pad, err = asInt(p); err != nil || pad <= 0 || pad > 1<<20 {
			return 0, &ConfigError{Key: "pad_vocab_size_multiple", Value: p, Msg: "is not a positive integer"}
		}
	}
	return (n + pad - 1) / pad * pad, nil
}

// ssmVocab picks the tokenizer routine of MambaModel.set_vocab (tokenizer.json
// first) or Mamba2Model's (tokenizer.model first). Without either the
// converter reads llama.cpp's bundled GPT-NeoX vocabulary, which ggufkit
// does not have.
func ssmVocab(dir string, modelFirst bool) (VocabKind, error) {
	has := func(f string) bool {
		st, err := os.Stat(filepath.Join(dir, f))
		return err == nil && st.Mode().IsRegular()
	}
	switch {
	case modelFirst && has("tokenizer.model"):
		return VocabSentencePiece, nil
	case modelFirst && has("tokenizer.model.v3"):
		return "", fmt.Errorf("%w: rename tokenizer.model.v3 to tokenizer.model (as llama.cpp's converter asks)", ErrConfig)
	case has("tokenizer.json"):
		return VocabGPT2, nil
	case has("tokenizer.model"):
		return VocabSentencePiece, nil
	}
	return "", fmt.Errorf("%w: no tokenizer.json nor tokenizer.model: llama.cpp's converter would use its bundled "+
		"GPT-NeoX vocabulary (models/ggml-vocab-gpt-neox.gguf), which ggufkit does not have", ErrConfig)
}

// mamba is MambaModel (conversion/mamba.py): Mamba-1 and Falcon-Mamba,
// whose hparams are config.json as it is (no AutoConfig).
type mamba struct {
	text
	vocab     int64
	vocabKind VocabKind
	tokEmbd   *Input
}

func newMamba(h HParams, dir string) (Model, error) {
	t, err := newText("mamba", h, dir)
	if err != nil {
		return nil, err
	}
	m := &mamba{text: t}
	if m.vocab, err = paddedVocab(h, 8); err != nil {
		return nil, err
	}
	if m.vocabKind, err = ssmVocab(dir, false); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *mamba) Vocab() VocabKind         { return m.vocabKind }
func (m *mamba) VocabSize() (int64, bool) { return m.vocab, true }

// Params is MambaModel.set_gguf_parameters, which does not call
// TextModel's.
func (m *mamba) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	dModel, err := h.MustInt("hidden_size", "d_model")
	if err != nil {
		return nil, err
	}
	dConv, err := ssmInt(h, 4, "conv_kernel", "d_conv")
	if err != nil {
		return nil, err
	}
	dInner, err := ssmInt(h, 2*dModel, "intermediate_size", "d_inner")
	if err != nil {
		return nil, err
	}
	dState, err := ssmInt(h, 16, "state_size", "d_state")
	if err != nil {
		return nil, err
	}
	dtRank, err := ssmInt(h, -floorDiv(dModel, -16), "time_step_rank", "dt_rank")
	if err != nil {
		return nil, err
	}
	if dInner != 2*dModel {
		// The converter asserts a block expansion factor of 2.
		return nil, fmt.Errorf("%w: d_inner %d is not 2 x d_model %d (llama.cpp's converter asserts it)", ErrConfig, dInner, dModel)
	}
	k := &kv{arch: m.arch}
	if err := mambaCommonParams(k, m.blocks, dModel, dConv, dInner, dState, dtRank); err != nil {
		return nil, err
	}
	if err := ssmEps(k, h); err != nil {
		return nil, err
	}
	mt, _ := h["model_type"].(string)
	k.l.Set(k.key("ssm.dt_b_c_rms"), gguf.Bool(mt == "falcon_mamba"))
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// mambaCommonParams writes the keys MambaModel and Mamba2Model share, up
// to the time-step rank.
func mambaCommonParams(k *kv, blocks int, dModel, dConv, dInner, dState, dtRank int64) error {
	k.l.Set(k.key("context_length"), gguf.Uint32(1<<20)) // the converter's arbitrary value
	for _, e := range []struct {
		suffix string
		v      int64
	}{
		{"embedding_length", dModel}, {"feed_forward_length", 0}, {"attention.head_count", 0},
		{"block_count", int64(blocks)}, {"ssm.conv_kernel", dConv}, {"ssm.inner_size", dInner},
		{"ssm.state_size", dState}, {"ssm.time_step_rank", dtRank},
	} {
		if err := k.u32(e.suffix, e.v); err != nil {
			return err
		}
	}
	return nil
}

// ssmEps is find_hparam(["layer_norm_epsilon", "rms_norm_eps"]) or 1e-5.
func ssmEps(k *kv, h HParams) error {
	var eps any = 1e-5
	if v, _, ok := h.Find("layer_norm_epsilon", "rms_norm_eps"); ok && v != nil {
		if f, err := asFloat(v); err != nil || f != 0 {
			eps = v
		}
	}
	return k.f32("attention.layer_norm_rms_epsilon", eps)
}

// Modify is MambaModel.modify_tensors: A_log made -exp(A_log), the
// convolution squeezed, and the output left out when it equals the token
// embedding seen before it.
func (m *mamba) Modify(in Input, bid int) ([]Output, error) {
	kind, gname, ok := m.names.Lookup(in.Name)
	if !ok {
		return nil, m.unmapped(in.Name, bid)
	}
	out := identity(in, gname, bid)
	if strings.HasSuffix(in.Name, ".A_log") {
		out.Build = elementwise(negExp(in.DType))
	}
	if kind == KindSSMConv1D && strings.HasSuffix(gname, ".weight") {
		out.Shape = squeezeAll(in.Shape)
	}
	switch {
	case kind == KindOutput && m.tokEmbd != nil:
		out.DropIfEqual = m.tokEmbd
	case kind == KindTokenEmbd:
		e := in
		m.tokEmbd = &e
	}
	return []Output{out}, nil
}

// elementwise is a Build applying f to every value of the single source.
func elementwise(f func(float32) float32) func([][]float32) ([]float32, error) {
	return func(srcs [][]float32) ([]float32, error) {
		dst := make([]float32, len(srcs[0]))
		for i, v := range srcs[0] {
			dst[i] = f(v)
		}
		return dst, nil
	}
}

// reshaped is the Build of a tensor given another shape with the same
// values (torch's reshape): its rows differ from its source's.
func reshaped(srcs [][]float32) ([]float32, error) { return srcs[0], nil }

// mamba2 is Mamba2Model (conversion/mamba.py): Mamba-2, whose hparams are
// config.json as it is.
type mamba2 struct {
	text
	vocab     int64
	vocabKind VocabKind
	dModel    int64
	dInner    int64
	expand    int64
	nGroup    int64
}

func newMamba2(h HParams, dir string) (Model, error) {
	t, err := newText("mamba2", h, dir)
	if err != nil {
		return nil, err
	}
	m := &mamba2{text: t}
	if m.dModel, err = h.MustInt("hidden_size", "d_model", "dim"); err != nil {
		return nil, err
	}
	if m.expand, err = ssmInt(h, 2, "mamba_expand", "expand"); err != nil {
		return nil, err
	}
	if m.dInner, err = ssmInt(h, m.expand*m.dModel, "mamba_d_ssm", "intermediate_size", "d_inner"); err != nil {
		return nil, err
	}
	if m.nGroup, err = ssmInt(h, 1, "n_groups"); err != nil {
		return nil, err
	}
	if m.vocab, err = paddedVocab(h, 16); err != nil {
		return nil, err
	}
	if m.vocabKind, err = ssmVocab(dir, true); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *mamba2) Vocab() VocabKind         { return m.vocabKind }
func (m *mamba2) VocabSize() (int64, bool) { return m.vocab, true }

// Params is Mamba2Model.set_gguf_parameters.
func (m *mamba2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	dConv, err := ssmInt(h, 4, "conv_kernel", "d_conv")
	if err != nil {
		return nil, err
	}
	dState, err := ssmInt(h, 128, "state_size", "d_state")
	if err != nil {
		return nil, err
	}
	headDim, err := ssmInt(h, 64, "mamba_d_head", "head_dim")
	if err != nil {
		return nil, err
	}
	if m.dInner != m.expand*m.dModel || m.dInner%headDim != 0 {
		return nil, fmt.Errorf("%w: d_inner %d must be expand %d x d_model %d and a multiple of head_dim %d (llama.cpp's converter asserts it)",
			ErrConfig, m.dInner, m.expand, m.dModel, headDim)
	}
	k := &kv{arch: m.arch}
	if err := mambaCommonParams(k, m.blocks, m.dModel, dConv, m.dInner, dState, m.dInner/headDim); err != nil {
		return nil, err
	}
	if err := k.u32("ssm.group_count", m.nGroup); err != nil {
		return nil, err
	}
	if err := ssmEps(k, h); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Filter is Mamba2Model.filter_tensors: Mamba-Codestral's "model." prefix
// dropped, dt_bias renamed to the dt projection's bias; then TextModel's.
func (m *mamba2) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "model.backbone") || strings.HasPrefix(name, "model.lm_head") {
		name = strings.TrimPrefix(name, "model.")
	}
	if stem, ok := strings.CutSuffix(name, ".dt_bias"); ok {
		name = stem + ".dt_proj.bias"
	}
	return m.text.Filter(name)
}

// Modify is Mamba2Model.modify_tensors: the convolution squeezed, A and D
// given a trailing dimension of 1, the gated norm split per group, A_log
// made -exp(A_log).
func (m *mamba2) Modify(in Input, bid int) ([]Output, error) {
	kind, gname, ok := m.names.Lookup(in.Name)
	if !ok {
		return nil, m.unmapped(in.Name, bid)
	}
	out := identity(in, gname, bid)
	weight := strings.HasSuffix(gname, ".weight")
	switch {
	case kind == KindSSMConv1D && weight:
		out.Shape = squeezeAll(in.Shape)
	case (kind == kindSSMA || kind == kindSSMD) && m.isBare(kind, gname, bid):
		out.Shape = append(out.Shape, 1)
		out.Build = reshaped
	case kind == kindSSMNorm && weight:
		if m.nGroup <= 0 || numel(in.Shape) != m.dInner || m.dInner%m.nGroup != 0 {
			return nil, fmt.Errorf("%w: tensor %q of shape %v cannot be reshaped to (%d, %d / %d)", ErrConfig, in.Name, in.Shape, m.nGroup, m.dInner, m.nGroup)
		}
		out.Shape = []int64{m.nGroup, m.dInner / m.nGroup}
		out.Build = reshaped
	}
	if strings.HasSuffix(in.Name, ".A_log") {
		out.Build = elementwise(negExp(in.DType))
	}
	return []Output{out}, nil
}

// isBare is match_model_tensor_name with suffix "": gname is the kind's
// name in block bid without a ".weight" or ".bias" suffix.
func (m *mamba2) isBare(k Kind, gname string, bid int) bool {
	name, err := m.names.Format(k, bid, "")
	return err == nil && name == gname
}
