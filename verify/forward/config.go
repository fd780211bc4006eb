package forward

import (
	"errors"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Sentinel errors.
var (
	// ErrUnsupported marks a model this package cannot run: an architecture,
	// a RoPE scaling or a layout it does not implement.
	ErrUnsupported = errors.New("forward: unsupported model")
	// ErrMetadata marks metadata llama.cpp would refuse: a missing required
	// key, a key of the wrong type, an impossible value.
	ErrMetadata = errors.New("forward: bad metadata")
	// ErrWeights marks a missing tensor or one of the wrong shape.
	ErrWeights = errors.New("forward: bad weights")
)

// Metadata is what ParseConfig reads: a GGUF's key/value pairs
// (*ggufread.File satisfies it; KVMap wraps a list).
type Metadata interface {
	KV(key string) (gguf.Value, bool)
}

// KVMap makes a Metadata of a list of pairs (the last of duplicate keys wins).
func KVMap(kvs []gguf.KV) Metadata {
	m := make(kvMap, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

type kvMap map[string]gguf.Value

func (m kvMap) KV(key string) (gguf.Value, bool) { v, ok := m[key]; return v, ok }

// Config holds the hyperparameters of a model as llama.cpp derives them from
// GGUF metadata (llama_model_base::load_hparams, the architecture's
// load_arch_hparams and the context defaults of llama_context's constructor).
type Config struct {
	// Arch is general.architecture.
	Arch string
	// Vocab is the number of tokens (the length of tokenizer.ggml.tokens, else
	// {arch}.vocab_size).
	Vocab int
	// Embd, Layers, CtxTrain, FF: embedding width, block count, training
	// context and feed-forward width.
	Embd, Layers, CtxTrain, FF int
	// Heads and HeadsKV are the query and key/value head counts; HeadDimK and
	// HeadDimV the per-head widths; Rot the number of rotated dimensions.
	Heads, HeadsKV, HeadDimK, HeadDimV, Rot int
	// NormEps is the RMS-norm epsilon, or the layer-norm epsilon for gpt2.
	NormEps float32
	// RopeScaling is the scaling type ("none", "linear", "yarn", "longrope").
	RopeScaling string
	// RopeBase and RopeFreqScale are the full-attention layers' frequency base
	// and scale (1/factor); the SWA values are for sliding-window layers.
	RopeBase, RopeFreqScale       float32
	RopeBaseSWA, RopeFreqScaleSWA float32
	// RopeExtFactor, RopeAttnFactor, RopeBetaFast and RopeBetaSlow are the
	// YaRN parameters llama_context derives; RopeOrigCtx is n_ctx_orig_yarn.
	RopeExtFactor, RopeAttnFactor, RopeBetaFast, RopeBetaSlow float32
	RopeOrigCtx                                               int
	// AttnScale multiplies QK (or Q, for architectures that scale Q).
	AttnScale float32
	// AttnSoftcap and FinalSoftcap cap attention scores and output logits
	// with c·tanh(x/c); 0 means no capping.
	AttnSoftcap, FinalSoftcap float32
	// LogitScale multiplies the output logits (cohere2's logit_scale); 0
	// means none.
	LogitScale float32
	// EmbedScale multiplies the token embeddings and ResidualScale each
	// block's attention and FFN outputs before their residual add (granite's
	// embedding_scale and residual_scale); 0 means none.
	EmbedScale, ResidualScale float32
	// Experts and ExpertsUsed are the mixture-of-experts counts (0 for a
	// dense model); FFExp and FFShared the widths of each routed expert and
	// of the shared expert (qwen2moe).
	Experts, ExpertsUsed, FFExp, FFShared int
	// ClampKQV clamps Q, K and V to ±ClampKQV after their projections
	// (olmo's clip_qkv); 0 means no clamping.
	ClampKQV float32
	// MaxAlibiBias is the ALiBi maximum bias (bloom's fixed 8); 0 means
	// no ALiBi.
	MaxAlibiBias float32
	// ParallelResidual runs attention and FFN on the same layer input
	// (gptneox's use_parallel_residual).
	ParallelResidual bool
	// SlidingWindow is the window of the layers marked in SWA.
	SlidingWindow int
	SWA           []bool
	// Multi-head latent attention (deepseek2): the query and key/value LoRA
	// ranks (QLora 0: a plain attn_q), the per-head query/key and value
	// widths after decompression (HeadDimK and HeadDimV are the latent
	// MQA's), and YaRN's mscale_all_dim (rope.scaling.yarn_log_multiplier
	// / 0.1).
	QLora, KVLora, HeadDimKMLA, HeadDimVMLA int
	YarnLogMul                              float32
	// NextN is the number of multi-token-prediction blocks after Layers
	// (nextn_predict_layers): their tensors may be present, they are not
	// run (llama.cpp skips them unless asked to load them).
	NextN int
	// DenseLead is the number of leading blocks with a dense FFN;
	// ExpertShared the shared experts (of width FFExp each) after them.
	DenseLead, ExpertShared int
	// ExpertGating is the router's gating function (1 soft-max, 2 sigmoid);
	// ExpertWeightsNorm and ExpertWeightsScale renormalise and scale the
	// selected weights; ExpertGroups and GroupsUsed restrict the choice to
	// the best groups of experts.
	ExpertGating             int
	ExpertWeightsNorm        bool
	ExpertWeightsScale       float32
	ExpertGroups, GroupsUsed int

	// yarnUntruncated leaves YaRN's correction range unrounded, as
	// transformers does for a rope config with "truncate": false
	// (gpt-oss). llama.cpp always rounds it (ggml_rope_yarn_corr_dims), and
	// so does this package; only a test sets it, to show that the rest of
	// a gpt-oss forward pass agrees with transformers to float32 precision.
	yarnUntruncated bool
	// Chunked makes the SWA layers attend within chunks of SlidingWindow
	// positions (LLAMA_SWA_TYPE_CHUNKED, llama4) instead of a window.
	Chunked bool
	// MoEStep is llama4's interleave_moe_layer_step: with experts, block il
	// routes its FFN when (il+1) % MoEStep == 0 (0: every block).
	MoEStep int
	// NoRope marks the blocks without RoPE (llama4's NoPE layers); nil: none.
	NoRope []bool
	// L2QK RMS-normalises each Q and K head, without a weight, after RoPE
	// on the blocks with RoPE (llama4's use_kq_norm).
	L2QK bool
	// Temperature tuning (build_inp_attn_scale): on the blocks marked in
	// TempLayers, Q is multiplied by
	// log(floor((pos+AttnTempOffset)/AttnTempFloor)+1)·AttnTempScale+1.
	AttnTempScale, AttnTempOffset float32
	AttnTempFloor                 int
	TempLayers                    []bool
	// Recurrent marks a hybrid's recurrent blocks (nil: none); ShortConv
	// is lfm2's short-convolution kernel width (shortconv.l_cache).
	Recurrent []bool
	ShortConv int
	// FFNBlocks marks the FFN-only blocks of a soloBlocks architecture
	// (nil: none).
	FFNBlocks []bool
	// XIELU holds each block's xIELU parameters as ggml_xielu uses them:
	// alpha_n, alpha_p, beta, eps (apertus).
	XIELU [][4]float32

	arch *archInfo
	// rope is the rotation the layers use: the architecture's, or NeoX
	// for M-RoPE over text positions (glm4 with rope.dimension_sections).
	rope ropeMode
	// g4 holds gemma4's per-layer hyperparameters (gemma4.go).
	g4 *gemma4Config
	// g3n holds gemma3n's AltUp, LAuReL and per-layer sizes (gemma3n.go).
	g3n *gemma3nConfig
	// ssm holds mamba's and mamba2's state-space sizes (ssm.go).
	ssm *ssmConfig
	// rwkv holds rwkv6's and rwkv7's sizes (rwkv7.go).
	rwkv *rwkvConfig
	// rssm holds the sizes of a hybrid's Mamba-2 or gated delta net blocks
	// (for the delta net: d_state is the head width, dt_rank the value
	// heads, n_group the key heads).
	rssm *ssmConfig
}

// kvReader reads keys with llama.cpp's type rules (llama_model_loader::get_key
// throws "key %s has wrong type" unless the stored type is exactly the one asked for).
type kvReader struct {
	md   Metadata
	arch string
}

func (r *kvReader) key(suffix string) string { return gguf.ArchKey(r.arch, suffix) }

func (r *kvReader) lookup(key string, want gguf.ValueType, required bool) (gguf.Value, bool, error) {
	v, ok := r.md.KV(key)
	if !ok {
		if required {
			return v, false, fmt.Errorf("%w: key not found in model: %s", ErrMetadata, key)
		}
		return v, false, nil
	}
	if v.Type() != want {
		return v, false, fmt.Errorf("%w: key %s has wrong type %s but expected type %s", ErrMetadata, key, v.Type(), want)
	}
	return v, true, nil
}

// u32 reads a uint32 key into *dst (left unchanged when absent and optional).
func (r *kvReader) u32(key string, dst *int, required bool) (bool, error) {
	v, ok, err := r.lookup(key, gguf.TypeUint32, required)
	if !ok {
		return false, err
	}
	n, _ := v.Int()
	*dst = int(n)
	return true, nil
}

// f32 reads a float32 key into *dst.
func (r *kvReader) f32(key string, dst *float32, required bool) (bool, error) {
	v, ok, err := r.lookup(key, gguf.TypeFloat32, required)
	if !ok {
		return false, err
	}
	f, _ := v.Float()
	*dst = float32(f)
	return true, nil
}

// boolean reads a bool key into *dst.
func (r *kvReader) boolean(key string, dst *bool, required bool) (bool, error) {
	v, ok, err := r.lookup(key, gguf.TypeBool, required)
	if !ok {
		return false, err
	}
	*dst, _ = v.BoolValue()
	return true, nil
}

// str reads a string key into *dst.
func (r *kvReader) str(key string, dst *string, required bool) (bool, error) {
	v, ok, err := r.lookup(key, gguf.TypeString, required)
	if !ok {
		return false, err
	}
	*dst, _ = v.Str()
	return true, nil
}

// u32OrArr reads a per-layer count given as one uint32 or an array of n
// (llama_model_loader::get_key_or_arr). Layers with different values are a
// layout this package does not implement.
func (r *kvReader) u32OrArr(key string, dst *int, n int, required bool) error {
	v, ok := r.md.KV(key)
	if !ok || !v.IsArray() {
		_, err := r.u32(key, dst, required)
		return err
	}
	if e := v.ElemType(); e != gguf.TypeUint32 && e != gguf.TypeInt32 {
		return fmt.Errorf("%w: %s has wrong array element type %s", ErrMetadata, key, e)
	}
	xs, _ := v.Ints()
	if len(xs) != n {
		return fmt.Errorf("%w: key %s has wrong array length; expected %d, got %d", ErrMetadata, key, n, len(xs))
	}
	for _, x := range xs[1:] {
		if x != xs[0] {
			return fmt.Errorf("%w: %s differs between layers", ErrUnsupported, key)
		}
	}
	*dst = int(xs[0])
	return nil
}

// f32OrArr reads a per-layer float given as one float32 or an array of n
// float32 (llama_model_loader::get_key_or_arr, required).
func (r *kvReader) f32OrArr(key string, n int) ([]float32, error) {
	v, ok := r.md.KV(key)
	if !ok {
		return nil, fmt.Errorf("%w: key not found in model: %s", ErrMetadata, key)
	}
	out := make([]float32, n)
	if !v.IsArray() {
		var x float32
		if _, err := r.f32(key, &x, true); err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = x
		}
		return out, nil
	}
	if v.ElemType() != gguf.TypeFloat32 {
		return nil, fmt.Errorf("%w: %s has wrong array element type %s", ErrMetadata, key, v.ElemType())
	}
	xs, _ := v.Any().([]float32)
	if len(xs) != n {
		return nil, fmt.Errorf("%w: key %s has wrong array length; expected %d, got %d", ErrMetadata, key, n, len(xs))
	}
	copy(out, xs)
	return out, nil
}

// maxLayers is LLAMA_MAX_LAYERS; maxDim bounds every other count so that
// products of two of them stay far from overflow.
const (
	maxLayers = 512
	maxDim    = 1 << 24
)

// ParseConfig reads a model's hyperparameters from its metadata. It refuses
// what llama.cpp's loader refuses (missing or wrongly typed keys, n_rot ≠
// head size for llama) with ErrMetadata, and architectures or options this
// package does not implement with ErrUnsupported.
func ParseConfig(md Metadata) (*Config, error) {
	r := &kvReader{md: md}
	if _, err := r.str(gguf.KeyGeneralArchitecture, &r.arch, true); err != nil {
		return nil, err
	}
	if r.arch == "gemma4" {
		return parseGemma4(r)
	}
	if ssmArch(r.arch) {
		return parseSSM(r)
	}
	if r.arch == "rwkv6" || r.arch == "rwkv6qwen2" || r.arch == "rwkv7" || r.arch == "arwkv7" {
		return parseRWKV(r)
	}
	a, ok := archs[r.arch]
	if !ok {
		return nil, fmt.Errorf("%w: architecture %q (supported: %s)", ErrUnsupported, r.arch, archNames())
	}
	c := &Config{Arch: r.arch, arch: a, rope: a.rope}
	if err := c.readCommon(r); err != nil {
		return nil, err
	}
	if err := a.hparams(c, r); err != nil {
		return nil, err
	}
	if err := c.deriveRope(); err != nil {
		return nil, err
	}
	if a.mla {
		c.AttnScale = c.mlaKQScale()
	}
	return c, nil
}

// readCommon mirrors llama_model_base::load_hparams for the keys every
// architecture here shares.
func (c *Config) readCommon(r *kvReader) error {
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{gguf.SuffixContextLength, &c.CtxTrain}, {gguf.SuffixEmbeddingLength, &c.Embd}, {gguf.SuffixBlockCount, &c.Layers}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers {
		return fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(gguf.SuffixBlockCount), c.Layers, maxLayers)
	}
	if err := c.readExperts(r); err != nil {
		return err
	}
	if c.arch.soloBlocks {
		if err := c.readBlockFF(r); err != nil {
			return err
		}
	} else if err := r.u32OrArr(r.key(gguf.SuffixFeedForwardLength), &c.FF, c.Layers, false); err != nil {
		return err
	}
	if err := r.u32OrArr(r.key(gguf.SuffixHeadCount), &c.Heads, c.Layers, false); err != nil {
		return err
	}
	c.HeadsKV = c.Heads
	if c.arch.recurrentKV {
		if err := c.readRecurrentKV(r); err != nil {
			return err
		}
	} else if err := r.u32OrArr(r.key(gguf.SuffixHeadCountKV), &c.HeadsKV, c.Layers, false); err != nil {
		return err
	}
	if c.Heads <= 0 || c.HeadsKV <= 0 || c.Heads%c.HeadsKV != 0 {
		return fmt.Errorf("%w: %d heads and %d key/value heads", ErrMetadata, c.Heads, c.HeadsKV)
	}
	if err := c.readVocab(r); err != nil {
		return err
	}

	c.RopeOrigCtx = c.CtxTrain
	if _, err := r.u32(r.key(gguf.SuffixRopeScalingOrigCtx), &c.RopeOrigCtx, false); err != nil {
		return err
	}
	c.RopeBase = 10000
	if _, err := r.f32(r.key(gguf.SuffixRopeFreqBase), &c.RopeBase, false); err != nil {
		return err
	}
	c.RopeScaling = "linear"
	if _, err := r.str(r.key(gguf.SuffixRopeScalingType), &c.RopeScaling, false); err != nil {
		return err
	}
	switch c.RopeScaling {
	case "none", "linear", "yarn", "longrope":
	default:
		return fmt.Errorf("%w: unknown RoPE scaling type %q", ErrMetadata, c.RopeScaling)
	}
	var factor float32
	found, err := r.f32(r.key(gguf.SuffixRopeScalingFactor), &factor, false)
	if err != nil {
		return err
	}
	if !found {
		if _, err := r.f32(r.key("rope.scale_linear"), &factor, false); err != nil {
			return err
		}
	}
	c.RopeFreqScale = 1
	if factor != 0 {
		c.RopeFreqScale = 1 / factor
	}
	c.RopeAttnFactor = 1
	if _, err := r.f32(r.key(gguf.SuffixRopeScalingAttn), &c.RopeAttnFactor, false); err != nil {
		return err
	}
	// hparams defaults for the SWA rope (llama-hparams.h).
	c.RopeBaseSWA, c.RopeFreqScaleSWA = 10000, 1

	c.HeadDimK = c.Embd / c.Heads
	c.HeadDimV = c.Embd / c.Heads
	if _, err := r.u32(r.key(gguf.SuffixKeyLength), &c.HeadDimK, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key(gguf.SuffixValueLength), &c.HeadDimV, false); err != nil {
		return err
	}
	c.Rot = c.HeadDimK
	if _, err := r.u32(r.key(gguf.SuffixRopeDimensionCount), &c.Rot, false); err != nil {
		return err
	}
	ff := c.FF
	if c.Experts > 0 && ff == 0 {
		ff = 1 // a mixture of experts may give only expert widths
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"context_length", c.CtxTrain}, {"embedding_length", c.Embd}, {"feed_forward_length", ff},
		{"attention.head_count", c.Heads}, {"key_length", c.HeadDimK}, {"value_length", c.HeadDimV}, {"vocab", c.Vocab}} {
		if d.v <= 0 || d.v > maxDim {
			return fmt.Errorf("%w: %s %s = %d (must be 1..%d)", ErrMetadata, c.Arch, d.name, d.v, maxDim)
		}
	}
	if c.Heads > maxDim/c.HeadDimK || c.Heads > maxDim/c.HeadDimV {
		return fmt.Errorf("%w: %d heads of width %d/%d", ErrMetadata, c.Heads, c.HeadDimK, c.HeadDimV)
	}
	if c.Rot < 0 || c.Rot > c.HeadDimK || c.Rot%2 != 0 {
		return fmt.Errorf("%w: rope.dimension_count %d for heads of width %d", ErrMetadata, c.Rot, c.HeadDimK)
	}
	if c.arch.checkRot && c.Rot != c.HeadDimK {
		return fmt.Errorf("%w: invalid n_rot: %d, expected %d", ErrMetadata, c.Rot, c.HeadDimK)
	}
	if c.arch.sameHeadDims && c.HeadDimK != c.HeadDimV {
		return fmt.Errorf("%w: %s needs key_length == value_length (%d ≠ %d)", ErrUnsupported, c.Arch, c.HeadDimK, c.HeadDimV)
	}
	if c.arch.rotIsHead && c.Rot != c.HeadDimK {
		return fmt.Errorf("%w: %s needs rope.dimension_count == key_length (%d ≠ %d)", ErrUnsupported, c.Arch, c.Rot, c.HeadDimK)
	}
	c.SWA = make([]bool, c.Layers)
	c.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDimK)))
	return c.readExpertWidths(r)
}

// maxExperts is LLAMA_MAX_EXPERTS.
const maxExperts = 1024

// readExperts reads the mixture-of-experts counts as load_hparams does and
// refuses what llama.cpp asserts (more experts used than there are) and
// what this package does not implement (expert groups, an architecture
// without a routed FFN).
func (c *Config) readExperts(r *kvReader) error {
	if _, err := r.u32(r.key(gguf.SuffixExpertCount), &c.Experts, false); err != nil {
		return err
	}
	if c.Experts == 0 {
		if c.arch.moe.required {
			return fmt.Errorf("%w: n_expert must be > 0 for %s", ErrMetadata, c.Arch)
		}
		return nil
	}
	if c.arch.moe.kind == moeNone {
		return fmt.Errorf("%w: mixture-of-experts %s (%s = %d)", ErrUnsupported, c.Arch, r.key(gguf.SuffixExpertCount), c.Experts)
	}
	if c.Experts > maxExperts {
		return fmt.Errorf("%w: %s = %d (at most %d)", ErrMetadata, r.key(gguf.SuffixExpertCount), c.Experts, maxExperts)
	}
	if err := r.u32OrArr(r.key(gguf.SuffixExpertUsedCount), &c.ExpertsUsed, c.Layers, false); err != nil {
		return err
	}
	if c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts {
		return fmt.Errorf("%w: %d of %d experts used", ErrMetadata, c.ExpertsUsed, c.Experts)
	}
	var groups int
	if _, err := r.u32(r.key("expert_group_count"), &groups, false); err != nil {
		return err
	}
	if groups > 1 && c.arch.moe.kind != moeDeepseek {
		return fmt.Errorf("%w: expert groups (%d)", ErrUnsupported, groups)
	}
	return nil
}

// readExpertWidths sets the expert widths after the FFN width is known:
// n_ff for llama's experts, else expert_feed_forward_length or n_ff /
// n_expert_used (load_arch_tensors of qwen2moe and qwen3moe), and the
// shared expert's expert_shared_feed_forward_length or n_ff.
func (c *Config) readExpertWidths(r *kvReader) error {
	if c.Experts == 0 {
		return nil
	}
	c.FFExp = c.FF
	if c.arch.moe.kind != moeLlama {
		c.FFExp = 0
		if err := r.u32OrArr(r.key(gguf.SuffixExpertFFLength), &c.FFExp, c.Layers, false); err != nil {
			return err
		}
		if c.FFExp == 0 {
			c.FFExp = c.FF / c.ExpertsUsed
		}
	}
	if c.arch.moe.kind == moeLlama4 {
		c.FFShared = c.FFExp // load_arch_tensors: n_ff_shexp = n_ff_exp
	}
	if c.arch.moe.kind == moeShared {
		c.FFShared = c.FF
		if _, err := r.u32(r.key(gguf.SuffixExpertSharedFFLength), &c.FFShared, false); err != nil {
			return err
		}
		if c.FFShared <= 0 || c.FFShared > maxDim {
			return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
		}
	}
	if c.FFExp <= 0 || c.FFExp > maxDim || c.Experts > maxDim/c.FFExp {
		return fmt.Errorf("%w: %d experts of width %d", ErrMetadata, c.Experts, c.FFExp)
	}
	return nil
}

// readVocab takes the vocabulary size from the token list (llama.cpp's
// n_vocab is vocab.n_tokens()), else from {arch}.vocab_size.
func (c *Config) readVocab(r *kvReader) error {
	if v, ok := r.md.KV(gguf.KeyTokenizerTokens); ok {
		if !v.IsArray() || v.ElemType() != gguf.TypeString {
			return fmt.Errorf("%w: %s is not a string array", ErrMetadata, gguf.KeyTokenizerTokens)
		}
		c.Vocab = v.Len()
		return nil
	}
	if _, err := r.u32(r.key(gguf.SuffixVocabSize), &c.Vocab, false); err != nil {
		return err
	}
	if c.Vocab == 0 {
		return fmt.Errorf("%w: neither %s nor %s", ErrMetadata, gguf.KeyTokenizerTokens, r.key(gguf.SuffixVocabSize))
	}
	return nil
}

// setSWAPattern mirrors llama_hparams::set_swa_pattern: every n-th layer is
// dense (n = 0: all SWA; n = 1: none).
func (c *Config) setSWAPattern(n int) {
	for il := range c.SWA {
		c.SWA[il] = n == 0 || il%n < n-1
	}
}

// readSWAPattern mirrors llama_model_base::load_swa_pattern: a per-layer
// array of the key wins, else its uint32 value, else the default n.
func (c *Config) readSWAPattern(r *kvReader, n int) error {
	key := r.key("attention.sliding_window_pattern")
	if v, ok := r.md.KV(key); ok && v.IsArray() {
		if v.Len() != c.Layers {
			return fmt.Errorf("%w: %s has %d entries for %d layers", ErrMetadata, key, v.Len(), c.Layers)
		}
		switch v.ElemType() {
		case gguf.TypeBool:
			bs := v.Any().([]bool)
			copy(c.SWA, bs)
		case gguf.TypeUint32, gguf.TypeInt32:
			xs, _ := v.Ints()
			for i, x := range xs {
				c.SWA[i] = x != 0
			}
		default:
			return fmt.Errorf("%w: %s has wrong array element type %s", ErrMetadata, key, v.ElemType())
		}
		return nil
	}
	if _, err := r.u32(key, &n, false); err != nil {
		return err
	}
	c.setSWAPattern(n)
	return nil
}

// deriveRope applies llama_context's defaults: no scaling means scale 1,
// YaRN turns on ext_factor and its magnitude correction (llama-context.cpp).
func (c *Config) deriveRope() error {
	if c.RopeScaling == "longrope" && c.arch.ropeFactors != factorsLongShort {
		return fmt.Errorf("%w: RoPE scaling %q for %s", ErrUnsupported, c.RopeScaling, c.Arch)
	}
	if c.RopeScaling == "none" {
		c.RopeFreqScale = 1
	}
	c.RopeBetaFast, c.RopeBetaSlow = 32, 1
	attn := float32(1)
	if c.RopeScaling == "yarn" {
		c.RopeExtFactor = 1
		factor := 1 / c.RopeFreqScale
		getMscale := func(m float32) float32 {
			if factor <= 1 {
				return 1
			}
			return 0.1*m*float32(math.Log(float64(factor))) + 1
		}
		attn = getMscale(1)
		if c.YarnLogMul != 0 {
			// llama_context: mscale_all_dim from the log multiplier, and
			// mscale assumed 1 except for deepseek2, where a value other
			// than 1 is taken as mscale too (DeepSeek-V2's config).
			mscale := float32(1)
			if c.Arch == "deepseek2" && c.YarnLogMul != 1 {
				mscale = c.YarnLogMul
			}
			attn = getMscale(mscale) / getMscale(c.YarnLogMul)
		}
		attn *= 1 / (1 + float32(0.1*math.Log(float64(factor))))
	}
	c.RopeAttnFactor *= attn
	return nil
}

// moeLayer reports whether block il routes its FFN through experts (after
// the DenseLead leading dense blocks, every MoEStep-th block).
func (c *Config) moeLayer(il int) bool {
	return c.Experts > 0 && il >= c.DenseLead && (c.MoEStep == 0 || (il+1)%c.MoEStep == 0) &&
		(c.FFNBlocks == nil || c.ffnBlock(il))
}

// Derived widths: all query heads, all key and value heads, the output of
// attention, and the query heads per key/value head.
func (c *Config) headsQ() int  { return c.Heads * c.HeadDimK }
func (c *Config) kvDimK() int  { return c.HeadsKV * c.HeadDimK }
func (c *Config) kvDimV() int  { return c.HeadsKV * c.HeadDimV }
func (c *Config) group() int   { return c.Heads / c.HeadsKV }
func (c *Config) outDimV() int { return c.Heads * c.HeadDimV }
