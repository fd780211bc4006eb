package forward

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// The building blocks an architecture picks from.
type (
	normKind    uint8
	ropeMode    uint8
	ffnKind     uint8
	factorsKind uint8
)

const (
	normRMS   normKind = iota // ggml_rms_norm × weight
	normLayer                 // ggml_norm × weight + bias
)

const (
	ropeNone ropeMode = iota // learned positions instead
	ropeNorm                 // GGML_ROPE_TYPE_NORMAL: consecutive pairs (x[2i], x[2i+1])
	ropeNeox                 // GGML_ROPE_TYPE_NEOX: pairs (x[i], x[i+n_rot/2])
)

const (
	ffnSwiGLU      ffnKind = iota // down(silu(gate(x)) · up(x))
	ffnGeGLU                      // down(gelu(gate(x)) · up(x))
	ffnGELU                       // down(gelu(up(x))), with biases
	ffnSwiGLUFused                // down(silu(a) · b), [a | b] = up(x) (phi3's gate_up)
	ffnXIELU                      // down(xielu(up(x))) with per-block parameters (apertus)
	ffnReLU2                      // down(relu(up(x))²), no gate (arcee's LLM_FFN_RELU_SQR)
)

const (
	factorsNone      factorsKind = iota
	factorsFreqs                 // rope_freqs.weight divides theta (llama3)
	factorsLongShort             // rope_factors_long/short.weight (phi3 LongRoPE)
)

// parallelSum is the order in which a parallel block adds its attention
// output, its FFN output and its input (the graphs' ggml_add calls; float
// addition is not associative).
type parallelSum uint8

const (
	sumFFNInput  parallelSum = iota // (ffn + x) + attn: gptneox, cohere2, command-r
	sumBranches                     // (attn + ffn) + x: phi2, falcon
	sumAttnInput                    // ffn + (attn + x): stablelm
)

// moeKind is an architecture's mixture-of-experts FFN (build_moe_ffn with
// soft-max gating and the options its graph passes).
type moeKind uint8

const (
	moeNone     moeKind = iota // dense only
	moeLlama                   // top-k of soft-max, weights renormalised (Mixtral)
	moeNormed                  // the same with expert_feed_forward_length (qwen3moe)
	moeShared                  // weights not renormalised, plus a sigmoid-gated shared expert (qwen2moe)
	moeDeepseek                // deepseek2, glm4moe: soft-max or sigmoid gating, selection bias, expert groups, scaled weights, ungated shared experts
	// moeOAI is gpt-oss's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT with
	// LLM_FFN_SWIGLU_OAI_MOE: the top-k of the biased router logits, soft-max
	// over the chosen ones, experts with biases and the clamped SwiGLU.
	moeOAI
	moeLlama4 // sigmoid gating, weights applied to the input, plus an ungated shared expert
)

// moeInfo says whether and how an architecture routes its FFN.
type moeInfo struct {
	kind     moeKind
	required bool // the architecture refuses n_expert = 0
	// plainW: build_moe_ffn's norm_w is false for this moeLlama (olmoe).
	plainW bool
	// sharedAverage halves the sum of the routed and the shared experts
	// (cohere2moe's ggml_scale(…, 0.5)).
	sharedAverage bool
}

// normW reports whether the top-k weights are renormalised to sum to 1.
func (m moeInfo) normW() bool { return (m.kind == moeLlama || m.kind == moeNormed) && !m.plainW }

// normW reports whether a model renormalises its top-k expert weights.
func (c *Config) normW() bool {
	if c.arch.moe.kind == moeDeepseek {
		return c.ExpertWeightsNorm
	}
	return c.arch.moe.normW()
}

// archInfo is one row of the architecture table: the graph's options, the
// architecture's extra hyperparameters (its load_arch_hparams) and its tensors
// (its load_arch_tensors).
type archInfo struct {
	norm        normKind
	rope        ropeMode
	ffn         ffnKind
	ropeFactors factorsKind
	// embedScale multiplies token embeddings by sqrt(n_embd) (gemma).
	embedScale bool
	// posEmbd adds learned absolute position embeddings (gpt2).
	posEmbd bool
	// tokNorm normalises the token embeddings (token_embd_norm, bloom).
	tokNorm bool
	// qkNorm RMS-normalises each Q and K head before RoPE (qwen3, gemma3).
	qkNorm bool
	// qkNormFull: the Q and K norms span all heads (one weight of
	// n_head·n_embd_head: olmoe, minimax-m2, olmo2) instead of one head.
	qkNormFull bool
	// qkNormAfterRope normalises Q and K heads after RoPE (hunyuan-dense).
	qkNormAfterRope bool
	// postNorms normalises the attention and FFN outputs before the residual
	// add (gemma2, gemma3).
	postNorms bool
	// moe is the mixture-of-experts FFN, if the architecture has one.
	moe moeInfo
	// parallelResidual lets {arch}.use_parallel_residual run attention and
	// FFN on the same input: x + attn(ln1(x)) + ffn(ln2(x)) (gptneox).
	parallelResidual bool
	// sharedNorm: with the parallel residual, the FFN reads the attention
	// norm's output (cohere2: one norm per block, no ffn_norm).
	sharedNorm bool
	// parallelSum is the order of the parallel residual's additions.
	parallelSum parallelSum
	// parallelWithoutFFNNorm makes a block without ffn_norm parallel, its
	// FFN reading the attention norm's output (stablelm: StableLM 2 12B).
	parallelWithoutFFNNorm bool
	// noPreNorm: attention and FFN read the residual stream itself; only
	// their outputs are normalised (olmo2's post-norms).
	noPreNorm bool
	// swaPlainRope rotates the sliding-window layers without the rope
	// scaling (olmo2/Olmo 3: freq_scale 1, ext_factor 0, attn_factor 1).
	swaPlainRope bool
	// ropeSWAOnly rotates Q and K on sliding-window layers only (cohere2's
	// global layers have no positional encoding).
	ropeSWAOnly bool
	// ffnNormPostAttn: the FFN's pre-norm is the tensor named
	// post_attention_norm (the attn_post_norm of glm4moe and gpt-oss), not
	// ffn_norm.
	ffnNormPostAttn bool
	// scaleQ multiplies Q by AttnScale and runs soft-max with scale 1
	// (ggml_scale(Qcur) in gemma*, phi3); otherwise soft-max applies it.
	scaleQ bool
	// sinks: each attention head has a sink logit that joins its soft-max
	// (attn_sinks, gpt-oss).
	sinks bool
	// checkRot: llama.cpp's loader refuses n_rot ≠ head size (llama);
	// sameHeadDims and rotIsHead are the graph's GGML_ASSERTs.
	checkRot, sameHeadDims, rotIsHead bool
	// mla is deepseek2's multi-head latent attention, run as llama.cpp
	// runs it: absorbed into an MQA over the normalised latent and the
	// rotated key part (see Session.mlaAttention).
	mla bool
	// mlaWhole is minicpm3's latent attention, run without absorption:
	// attn_kv_b expands the latent into each head's key and value.
	mlaWhole bool
	// gatedQ: the Q projection gives each head's query and then its
	// output gate; sigmoid(gate) multiplies the attention output (qwen3next).
	gatedQ bool
	// residualMoE: the FFN (on ffn_norm of attention + input) is a dense
	// residual MLP, and the experts read ffn_norm_exps of the block's
	// input; both are added to attention + input (arctic).
	residualMoE bool
	// outNorms: attn_output_norm and layer_output_norm are the norms of
	// the attention and FFN outputs before their residual adds (grok).
	outNorms bool
	// attnGate: sigmoid(attn_gate · h) multiplies the attention output
	// before attn_output (afmoe's wqkv_gate).
	attnGate bool
	// recurrent is the kind of a hybrid's recurrent blocks.
	recurrent recKind
	// parallelMixer: every block runs attention and its recurrent mixer
	// side by side on the normalised input and adds both (falcon-h1).
	parallelMixer bool
	// recurrentKV: the blocks with head_count_kv 0 are recurrent (lfm2's
	// short convolutions).
	recurrentKV bool
	// soloBlocks: each block is one of a recurrent mixer, attention or an
	// FFN (feed_forward_length per block, non-zero on the FFN blocks),
	// attn_norm its only norm (nemotron_h_moe).
	soloBlocks bool
	// sharedFused: the shared expert's gate and up are one ffn_up_shexp
	// (2 × its width, the gate rows first) run as LLM_FFN_SWIGLU
	// (granite_swa).
	sharedFused bool

	hparams func(c *Config, r *kvReader) error
	tensors []rule
}

// archs is the architecture table, keyed by general.architecture.
var archs = map[string]*archInfo{
	"llama": {
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, ropeFactors: factorsFreqs,
		checkRot: true, sameHeadDims: true, rotIsHead: true,
		moe:     moeInfo{kind: moeLlama},
		hparams: rmsEps,
		tensors: concat(headRules(true, false), []rule{
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
			ffnNormRule,
		}, dense(gatedFFNRules(true)), expertRules(false)),
	},
	"llama4": {
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, ropeFactors: factorsFreqs,
		sameHeadDims: true, rotIsHead: true,
		moe:     moeInfo{kind: moeLlama4, required: true},
		hparams: llama4Hparams,
		tensors: concat(headRules(true, false), []rule{
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			ffnNormRule,
		}, dense(gatedFFNRules(false)), expertRules(false), []rule{
			{name: "blk.%d.ffn_gate_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
			{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoE},
			{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
		}),
	},
	"apertus": {
		norm: normRMS, rope: ropeNeox, ffn: ffnXIELU, ropeFactors: factorsFreqs, qkNorm: true,
		sameHeadDims: true, rotIsHead: true,
		hparams: apertusHparams,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
			ffnNormRule,
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
		},
	},
	"qwen2moe": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU,
		sameHeadDims: true, rotIsHead: true,
		moe:     moeInfo{kind: moeShared, required: true},
		hparams: rmsEps,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			ffnNormRule,
		}, expertRules(true)),
	},
	"qwen3moe": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true,
		sameHeadDims: true, rotIsHead: true,
		moe:     moeInfo{kind: moeNormed, required: true},
		hparams: rmsEps,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			ffnNormRule,
		}, expertRules(false)),
	},
	"qwen2": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU,
		sameHeadDims: true, rotIsHead: true,
		hparams: rmsEps,
		tensors: concat(headRules(true, true), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			ffnNormRule,
		}, gatedFFNRules(false)),
	},
	"qwen3": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true,
		sameHeadDims: true, rotIsHead: true,
		hparams: rmsEps,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			ffnNormRule,
		}, gatedFFNRules(false)),
	},
	"deepseek2": {
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, mla: true,
		moe:     moeInfo{kind: moeDeepseek},
		hparams: deepseek2Hparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{name: "blk.%d.attn_q.weight", dims: []dim{dEmbd, dQMLA}, only: onlyNoQLora},
			{name: "blk.%d.attn_q_a.weight", dims: []dim{dEmbd, dQLora}, only: onlyQLora},
			{name: "blk.%d.attn_q_a_norm.weight", dims: []dim{dQLora}, only: onlyQLora},
			{name: "blk.%d.attn_q_b.weight", dims: []dim{dQLora, dQMLA}, only: onlyQLora},
		}, mlaKVRules, []rule{
			ffnNormRule,
			{name: "blk.%d.ffn_gate.weight", dims: []dim{dEmbd, dFF}, only: onlyDense},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}, only: onlyDense},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}, only: onlyDense},
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE, optional: true},
			{gateUpExps: true, only: onlyMoE},
			{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_gate_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
			{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoE},
			{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
		}),
	},
	"gemma": {
		norm: normRMS, rope: ropeNeox, ffn: ffnGeGLU, embedScale: true, scaleQ: true,
		hparams: gemmaHparams,
		tensors: concat(headRules(false, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			ffnNormRule,
		}, gatedFFNRules(false)),
	},
	"gemma2": {
		norm: normRMS, rope: ropeNeox, ffn: ffnGeGLU, embedScale: true, scaleQ: true, postNorms: true,
		hparams: gemma2Hparams,
		tensors: concat(headRules(false, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
		}, gatedFFNRules(false)),
	},
	"gemma3": {
		norm: normRMS, rope: ropeNeox, ffn: ffnGeGLU, embedScale: true, scaleQ: true, postNorms: true, qkNorm: true,
		hparams: gemma3Hparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			ffnNormRule,
			{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
		}, gatedFFNRules(false)),
	},
	"phi3": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLUFused, ropeFactors: factorsLongShort, scaleQ: true,
		sameHeadDims: true,
		hparams:      phi3Hparams,
		tensors: concat(headRules(true, false), []rule{
			{name: "rope_factors_long.weight", dims: []dim{dRot2}, optional: true},
			{name: "rope_factors_short.weight", dims: []dim{dRot2}, optional: true},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF2}},
		}),
	},
	// glm4: llama_model_glm4 (GLM-4-0414): normal RoPE on the first n_rot
	// dimensions of each head (partial rotary), q/k/v biases, post-attention
	// and post-FFN norms, the fused gate|up FFN; GLM-4.1V's text tower with
	// M-RoPE. (The NextN/MTP blocks of GLM-OCR are not modelled.)
	"glm4": {
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLUFused, postNorms: true,
		sameHeadDims: true,
		hparams:      glm4Hparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF2}},
			{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
		}),
	},
	// cohere2: llama_model_cohere2 (Command R7B, Command A): one bias-free
	// LayerNorm feeding attention and FFN in parallel, 3 sliding-window
	// layers (normal RoPE) to 1 global layer (no RoPE), logits scaled.
	"cohere2": {
		norm: normLayer, rope: ropeNorm, ffn: ffnSwiGLU, parallelResidual: true, sharedNorm: true, ropeSWAOnly: true,
		sameHeadDims: true,
		hparams:      cohere2Hparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
		}, gatedFFNRules(false)),
	},
	// command-r: llama_model_command_r (Command R, R+): cohere2's parallel
	// block on one bias-free LayerNorm, RoPE on every layer, no sliding
	// window; the logit scale optional; per-head LayerNorms of Q and K (a
	// weight row per head) exactly when n_layer ≥ 64 (Command R+).
	"command-r": {
		norm: normLayer, rope: ropeNorm, ffn: ffnSwiGLU, parallelResidual: true, sharedNorm: true, qkNorm: true,
		sameHeadDims: true,
		hparams:      commandRHparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			attnNormRule,
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK, dHeads}, only: onlyLayers64},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK, dHeadsKV}, only: onlyLayers64},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
		}, gatedFFNRules(false)),
	},
	// olmo: llama_model_olmo (OLMo 1): LayerNorm without weight or bias
	// before attention, FFN and output, Q/K/V clamped to ±clamp_kqv.
	"olmo": {
		norm: normLayer, rope: ropeNorm, ffn: ffnSwiGLU,
		sameHeadDims: true, rotIsHead: true,
		hparams: olmoHparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
		}, gatedFFNRules(false)),
	},
	// olmo2: llama_model_olmo2 (OLMo 2, Olmo 3): no pre-norms, RMS
	// post-norms of the attention and FFN outputs, RMS norms of Q and K over
	// their full width before NeoX RoPE; with a sliding window (Olmo 3) 3
	// SWA layers to 1 full, rotated without the rope scaling.
	"olmo2": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, noPreNorm: true, postNorms: true, qkNorm: true, qkNormFull: true,
		swaPlainRope: true, sameHeadDims: true, rotIsHead: true,
		hparams: olmo2Hparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dKGQA}},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
		}, gatedFFNRules(false), []rule{
			{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
		}),
	},
	// phi2: llama_model_phi2: attention and the GELU FFN in parallel on one
	// LayerNorm, NeoX RoPE on the first n_rot dimensions, Q scaled before
	// the soft-max, biases everywhere, the output's too.
	"phi2": {
		norm: normLayer, rope: ropeNeox, ffn: ffnGELU, parallelResidual: true, sharedNorm: true, parallelSum: sumBranches,
		scaleQ: true, sameHeadDims: true,
		hparams: parallelLayerNormEps,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output.bias", dims: []dim{dVocab}},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}},
		},
	},
	// stablelm: llama_model_stablelm: LayerNorms with biases, NeoX RoPE on
	// the first n_rot dimensions, optional per-head LayerNorms of Q and K
	// (a weight row per head); a block without ffn_norm runs its FFN in
	// parallel on the attention norm (StableLM 2 12B).
	"stablelm": {
		norm: normLayer, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true, parallelWithoutFFNNorm: true, parallelSum: sumAttnInput,
		sameHeadDims: true,
		hparams:      layerNormEps,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK, dHeads}, optional: true},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK, dHeadsKV}, optional: true},
			{name: "blk.%d.ffn_norm.weight", dims: []dim{dEmbd}, optional: true},
			{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}, optional: true},
		}, gatedFFNRules(false)),
	},
	// falcon: llama_model_falcon: attention and the GELU FFN in parallel,
	// fused QKV (multi-query or grouped), NeoX RoPE; Falcon-7B's one norm
	// feeds both, Falcon-40B's attention reads its own (attn_norm_2).
	"falcon": {
		norm: normLayer, rope: ropeNeox, ffn: ffnGELU, parallelResidual: true, sharedNorm: true, parallelSum: sumBranches,
		checkRot: true, sameHeadDims: true, rotIsHead: true,
		hparams: parallelLayerNormEps,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.attn_norm_2.weight", dims: []dim{dEmbd}, optional: true},
			{name: "blk.%d.attn_norm_2.bias", dims: []dim{dEmbd}, optional: true},
			{name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dFusedQKV}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
		},
	},
	// chatglm: llama_model_chatglm (ChatGLM3, GLM-4-9B): normal RoPE on the
	// first n_rot dimensions, q/k/v biases, the fused gate|up FFN.
	"chatglm": {
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLUFused,
		sameHeadDims: true,
		hparams:      rmsEps,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF2}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
		}),
	},
	// gemma3n: llama_model_gemma3n's text model (gemma3n.go): AltUp
	// streams, LAuReL, per-layer embeddings, KV-shared blocks, activation
	// sparsity; Q, K and V RMS-normalised, NeoX RoPE, GeGLU, soft-capped
	// logits.
	"gemma3n": {
		norm: normRMS, rope: ropeNeox, ffn: ffnGeGLU, embedScale: true, qkNorm: true, postNorms: true,
		sameHeadDims: true, rotIsHead: true,
		hparams: gemma3nHparams,
		tensors: []rule{
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "altup_proj.weight", dims: []dim{dEmbd, dEmbd, dAltupM1}},
			{name: "altup_unembd_proj.weight", dims: []dim{dEmbd, dEmbd, dAltupM1}},
			{name: "per_layer_token_embd.weight", dims: []dim{dPerLayerAll, dVocab}},
			{name: "per_layer_model_proj.weight", dims: []dim{dEmbd, dPerLayerAll}},
			{name: "per_layer_proj_norm.weight", dims: []dim{dPerLayer}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_gate.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.inp_gate.weight", dims: []dim{dEmbd, dPerLayer}},
			{name: "blk.%d.proj.weight", dims: []dim{dPerLayer, dEmbd}},
			{name: "blk.%d.post_norm.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.altup_correct_coef.weight", dims: []dim{dAltup, dAltup}},
			{name: "blk.%d.altup_correct_scale.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.altup_predict_coef.weight", dims: []dim{dAltup, dAltupSq}},
			{name: "blk.%d.altup_router.weight", dims: []dim{dEmbd, dAltup}},
			{name: "blk.%d.altup_router_norm.weight", dims: []dim{dEmbd}},
			{name: "blk.%d.laurel_l.weight", dims: []dim{dEmbd, dLaurel}},
			{name: "blk.%d.laurel_r.weight", dims: []dim{dLaurel, dEmbd}},
			{name: "blk.%d.laurel_post_norm.weight", dims: []dim{dEmbd}},
		},
	},
	// glm4moe: llama_model_glm4_moe (GLM-4.5, GLM-4.6): NeoX RoPE on the
	// first n_rot dimensions, q/k/v biases and optional q/k norms,
	// post_attention_norm as the FFN norm, leading dense blocks, then
	// sigmoid-routed experts plus shared experts; the NextN/MTP blocks after
	// n_layer are loaded but not run (M-RoPE is not modelled).
	"glm4moe": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, ffnNormPostAttn: true,
		sameHeadDims: true,
		moe:          moeInfo{kind: moeDeepseek, required: true},
		hparams:      glm4moeHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}, optional: true},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}, optional: true},
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
		}, dense(gatedFFNRules(false)), []rule{
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_gate_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_up_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_gate_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoEShared},
			{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoEShared},
			{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoEShared},
		}),
	},
	"gptneox": {
		norm: normLayer, rope: ropeNeox, ffn: ffnGELU, parallelResidual: true,
		sameHeadDims: true,
		hparams:      gptneoxHparams,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dFusedQKV}},
			{name: "blk.%d.attn_qkv.bias", dims: []dim{dFusedQKV}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}},
		},
	},
	"starcoder2": {
		norm: normLayer, rope: ropeNeox, ffn: ffnGELU,
		sameHeadDims: true, rotIsHead: true,
		hparams: layerNormEps,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}},
		},
	},
	// gpt-oss is llama_model_openai_moe (src/models/openai-moe.cpp).
	"gpt-oss": {
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, sinks: true, ffnNormPostAttn: true,
		sameHeadDims: true, rotIsHead: true,
		moe:     moeInfo{kind: moeOAI, required: true},
		hparams: openaiMoeHparams,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_sinks.weight", dims: []dim{dHeads}},
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}},
			{name: "blk.%d.ffn_gate_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}},
			{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}},
			{name: "blk.%d.ffn_up_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_gate_inp.bias", dims: []dim{dExperts}},
			{name: "blk.%d.ffn_gate_exps.bias", dims: []dim{dFFExp, dExperts}},
			{name: "blk.%d.ffn_down_exps.bias", dims: []dim{dEmbd, dExperts}},
			{name: "blk.%d.ffn_up_exps.bias", dims: []dim{dFFExp, dExperts}},
		},
	},
	// jais2: llama_model_jais2: LayerNorms with biases, NeoX RoPE over the
	// whole head, q/k/v/o with biases, a plain ReLU² FFN with biases.
	"jais2": {
		norm: normLayer, rope: ropeNeox, ffn: ffnReLU2,
		sameHeadDims: true, rotIsHead: true,
		hparams: layerNormEps,
		tensors: concat(headRules(true, false), []rule{
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}},
		}),
	},
	// bloom: llama_model_bloom: gpt2's blocks without position embeddings,
	// a LayerNorm of the token embeddings, ALiBi in the soft-max.
	"bloom": {
		norm: normLayer, rope: ropeNone, ffn: ffnGELU, tokNorm: true,
		sameHeadDims: true,
		hparams:      bloomHparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "token_embd_norm.weight", dims: []dim{dEmbd}},
			{name: "token_embd_norm.bias", dims: []dim{dEmbd}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
		}, fusedBlockRules(false)),
	},
	"gpt2": {
		norm: normLayer, rope: ropeNone, ffn: ffnGELU, posEmbd: true,
		sameHeadDims: true,
		hparams:      layerNormEps,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "position_embd.weight", dims: []dim{dEmbd, dCtx}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
		}, fusedBlockRules(false)),
	},
	// mpt: llama_model_mpt: gpt2's graph with ALiBi (attention.max_alibi_bias)
	// or learned positions, every bias optional, the QKV clamp.
	"mpt": {
		norm: normLayer, rope: ropeNone, ffn: ffnGELU,
		sameHeadDims: true,
		hparams:      mptHparams,
		tensors: concat([]rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "position_embd.weight", dims: []dim{dEmbd, dCtx}, optional: true},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}, optional: true},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
		}, fusedBlockRules(true)),
	},
}

func archNames() string {
	names := []string{"gemma4", "mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"} // gemma4.go, ssm.go, rwkv6.go, rwkv7.go
	for n := range archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// rmsEps reads the RMS-norm epsilon every RMS architecture requires.
func rmsEps(c *Config, r *kvReader) error {
	_, err := r.f32(r.key("attention.layer_norm_rms_epsilon"), &c.NormEps, true)
	return err
}

func init() {
	// llama_model_starcoder (gpt_bigcode): gpt2's tensors and graph; its
	// fused QKV is n_embd + 2·n_embd_gqa wide, multi-query in StarCoder.
	sc := *archs["gpt2"]
	archs["starcoder"] = &sc
}

func init() {
	// llama_model_mistral3: llama's tensors and graph, with optional
	// temperature tuning of Q (Ministral 3's llama_4_scaling_beta).
	m := *archs["llama"]
	m.hparams = mistral3Hparams
	archs["mistral3"] = &m
}

// mistral3Hparams mirrors llama_model_mistral3::load_arch_hparams. Its YaRN
// log multiplier and beta overrides (Ministral 3) are not implemented here.
func mistral3Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.temperature_scale"), &c.AttnTempScale, false); err != nil {
		return err
	}
	for _, k := range []struct {
		suffix string
		def    float32
	}{{"rope.scaling.yarn_beta_fast", 32}, {"rope.scaling.yarn_beta_slow", 1}, {"rope.scaling.yarn_log_multiplier", 0}} {
		v := k.def
		if _, err := r.f32(r.key(k.suffix), &v, false); err != nil {
			return err
		}
		if v != k.def {
			return fmt.Errorf("%w: %s %s = %g", ErrUnsupported, c.Arch, k.suffix, v)
		}
	}
	if c.AttnTempScale != 0 {
		// The floor is n_ctx_orig_yarn.
		if c.RopeOrigCtx == 0 {
			return fmt.Errorf("%w: invalid n_ctx_orig_yarn for attention temperature scaling", ErrMetadata)
		}
		c.AttnTempFloor = c.RopeOrigCtx
		c.TempLayers = make([]bool, c.Layers)
		for il := range c.TempLayers {
			c.TempLayers[il] = true
		}
	}
	return nil
}

// apertusHparams mirrors llama_model_apertus::load_arch_hparams: the
// xIELU parameters, one per block (an array) or one for all. ggml_xielu
// takes softplus of the stored alpha_p and beta + softplus of alpha_n.
func apertusHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	var vals [4][]float32
	for i, k := range []string{"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"} {
		v, err := r.f32OrArr(k, c.Layers)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	c.XIELU = make([][4]float32, c.Layers)
	for il := range c.XIELU {
		beta := vals[2][il]
		c.XIELU[il] = [4]float32{beta + softplus(vals[0][il]), softplus(vals[1][il]), beta, vals[3][il]}
	}
	return nil
}

// softplus is ggml_compute_softplus_f32.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + float32(math.Exp(float64(x))))))
}

// llama4Hparams mirrors llama_model_llama4::load_arch_hparams: a sliding
// window of 0 (MobileLLM) means no chunked attention and RoPE on every
// block but the last (n_no_rope_layer_step = n_layer); otherwise chunks of
// 8192 on three blocks of four, NoPE on every fourth block (the default
// n_no_rope_layer_step) with temperature tuning there. Q/K are
// L2-normalised on RoPE blocks unless the model has 128 experts (Maverick).
func llama4Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("interleave_moe_layer_step"), &c.MoEStep, true); err != nil {
		return err
	}
	var swa int
	found, err := r.u32(r.key("attention.sliding_window"), &swa, false)
	if err != nil {
		return err
	}
	noRopeStep := 4
	if found && swa == 0 {
		noRopeStep = c.Layers
	} else {
		c.Chunked, c.SlidingWindow = true, 8192
		c.AttnTempFloor, c.AttnTempScale, c.AttnTempOffset = 8192, 0.1, 1
		if err := c.readSWAPattern(r, 4); err != nil {
			return err
		}
		c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
		if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
			return err
		}
	}
	c.noRopeEvery(noRopeStep)
	c.TempLayers = c.NoRope
	c.L2QK = c.Experts != 128
	c.ExpertGating = 2 // build_moe_ffn's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
	return nil
}

// layerNormEps reads gpt2's layer-norm epsilon.
func layerNormEps(c *Config, r *kvReader) error {
	_, err := r.f32(r.key("attention.layer_norm_epsilon"), &c.NormEps, true)
	return err
}

// mptHparams mirrors llama_model_mpt::load_arch_hparams: the layer-norm
// epsilon, the optional QKV clamp and ALiBi maximum bias.
func mptHparams(c *Config, r *kvReader) error {
	if err := olmoHparams(c, r); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.max_alibi_bias"), &c.MaxAlibiBias, false); err != nil {
		return err
	}
	if c.MaxAlibiBias < 0 || math.IsNaN(float64(c.MaxAlibiBias)) {
		return fmt.Errorf("%w: %s max_alibi_bias %g", ErrMetadata, c.Arch, c.MaxAlibiBias)
	}
	return nil
}

// bloomHparams mirrors llama_model_bloom::load_arch_hparams: the
// layer-norm epsilon, and ALiBi's maximum bias fixed at 8 (no GGUF key).
func bloomHparams(c *Config, r *kvReader) error {
	c.MaxAlibiBias = 8
	return layerNormEps(c, r)
}

// gptneoxHparams mirrors llama_model_gptneox::load_arch_hparams: the
// layer-norm epsilon and use_parallel_residual are both required.
func gptneoxHparams(c *Config, r *kvReader) error {
	if err := layerNormEps(c, r); err != nil {
		return err
	}
	_, err := r.boolean(r.key("use_parallel_residual"), &c.ParallelResidual, true)
	return err
}

// cohere2Hparams mirrors llama_model_cohere2::load_arch_hparams: a
// sliding-window pattern of 4 unless the file gives one, the SWA rope base
// that of the other layers unless given, the window, logit scale and
// layer-norm epsilon required.
func cohere2Hparams(c *Config, r *kvReader) error {
	if err := c.readSWAPattern(r, 4); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, true); err != nil {
		return err
	}
	if _, err := r.f32(r.key("logit_scale"), &c.LogitScale, true); err != nil {
		return err
	}
	c.ParallelResidual = true
	return layerNormEps(c, r)
}

// parallelLayerNormEps: the layer-norm epsilon of an architecture whose
// blocks are always parallel (phi2, falcon).
func parallelLayerNormEps(c *Config, r *kvReader) error {
	c.ParallelResidual = true
	return layerNormEps(c, r)
}

// commandRHparams mirrors llama_model_command_r::load_arch_hparams: the
// logit scale optional, the layer-norm epsilon required.
func commandRHparams(c *Config, r *kvReader) error {
	if _, err := r.f32(r.key("logit_scale"), &c.LogitScale, false); err != nil {
		return err
	}
	c.ParallelResidual = true
	return layerNormEps(c, r)
}

// olmoHparams mirrors llama_model_olmo::load_arch_hparams: the layer-norm
// epsilon and the optional clamp of Q, K and V.
func olmoHparams(c *Config, r *kvReader) error {
	if err := layerNormEps(c, r); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.clamp_kqv"), &c.ClampKQV, false); err != nil {
		return err
	}
	if c.ClampKQV < 0 || math.IsNaN(float64(c.ClampKQV)) {
		return fmt.Errorf("%w: %s clamp_kqv %g", ErrMetadata, c.Arch, c.ClampKQV)
	}
	return nil
}

// olmo2Hparams mirrors llama_model_olmo2::load_arch_hparams: with a
// sliding window (Olmo 3), a pattern of 4 unless given, the SWA layers on
// the full layers' rope base (unless rope.freq_base_swa) without scaling.
func olmo2Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	found, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, false)
	if err != nil {
		return err
	}
	if !found || c.SlidingWindow <= 0 {
		c.SlidingWindow = 0
		return nil
	}
	if err := c.readSWAPattern(r, 4); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, 1
	_, err = r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false)
	return err
}

// glm4Hparams mirrors llama_model_glm4::load_arch_hparams. With
// rope.dimension_sections (GLM-4.1V) llama.cpp rotates with M-RoPE, which on
// text, whose position is the same in every section, is NeoX RoPE: that is
// what is run (image positions are not modelled).
func glm4Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if hasMRoPE(r) {
		c.rope = ropeNeox
	}
	return nil
}

// hasMRoPE is llama_hparams::use_mrope: rope.dimension_sections with a
// non-zero section.
func hasMRoPE(r *kvReader) bool {
	v, ok := r.md.KV(r.key("rope.dimension_sections"))
	if !ok || !v.IsArray() {
		return false
	}
	xs, ok := v.Ints()
	if !ok {
		return false
	}
	for _, x := range xs {
		if x != 0 {
			return true
		}
	}
	return false
}

// glm4moeHparams mirrors llama_model_glm4_moe::load_arch_hparams: the
// shared expert count (required), leading dense blocks, the routing
// weights' scale and renormalisation, the gating function (sigmoid unless
// given), and the NextN/MTP blocks after n_layer (llama_model_base's
// nextn_predict_layers).
func glm4moeHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readNextN(c, r); err != nil {
		return err
	}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if err := readGatingOr(c, r, 2); err != nil {
		return err
	}
	if c.ExpertGating != 2 {
		return fmt.Errorf("%w: %s expert gating function %d (only sigmoid)", ErrUnsupported, c.Arch, c.ExpertGating)
	}
	return nil
}

// readGatingOr reads expert_gating_func (1 soft-max, 2 sigmoid), def where
// the file gives none or 0.
func readGatingOr(c *Config, r *kvReader, def int) error {
	c.ExpertGating = 0
	if _, err := r.u32(r.key("expert_gating_func"), &c.ExpertGating, false); err != nil {
		return err
	}
	if c.ExpertGating == 0 {
		c.ExpertGating = def
	}
	return nil
}

// readNextN reads nextn_predict_layers, the multi-token-prediction blocks
// after n_layer, and leaves Layers the blocks that are run
// (hparams.n_layer() without them).
func readNextN(c *Config, r *kvReader) error {
	if _, err := r.u32(r.key("nextn_predict_layers"), &c.NextN, false); err != nil {
		return err
	}
	if c.NextN < 0 || c.NextN >= c.Layers {
		return fmt.Errorf("%w: %d of %d blocks are multi-token prediction", ErrMetadata, c.NextN, c.Layers)
	}
	c.Layers -= c.NextN
	c.SWA = c.SWA[:c.Layers]
	return nil
}

// gemmaHparams: Q is scaled by 1/sqrt(n_embd_head_v) (src/models/gemma.cpp).
func gemmaHparams(c *Config, r *kvReader) error {
	c.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDimV)))
	return rmsEps(c, r)
}

// gemmaAttnScale: gemma_pytorch's query_pre_attn_scalar, which is
// n_embd/n_head for the 27B models and the head size otherwise
// (load_arch_hparams of gemma2 and gemma3 pick the 27B by its layer count).
func gemmaAttnScale(c *Config, layers27B int) {
	d := c.HeadDimK
	if c.Layers == layers27B {
		d = c.Embd / c.Heads
	}
	c.AttnScale = float32(1 / math.Sqrt(float64(d)))
}

// gemma2Hparams mirrors llama_model_gemma2::load_arch_hparams.
func gemma2Hparams(c *Config, r *kvReader) error {
	c.SlidingWindow = 4096
	if err := c.readSWAPattern(r, 2); err != nil {
		return err
	}
	c.AttnSoftcap, c.FinalSoftcap = 50, 30
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	for _, k := range []struct {
		suffix string
		dst    *float32
	}{{"rope.freq_base_swa", &c.RopeBaseSWA}, {"attn_logit_softcapping", &c.AttnSoftcap}, {"final_logit_softcapping", &c.FinalSoftcap}} {
		if _, err := r.f32(r.key(k.suffix), k.dst, false); err != nil {
			return err
		}
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, false); err != nil {
		return err
	}
	if err := rmsEps(c, r); err != nil {
		return err
	}
	gemmaAttnScale(c, 46)
	return nil
}

// gemma3Hparams mirrors llama_model_gemma3::load_arch_hparams.
func gemma3Hparams(c *Config, r *kvReader) error {
	found, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, false)
	if err != nil {
		return err
	}
	if found && c.SlidingWindow > 0 {
		if err := c.readSWAPattern(r, 6); err != nil {
			return err
		}
		if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
			return err
		}
	} else {
		c.SlidingWindow = 0
	}
	if _, err := r.f32(r.key("final_logit_softcapping"), &c.FinalSoftcap, false); err != nil {
		return err
	}
	if err := rmsEps(c, r); err != nil {
		return err
	}
	gemmaAttnScale(c, 62)
	return nil
}

// phi3Hparams mirrors llama_model_phi3::load_arch_hparams, which reads the
// sliding window and then turns SWA off.
func phi3Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	var swa int
	if _, err := r.u32(r.key("attention.sliding_window"), &swa, false); err != nil {
		return err
	}
	c.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDimV)))
	return nil
}

// deepseek2Hparams mirrors llama_model_deepseek2::load_arch_hparams for
// what the graph uses: the MLA ranks and widths (q_lora_rank is not read
// for the "lite" layer counts), the leading dense blocks, the shared
// experts, the router's gating (soft-max when absent, sigmoid for
// GLM-4.7-Flash's layer count and vocabulary), its weight normalisation and
// scale, the expert groups and YaRN's log multiplier; and
// llama_model_deepseek2::graph's kq_scale.
func deepseek2Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readNextN(c, r); err != nil {
		return err
	}
	lite := c.Layers == 27 || c.Layers == 26 || (c.Layers == 48 && c.Vocab == 128256)
	// Soft-max unless given, but sigmoid for GLM-4.7-Flash's shape.
	gating := 1
	if (c.Layers == 47 || c.Layers == 48) && c.Vocab == 154880 {
		gating = 2
	}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if err := readGatingOr(c, r, gating); err != nil {
		return err
	}
	if !lite {
		if _, err := r.u32(r.key("attention.q_lora_rank"), &c.QLora, true); err != nil {
			return err
		}
	}
	if _, err := r.u32(r.key("attention.kv_lora_rank"), &c.KVLora, true); err != nil {
		return err
	}
	// n_embd_head_k_mla / _v_mla: the MLA keys, else the MHA widths.
	c.HeadDimKMLA, c.HeadDimVMLA = c.HeadDimK, c.HeadDimV
	if _, err := r.u32(r.key("attention.key_length_mla"), &c.HeadDimKMLA, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.value_length_mla"), &c.HeadDimVMLA, false); err != nil {
		return err
	}
	if c.ExpertGating != 1 && c.ExpertGating != 2 {
		return fmt.Errorf("%w: expert gating function %d", ErrUnsupported, c.ExpertGating)
	}
	if err := readExpertGroups(c, r); err != nil {
		return err
	}
	if found, err := r.f32(r.key("rope.scaling.yarn_log_multiplier"), &c.YarnLogMul, false); err != nil {
		return err
	} else if found {
		// [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]: the converter wrote 0.1 × it.
		c.YarnLogMul /= 0.1
	}
	if c.HeadsKV != 1 || c.KVLora <= 0 || c.KVLora > maxDim || c.HeadDimK != c.KVLora+c.Rot || c.HeadDimV != c.KVLora ||
		c.HeadDimKMLA <= c.Rot || c.HeadDimKMLA > maxDim || c.HeadDimVMLA <= 0 || c.HeadDimVMLA > maxDim ||
		c.QLora < 0 || c.QLora > maxDim || c.DenseLead > c.Layers {
		return fmt.Errorf("%w: deepseek2 MLA of %d key/value heads, rank %d, widths %d/%d (MLA %d/%d), rope %d, %d dense blocks",
			ErrMetadata, c.HeadsKV, c.KVLora, c.HeadDimK, c.HeadDimV, c.HeadDimKMLA, c.HeadDimVMLA, c.Rot, c.DenseLead)
	}
	if c.Experts > 0 {
		if c.ExpertShared < 1 || c.ExpertShared > maxDim/c.FFExp {
			return fmt.Errorf("%w: %d shared experts of width %d", ErrMetadata, c.ExpertShared, c.FFExp)
		}
		// The shared experts are one FFN of their summed width.
		c.FFShared = c.FFExp * c.ExpertShared
	}
	return nil
}

// readExpertGroups reads the expert groups build_moe_ffn restricts the
// choice to (llama_model_base::load_hparams reads them for every
// architecture).
func readExpertGroups(c *Config, r *kvReader) error {
	if _, err := r.u32(r.key("expert_group_count"), &c.ExpertGroups, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_group_used_count"), &c.GroupsUsed, false); err != nil {
		return err
	}
	if c.ExpertGroups > 1 && (c.Experts%c.ExpertGroups != 0 || c.GroupsUsed < 1 || c.GroupsUsed > c.ExpertGroups) {
		return fmt.Errorf("%w: %d experts in %d groups, %d used", ErrMetadata, c.Experts, c.ExpertGroups, c.GroupsUsed)
	}
	return nil
}

// mlaKQScale is llama_model_deepseek2::graph's kq_scale: YaRN's attention
// factor with the ext-factor correction cancelled, times the mscale of the
// log multiplier, squared, over sqrt(n_embd_head_k_mla).
func (c *Config) mlaKQScale() float32 {
	lnf := float32(math.Log(float64(1 / c.RopeFreqScale)))
	org := c.RopeAttnFactor * (1 + 0.1*lnf)
	mscale := org * (1 + 0.1*c.YarnLogMul*lnf)
	return mscale * mscale / float32(math.Sqrt(float64(c.HeadDimKMLA)))
}

// openaiMoeHparams mirrors llama_model_openai_moe::load_arch_hparams: the
// sliding window is required, every other layer from the first is SWA
// (pattern 2), and the SWA layers share the dense layers' rope unless
// rope.freq_base_swa says otherwise.
func openaiMoeHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, true); err != nil {
		return err
	}
	if err := c.readSWAPattern(r, 2); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	_, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false)
	return err
}

// A dim is a tensor dimension in terms of the hyperparameters.
type dim uint8

const (
	dEmbd     dim = iota // n_embd
	dVocab               // n_vocab
	dCtx                 // n_ctx_train
	dFF                  // n_ff
	dFF2                 // 2·n_ff (phi3's fused gate_up)
	dQ                   // n_head·n_embd_head_k
	dKGQA                // n_head_kv·n_embd_head_k
	dVGQA                // n_head_kv·n_embd_head_v
	dHeadK               // n_embd_head_k
	dRot2                // n_rot/2
	dFusedQKV            // n_embd + n_embd_k_gqa + n_embd_v_gqa (gpt2)
	dExperts             // n_expert
	dFFExp               // each routed expert's FFN width
	dFFShared            // the shared expert's FFN width
	dFFSh2               // 2 × the shared expert's FFN width (gate and up fused)
	dQLora               // q_lora_rank
	dQMLA                // n_head·n_embd_head_k_mla
	dKVA                 // kv_lora_rank + n_rot
	dKVLora              // kv_lora_rank
	dNope                // n_embd_head_k_mla − n_rot
	dVMLA                // n_embd_head_v_mla
	dHeads               // n_head
	dOutMLA              // n_head·n_embd_head_v_mla
	dEmbd2               // 2·n_embd
	dHeadsKV             // n_head_kv
	dEmbd3               // 3·n_embd (lfm2's short-convolution in_proj)
	dConvL               // the short convolution's kernel (shortconv.l_cache)
	dQ2                  // 2·n_head·n_embd_head_k (query and gate)
	dKVB                 // n_head·(n_embd_head_k − n_rot + n_embd_head_v) (minicpm3's attn_kv_b)
	// A hybrid's recurrent blocks (Mamba-2, gated delta net): the conv
	// channels (d_inner + 2·n_group·d_state), d_inner, d_conv, dt_rank,
	// 2·dt_rank, d_state, Mamba-2's in_proj (2·d_inner +
	// 2·n_group·d_state + dt_rank), its group width (d_inner/n_group) and
	// n_group, Mamba's 2·d_inner and dt_rank + 2·d_state, and 1.
	dRecConv
	dRecInner
	dRecConvK
	dRecHeads
	dRecHeads2
	dRecState
	dRecIn2
	dRecGroupW
	dRecGroups
	dRecInner2
	dRecX
	dOne
	// gemma3n: n_altup, n_altup², n_altup − 1, laurel_rank, n_embd_altup
	// and n_embd_altup·n_layer.
	dAltup
	dAltupSq
	dAltupM1
	dLaurel
	dPerLayer
	dPerLayerAll
)

func (c *Config) size(d dim) int64 {
	switch d {
	case dEmbd:
		return int64(c.Embd)
	case dVocab:
		return int64(c.Vocab)
	case dCtx:
		return int64(c.CtxTrain)
	case dFF:
		return int64(c.FF)
	case dFF2:
		return 2 * int64(c.FF)
	case dQ:
		return int64(c.headsQ())
	case dKGQA:
		return int64(c.kvDimK())
	case dVGQA:
		return int64(c.kvDimV())
	case dHeadK:
		return int64(c.HeadDimK)
	case dRot2:
		return int64(c.Rot / 2)
	case dFusedQKV:
		return int64(c.Embd + c.kvDimK() + c.kvDimV())
	case dExperts:
		return int64(c.Experts)
	case dFFExp:
		return int64(c.FFExp)
	case dFFShared:
		return int64(c.FFShared)
	case dFFSh2:
		return 2 * int64(c.FFShared)
	case dQLora:
		return int64(c.QLora)
	case dQMLA:
		return int64(c.Heads * c.HeadDimKMLA)
	case dKVA:
		return int64(c.KVLora + c.Rot)
	case dKVLora:
		return int64(c.KVLora)
	case dNope:
		return int64(c.HeadDimKMLA - c.Rot)
	case dVMLA:
		return int64(c.HeadDimVMLA)
	case dHeads:
		return int64(c.Heads)
	case dOutMLA:
		return int64(c.Heads * c.HeadDimVMLA)
	case dEmbd2:
		return 2 * int64(c.Embd)
	case dHeadsKV:
		return int64(c.HeadsKV)
	case dEmbd3:
		return 3 * int64(c.Embd)
	case dConvL:
		return int64(c.ShortConv)
	case dQ2:
		return 2 * int64(c.headsQ())
	case dKVB:
		return int64(c.Heads * (c.HeadDimK - c.Rot + c.HeadDimV))
	case dRecConv:
		return int64(c.rssm.convDim())
	case dRecInner:
		return int64(c.rssm.dInner)
	case dRecConvK:
		return int64(c.rssm.dConv)
	case dRecHeads:
		return int64(c.rssm.dtRank)
	case dRecHeads2:
		return 2 * int64(c.rssm.dtRank)
	case dRecState:
		return int64(c.rssm.dState)
	case dRecIn2:
		return int64(c.rssm.dInner + c.rssm.convDim() + c.rssm.dtRank)
	case dRecGroupW:
		return int64(c.rssm.dInner / c.rssm.nGroup)
	case dRecGroups:
		return int64(c.rssm.nGroup)
	case dRecInner2:
		return 2 * int64(c.rssm.dInner)
	case dRecX:
		return int64(c.rssm.dtRank + 2*c.rssm.dState)
	case dOne:
		return 1
	case dAltup:
		return int64(c.g3n.altup)
	case dAltupSq:
		return int64(c.g3n.altup * c.g3n.altup)
	case dAltupM1:
		return int64(c.g3n.altup - 1)
	case dLaurel:
		return int64(c.g3n.laurelRank)
	case dPerLayer:
		return int64(c.g3n.perLayer)
	case dPerLayerAll:
		return int64(c.g3n.perLayer * c.Layers)
	}
	panic(fmt.Sprintf("forward: unknown dim %d", d))
}

// A rule is one tensor of load_arch_tensors ("%d" in the name stands for the
// block index), or, with qkv set, create_tensor_qkv's group: a fused
// attn_qkv (+ optional bias, or else optional separate biases) when the model
// has one, else attn_q/k/v with optional biases; its dims are then the input,
// Q, K and V widths. With gateUpExps set it is create_tensor_gate_up_exps's
// group: a fused ffn_gate_up_exps (n_embd × 2·n_ff_exp × n_expert, the
// gate rows of each expert first) when the model has one, else
// ffn_gate_exps and ffn_up_exps.
type rule struct {
	name       string
	dims       []dim
	optional   bool
	qkv        bool
	gateUpExps bool
	// only restricts the rule to some blocks or configurations.
	only ruleScope
}

type ruleScope uint8

const (
	always ruleScope = iota
	// onlyDense: a block with a dense FFN (every block of a model without
	// experts; the leading dense blocks and, with llama4's interleave, the
	// blocks between routed ones); onlyMoE: a block that routes its FFN;
	// onlyMoEShared: a routed block of a model with shared experts (glm4moe,
	// whose shared expert count may be 0).
	onlyDense
	onlyMoE
	onlyMoEShared
	// deepseek2's attn_q without a query LoRA, attn_q_a/b with one.
	onlyNoQLora
	onlyQLora
	// onlyLayers64: a model of at least 64 blocks (command-r's Q/K norms,
	// which Command R+ has and Command R has not).
	onlyLayers64
	// onlyAttn and onlyRecurrent: the attention and the recurrent blocks
	// of a hybrid (hybrid.go).
	onlyAttn
	onlyRecurrent
	// onlyRouted and onlyUnrouted: a block with or without ffn_gate_inp
	// (jamba's loader decides by the tensor's presence).
	onlyRouted
	onlyUnrouted
)

// applies reports whether the rule is part of configuration c (for a
// per-block rule, of some block).
func (r rule) applies(c *Config) bool { return r.appliesAt(c, -1) }

// appliesAt reports whether the rule is part of block il of configuration
// c (il < 0: any block).
func (r rule) appliesAt(c *Config, il int) bool {
	switch r.only {
	case onlyDense:
		return c.Experts == 0 || (il >= 0 && !c.moeLayer(il))
	case onlyMoE:
		return c.Experts > 0 && (il < 0 || c.moeLayer(il))
	case onlyNoQLora:
		return c.QLora == 0
	case onlyQLora:
		return c.QLora > 0
	case onlyMoEShared:
		return c.Experts > 0 && (il < 0 || c.moeLayer(il)) && c.FFShared > 0
	case onlyLayers64:
		return c.Layers >= 64
	case onlyAttn:
		return il < 0 || (!c.recurrent(il) && !c.ffnBlock(il))
	case onlyRecurrent:
		return il < 0 || c.recurrent(il)
	}
	return true
}

// dense marks rules as those of a dense FFN.
func dense(rs []rule) []rule { return scoped(rs, onlyDense) }

// scoped restricts rules to the blocks of scope only.
func scoped(rs []rule, only ruleScope) []rule {
	out := make([]rule, len(rs))
	for i, r := range rs {
		r.only = only
		out[i] = r
	}
	return out
}

// expertRules are a routed FFN's tensors (the router and the stacked
// experts, ne2 = n_expert) and, with shared, qwen2moe's shared expert.
func expertRules(shared bool) []rule {
	rs := []rule{
		{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, only: onlyMoE},
		{name: "blk.%d.ffn_gate_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}, only: onlyMoE},
		{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}, only: onlyMoE},
		{name: "blk.%d.ffn_up_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}, only: onlyMoE},
	}
	if shared {
		rs = append(rs,
			rule{name: "blk.%d.ffn_gate_inp_shexp.weight", dims: []dim{dEmbd}, only: onlyMoE},
			rule{name: "blk.%d.ffn_gate_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
			rule{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoE},
			rule{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE})
	}
	return rs
}

var (
	attnNormRule = rule{name: "blk.%d.attn_norm.weight", dims: []dim{dEmbd}}
	ffnNormRule  = rule{name: "blk.%d.ffn_norm.weight", dims: []dim{dEmbd}}
)

// headRules are the embedding and output tensors; withOutput allows an
// untied output.weight, outputBias an output.bias (qwen2).
func headRules(withOutput, outputBias bool) []rule {
	rs := []rule{
		{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
		{name: "output_norm.weight", dims: []dim{dEmbd}},
	}
	if withOutput {
		rs = append(rs, rule{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true})
	}
	if outputBias {
		rs = append(rs, rule{name: "output.bias", dims: []dim{dVocab}, optional: true})
	}
	return rs
}

// gatedFFNRules are ffn_gate/down/up, with llama's optional biases.
func gatedFFNRules(biases bool) []rule {
	rs := []rule{
		{name: "blk.%d.ffn_gate.weight", dims: []dim{dEmbd, dFF}},
		{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
		{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
	}
	if biases {
		rs = append(rs,
			rule{name: "blk.%d.ffn_gate.bias", dims: []dim{dFF}, optional: true},
			rule{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}, optional: true},
			rule{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}, optional: true})
	}
	return rs
}

// mlaKVRules are an MLA block's compressed key/value projections and its
// output (deepseek2 and its relatives, kimi-linear's attention blocks).
var mlaKVRules = []rule{
	{name: "blk.%d.attn_kv_a_mqa.weight", dims: []dim{dEmbd, dKVA}},
	{name: "blk.%d.attn_kv_a_norm.weight", dims: []dim{dKVLora}},
	{name: "blk.%d.attn_k_b.weight", dims: []dim{dNope, dKVLora, dHeads}},
	{name: "blk.%d.attn_v_b.weight", dims: []dim{dKVLora, dVMLA, dHeads}},
	{name: "blk.%d.attn_output.weight", dims: []dim{dOutMLA, dEmbd}},
}

func concat(parts ...[]rule) []rule {
	var out []rule
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TensorSpec is a tensor llama.cpp expects: its GGUF name and shape in ggml
// order (ne0, the row length, first).
type TensorSpec struct {
	Name     string
	Shape    []int64
	Optional bool
}

// ExpectedTensors lists the tensors llama.cpp's load_arch_tensors creates for
// this configuration, in its order; present says which names the model has
// (it decides between a fused and a split QKV, as create_tensor_qkv does).
// A model may hold the optional ones; it must hold every other one and
// nothing else (llama.cpp refuses a file with unused tensors).
func (c *Config) ExpectedTensors(present func(name string) bool) []TensorSpec {
	if c.g4 != nil {
		return c.gemma4Tensors(present)
	}
	if c.ssm != nil {
		return c.ssmTensors()
	}
	if c.rwkv != nil && c.rwkv.v6 {
		return c.rwkv6Tensors()
	}
	if c.rwkv != nil {
		return c.rwkv7Tensors(present)
	}
	var out []TensorSpec
	add := func(name string, optional bool, dims ...dim) {
		shape := make([]int64, len(dims))
		for i, d := range dims {
			shape[i] = c.size(d)
		}
		out = append(out, TensorSpec{Name: name, Shape: shape, Optional: optional})
	}
	for _, r := range c.arch.tensors {
		if !r.qkv && !r.gateUpExps && !strings.Contains(r.name, "%d") && r.applies(c) {
			add(r.name, r.optional, r.dims...)
		}
	}
	for il := 0; il < c.Layers+c.NextN; il++ {
		// A multi-token-prediction block (after Layers) may hold a whole
		// block and its own tensors, every one optional: llama.cpp skips
		// them, and a conversion may leave them out.
		mtp := il >= c.Layers
		if mtp {
			b := func(s string) string { return fmt.Sprintf("blk.%d.nextn.%s", il, s) }
			add(b("eh_proj.weight"), true, dEmbd2, dEmbd)
			for _, n := range []string{"enorm.weight", "hnorm.weight", "shared_head_norm.weight"} {
				add(b(n), true, dEmbd)
			}
			add(b("embed_tokens.weight"), true, dEmbd, dVocab)
			add(b("shared_head_head.weight"), true, dEmbd, dVocab)
		}
		routed := present(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", il))
		for _, r := range c.arch.tensors {
			switch {
			case !r.appliesAt(c, il), r.only == onlyRouted && !routed, r.only == onlyUnrouted && routed:
			case r.qkv:
				in, q, k, v := r.dims[0], r.dims[1], r.dims[2], r.dims[3]
				fused := fmt.Sprintf("blk.%d.attn_qkv.weight", il)
				if present(fused) {
					n := c.size(q) + c.size(k) + c.size(v)
					out = append(out, TensorSpec{Name: fused, Shape: []int64{c.size(in), n}, Optional: mtp},
						TensorSpec{Name: fmt.Sprintf("blk.%d.attn_qkv.bias", il), Shape: []int64{n}, Optional: true})
					if present(fmt.Sprintf("blk.%d.attn_qkv.bias", il)) {
						continue
					}
				} else {
					add(fmt.Sprintf("blk.%d.attn_q.weight", il), mtp, in, q)
					add(fmt.Sprintf("blk.%d.attn_k.weight", il), mtp, in, k)
					add(fmt.Sprintf("blk.%d.attn_v.weight", il), mtp, in, v)
				}
				add(fmt.Sprintf("blk.%d.attn_q.bias", il), true, q)
				add(fmt.Sprintf("blk.%d.attn_k.bias", il), true, k)
				add(fmt.Sprintf("blk.%d.attn_v.bias", il), true, v)
			case r.gateUpExps:
				fused := fmt.Sprintf("blk.%d.ffn_gate_up_exps.weight", il)
				if present(fused) {
					out = append(out, TensorSpec{Name: fused, Shape: []int64{c.size(dEmbd), 2 * c.size(dFFExp), c.size(dExperts)}, Optional: mtp})
				} else {
					add(fmt.Sprintf("blk.%d.ffn_gate_exps.weight", il), mtp, dEmbd, dFFExp, dExperts)
					add(fmt.Sprintf("blk.%d.ffn_up_exps.weight", il), mtp, dEmbd, dFFExp, dExperts)
				}
			case strings.Contains(r.name, "%d"):
				add(fmt.Sprintf(r.name, il), r.optional || mtp, r.dims...)
			}
		}
	}
	return out
}

// The text towers of the Qwen vision-language models (qwen2vl, qwen3vl,
// qwen3vlmoe) are qwen2, qwen3 and qwen3moe with multi-section rotary
// embeddings (M-RoPE; interleaved sections for qwen3vl): each rotary pair
// takes its position from the section it falls in (temporal, height,
// width). Text tokens have the same position in every section
// (transformers' get_rope_index, llama.cpp's text batches), which makes
// M-RoPE the plain NEOX rotation this package computes; images are not
// run. qwen3vl's deepstack layers only add vision features.
func init() {
	for vl, base := range map[string]string{"qwen2vl": "qwen2", "qwen3vl": "qwen3", "qwen3vlmoe": "qwen3moe"} {
		a := *archs[base]
		a.hparams = mropeHparams(a.hparams)
		archs[vl] = &a
	}
}

// mropeHparams reads rope.dimension_sections after base: llama.cpp's
// loaders require its 4 entries, each non-negative.
func mropeHparams(base func(*Config, *kvReader) error) func(*Config, *kvReader) error {
	return func(c *Config, r *kvReader) error {
		if err := base(c, r); err != nil {
			return err
		}
		key := r.key("rope.dimension_sections")
		v, _, err := r.lookup(key, gguf.TypeArray, true)
		if err != nil {
			return err
		}
		xs, ok := v.Any().([]int32)
		if !ok || len(xs) != 4 {
			return fmt.Errorf("%w: %s is not 4 int32 values", ErrMetadata, key)
		}
		for _, x := range xs {
			if x < 0 {
				return fmt.Errorf("%w: %s has a negative section (%v)", ErrMetadata, key, xs)
			}
		}
		return nil
	}
}

// fusedBlockRules are a GPT-2-style block's tensors: LayerNorms, a fused
// QKV, a plain GELU FFN, each with a bias (optional ones: mpt).
func fusedBlockRules(optionalBias bool) []rule {
	rules := []rule{attnNormRule, {name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dFusedQKV}},
		{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}}, ffnNormRule,
		{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}}, {name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}}}
	for _, b := range []struct {
		name string
		d    dim
	}{{"attn_norm", dEmbd}, {"attn_qkv", dFusedQKV}, {"attn_output", dEmbd}, {"ffn_norm", dEmbd}, {"ffn_down", dEmbd}, {"ffn_up", dFF}} {
		rules = append(rules, rule{name: "blk.%d." + b.name + ".bias", dims: []dim{b.d}, optional: optionalBias})
	}
	return rules
}
