package mix

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Category is llama-quant.cpp's tensor_category: a broad class found by
// substring, not a per-architecture name.
type Category int

// The categories, as tensor_get_category assigns them.
const (
	Other Category = iota
	TokenEmbd
	AttnQ
	AttnV
	AttnK
	AttnQKV
	AttnKVB
	AttnOutput
	FFNUp
	FFNGate
	FFNDown
	Output
)

// categoryRules are tested in order; the first substring found wins
// (tensor_get_category). Output and token_embd match whole names.
var categoryRules = []struct {
	substr string
	cat    Category
}{
	{"attn_qkv.weight", AttnQKV},
	{"attn_kv_b.weight", AttnKVB},
	{"attn_v.weight", AttnV},
	{"attn_k.weight", AttnK},
	{"attn_q.weight", AttnQ},
	{"attn_output.weight", AttnOutput},
	{"ffn_up", FFNUp},
	{"ffn_gate", FFNGate},
	{"ffn_down", FFNDown},
}

func isTokenEmbd(name string) bool {
	return name == "token_embd.weight" || name == "per_layer_token_embd.weight"
}

// CategoryOf classifies a tensor name.
func CategoryOf(name string) Category {
	if name == "output.weight" {
		return Output
	}
	if isTokenEmbd(name) {
		return TokenEmbd
	}
	for _, r := range categoryRules {
		if strings.Contains(name, r.substr) {
			return r.cat
		}
	}
	return Other
}

// isAttnVLike: attention-v-like tensors are the most sensitive to quantization.
func (c Category) isAttnVLike() bool { return c == AttnV || c == AttnQKV || c == AttnKVB }

// neverQuantized lists substrings that keep a tensor in its type
// (tensor_allows_quantization): gating, routing tables, tiny altup/laurel
// tensors, positional and conv weights, RWKV's small 2-D weights, T5's
// relative bias, multimodal tensors, audio codebooks.
var neverQuantized = []string{
	"_norm.weight",
	"ffn_gate_inp.weight",
	"ffn_gate_tid2eid.weight",
	"altup",
	"laurel",
	"per_layer_model_proj",
	"ssm_conv1d",
	"shortconv.conv.weight",
	"indexer.k_proj.weight",
	"indexer.q_proj.weight",
	"time_mix_first.weight",
	"time_mix_w0.weight",
	"time_mix_w1.weight",
	"time_mix_w2.weight",
	"time_mix_v0.weight",
	"time_mix_v1.weight",
	"time_mix_v2.weight",
	"time_mix_a0.weight",
	"time_mix_a1.weight",
	"time_mix_a2.weight",
	"time_mix_g1.weight",
	"time_mix_g2.weight",
	"time_mix_decay_w1.weight",
	"time_mix_decay_w2.weight",
	"time_mix_lerp_fused.weight",
	"attn_rel_b.weight",
	".position_embd",
	"sam.pos_embd",
	"sam.neck.",
	"sam.net_",
	".rel_pos",
	".patch_embd",
	".patch_merger",
	"a.rvq.codebook",
	"mm.a.code_embd",
}

// neverQuantizedGLM5Next are further substrings for the glm5-next architecture.
var neverQuantizedGLM5Next = []string{
	"hc_", "indexer.attn_q_b", "indexer.attn_k", "indexer.proj", "indexer_compressor_gate",
	"indexer_compressor_ape", "ssm_f_a.weight", "ssm_f_b.weight", "ssm_g_a.weight", "ssm_g_b.weight",
	"ssm_beta.weight", "attn_kv_a_mqa.weight", "attn_k_b.weight", "attn_v_b.weight",
}

// nDims is ggml_n_dims: the dimension count without trailing 1s (at least 1).
func nDims(shape []uint64) int {
	n := len(shape)
	for n > 1 && shape[n-1] == 1 {
		n--
	}
	return max(n, 1)
}

// AllowsQuantization mirrors tensor_allows_quantization: only 2-D and 3-D
// weights, never norms, gates, position embeddings and the other listed
// tensors; output.weight only when the output tensor is quantized.
func AllowsQuantization(arch, name string, shape []uint64, opts *Options) bool {
	if opts.Copy || nDims(shape) < 2 || !strings.HasSuffix(name, "weight") {
		return false
	}
	if opts.LeaveOutput && name == "output.weight" {
		return false
	}
	if name == "position_embd.weight" || name == "token_types.weight" {
		return false
	}
	for _, s := range neverQuantized {
		if strings.Contains(name, s) {
			return false
		}
	}
	if arch == "glm5-next" {
		for _, s := range neverQuantizedGLM5Next {
			if strings.Contains(name, s) {
				return false
			}
		}
	}
	return true
}

// fallbacks is tensor_type_fallback's table: the type used when a row is
// not a whole number of blocks of the target type.
var fallbacks = map[gguf.Type]gguf.Type{
	gguf.IQ1_S: gguf.IQ4_NL, gguf.IQ1_M: gguf.IQ4_NL, gguf.IQ2_XXS: gguf.IQ4_NL, gguf.IQ2_XS: gguf.IQ4_NL,
	gguf.IQ2_S: gguf.IQ4_NL, gguf.IQ3_XXS: gguf.IQ4_NL, gguf.IQ3_S: gguf.IQ4_NL, gguf.IQ4_XS: gguf.IQ4_NL,
	gguf.Q2_0: gguf.Q4_0, gguf.Q2_K: gguf.Q4_0, gguf.Q3_K: gguf.Q4_0, gguf.TQ1_0: gguf.Q4_0, gguf.TQ2_0: gguf.Q4_0,
	gguf.Q4_K: gguf.Q5_0,
	gguf.Q5_K: gguf.Q5_1,
	gguf.Q6_K: gguf.Q8_0,
}

// Fallback returns the type a tensor with rows of ncols values gets instead
// of t (t itself when ncols is a whole number of blocks), and whether a
// fallback happened. A 32-block type that still does not fit, or a fallback
// that does not fit, becomes F16.
func Fallback(t gguf.Type, ncols uint64) (gguf.Type, bool, error) {
	bs := uint64(t.BlockSize())
	if bs == 0 || ncols%bs == 0 {
		return t, false, nil
	}
	r, ok := fallbacks[t]
	if !ok {
		if bs > 32 {
			return 0, true, fmt.Errorf("mix: no fallback type is defined for %s", t)
		}
		r = t
	}
	if ncols%uint64(r.BlockSize()) != 0 {
		r = gguf.F16
	}
	return r, true, nil
}

// RequiresImatrix mirrors tensor_requires_imatrix: the very low-bit types
// (and Q2_K inside a Q2_K_S file) need importance weights, except for
// token_embd and output.
func RequiresImatrix(name string, t gguf.Type, ft gguf.FileType) bool {
	if isTokenEmbd(name) || name == "output.weight" {
		return false
	}
	switch t {
	case gguf.IQ3_XXS, gguf.IQ2_XXS, gguf.IQ2_XS, gguf.IQ2_S, gguf.IQ1_M, gguf.IQ1_S:
		return true
	case gguf.Q2_K:
		return ft == gguf.FileTypeQ2_K_S
	}
	return false
}

// useMoreBits picks the layers that get more bits in the _M presets: the
// first and last eighth and every third layer between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}
