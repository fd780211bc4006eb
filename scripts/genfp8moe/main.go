// Command genfp8moe writes a DeepSeek-V3-shaped FP8 Hugging Face model
// folder of a chosen size, for the FP8 MoE conversion benchmark
// (scripts/bench-fp8-moe.sh):
//
//	go run ./scripts/genfp8moe -o /tmp/dsv3-fp8 -layers 8
//
// The folder holds a DeepseekV3ForCausalLM config.json (the real
// deepseek-ai/DeepSeek-V3 keys, sizes scaled down, quantization_config fp8
// with 128×128 blocks), one model.safetensors with the Hub checkpoint's
// tensor names and dtypes — every projection of attention, dense MLP,
// routed and shared experts F8_E4M3 with an F32 weight_scale_inv per
// 128×128 block, norms, router and embeddings BF16, the router's
// e_score_correction_bias F32 — and the GPT-2 tokenizer of the deepseek
// fixtures (testdata/convert/tokenizers/gpt2, vocabulary 50257). The
// defaults (hidden 2048, 64 experts of 1024, one leading dense block) make
// about 415 MiB per block plus 400 MiB of embeddings: -layers 8 is 3.7 GB.
// Values are deterministic pseudo-random: FP8 codes of moderate magnitude
// (never NaN), power-of-two-ish scales, BF16 weights |w| < 2^-2.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/scripts/internal/stgen"
)

// sizes are the model's dimensions.
type sizes struct {
	layers, hidden, heads, qLora, kvLora, nope, rope, vHead int
	ffn, moeFFN, experts, shared, used, dense               int
}

// fp8Block is DeepSeek-V3's weight_block_size.
const fp8Block = 128

// vocab is the GPT-2 tokenizer's.
const vocab = 50257

func main() {
	var s sizes
	out := flag.String("o", "", "output `DIR` (required; created)")
	flag.IntVar(&s.layers, "layers", 8, "number of blocks")
	flag.IntVar(&s.hidden, "hidden", 2048, "hidden size")
	flag.IntVar(&s.heads, "heads", 16, "attention heads")
	flag.IntVar(&s.qLora, "q-lora", 768, "q_lora_rank")
	flag.IntVar(&s.kvLora, "kv-lora", 512, "kv_lora_rank")
	flag.IntVar(&s.nope, "nope", 128, "qk_nope_head_dim")
	flag.IntVar(&s.rope, "rope", 64, "qk_rope_head_dim")
	flag.IntVar(&s.vHead, "v-head", 128, "v_head_dim")
	flag.IntVar(&s.ffn, "ffn", 5632, "intermediate_size (the dense blocks)")
	flag.IntVar(&s.moeFFN, "moe-ffn", 1024, "moe_intermediate_size")
	flag.IntVar(&s.experts, "experts", 64, "n_routed_experts")
	flag.IntVar(&s.shared, "shared", 1, "n_shared_experts")
	flag.IntVar(&s.used, "used", 8, "num_experts_per_tok")
	flag.IntVar(&s.dense, "dense", 1, "first_k_dense_replace")
	tok := flag.String("tokenizer", "testdata/convert/tokenizers/gpt2", "`DIR` whose tokenizer files are copied (GPT-2, 50257 tokens)")
	flag.Parse()
	if err := run(*out, *tok, s); err != nil {
		fmt.Fprintln(os.Stderr, "genfp8moe:", err)
		os.Exit(1)
	}
}

func (s sizes) check() error {
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	switch {
	case !in(s.layers, 1, 256) || !in(s.hidden, 1, 1<<15) || !in(s.heads, 1, 1024) || !in(s.experts, 1, 1024):
		return errors.New("sizes out of range (layers 1…256, hidden 1…32768, heads 1…1024, experts 1…1024)")
	case !in(s.qLora, 1, 1<<15) || !in(s.kvLora, 1, 1<<15) || !in(s.nope, 1, 1024) || !in(s.rope, 2, 1024) || s.rope%2 != 0 || !in(s.vHead, 1, 1024):
		return errors.New("attention sizes out of range (rope even)")
	case !in(s.ffn, 1, 1<<17) || !in(s.moeFFN, 1, 1<<17) || !in(s.shared, 0, 64) || !in(s.used, 1, s.experts) || !in(s.dense, 0, s.layers):
		return errors.New("MLP sizes out of range (used ≤ experts, dense ≤ layers)")
	}
	return nil
}

func run(dir, tok string, s sizes) error {
	if dir == "" {
		return errors.New("-o DIR is required")
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeConfig(dir, s); err != nil {
		return err
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := stgen.CopyFile(filepath.Join(tok, f), filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), tensors(s))
}

// writeConfig writes deepseek-ai/DeepSeek-V3's config.json with the sizes
// of s.
func writeConfig(dir string, s sizes) error {
	cfg := map[string]any{
		"architectures": []string{"DeepseekV3ForCausalLM"}, "model_type": "deepseek_v3",
		"attention_bias": false, "attention_dropout": 0.0, "aux_loss_alpha": 0.001,
		"bos_token_id": 50256, "eos_token_id": 50256, "ep_size": 1,
		"first_k_dense_replace": s.dense, "hidden_act": "silu", "hidden_size": s.hidden,
		"initializer_range": 0.02, "intermediate_size": s.ffn, "kv_lora_rank": s.kvLora,
		"max_position_embeddings": 163840, "moe_intermediate_size": s.moeFFN, "moe_layer_freq": 1,
		"n_group": 1, "n_routed_experts": s.experts, "n_shared_experts": s.shared, "norm_topk_prob": true,
		"num_attention_heads": s.heads, "num_experts_per_tok": s.used, "num_hidden_layers": s.layers,
		"num_key_value_heads": s.heads, "num_nextn_predict_layers": 0, "q_lora_rank": s.qLora,
		"qk_nope_head_dim": s.nope, "qk_rope_head_dim": s.rope,
		"quantization_config": map[string]any{
			"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
			"weight_block_size": []int{fp8Block, fp8Block},
		},
		"rms_norm_eps": 1e-06,
		"rope_scaling": map[string]any{
			"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
			"original_max_position_embeddings": 4096, "type": "yarn",
		},
		"rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true,
		"tie_word_embeddings": false, "topk_group": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
		"transformers_version": "4.46.3", "use_cache": true, "v_head_dim": s.vHead, "vocab_size": vocab,
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644)
}

// tensor is one checkpoint tensor: its name, dtype and shape.
type tensor struct {
	name, dtype string
	dims        []int
}

func (t tensor) bytes() int64 {
	return stgen.Tensor{DType: t.dtype, Shape: t.dims}.Bytes()
}

// tensors lists the checkpoint's tensors in the Hub files' order (by name
// within a block, blocks in order).
func tensors(s sizes) []tensor {
	ts := []tensor{{"model.embed_tokens.weight", "BF16", []int{vocab, s.hidden}}}
	fp8 := func(name string, rows, cols int) []tensor {
		return []tensor{{name + ".weight", "F8_E4M3", []int{rows, cols}},
			{name + ".weight_scale_inv", "F32", []int{(rows + fp8Block - 1) / fp8Block, (cols + fp8Block - 1) / fp8Block}}}
	}
	mlp := func(p string, ffn int) []tensor {
		var out []tensor
		out = append(out, fp8(p+"down_proj", s.hidden, ffn)...)
		out = append(out, fp8(p+"gate_proj", ffn, s.hidden)...)
		return append(out, fp8(p+"up_proj", ffn, s.hidden)...)
	}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts, tensor{p + "input_layernorm.weight", "BF16", []int{s.hidden}})
		if l < s.dense {
			ts = append(ts, mlp(p+"mlp.", s.ffn)...)
		} else {
			for e := range s.experts {
				ts = append(ts, mlp(fmt.Sprintf("%smlp.experts.%d.", p, e), s.moeFFN)...)
			}
			ts = append(ts, tensor{p + "mlp.gate.e_score_correction_bias", "F32", []int{s.experts}},
				tensor{p + "mlp.gate.weight", "BF16", []int{s.experts, s.hidden}})
			if s.shared > 0 {
				ts = append(ts, mlp(p+"mlp.shared_experts.", s.moeFFN*s.shared)...)
			}
		}
		ts = append(ts, tensor{p + "post_attention_layernorm.weight", "BF16", []int{s.hidden}},
			tensor{p + "self_attn.kv_a_layernorm.weight", "BF16", []int{s.kvLora}})
		ts = append(ts, fp8(p+"self_attn.kv_a_proj_with_mqa", s.kvLora+s.rope, s.hidden)...)
		ts = append(ts, fp8(p+"self_attn.kv_b_proj", s.heads*(s.nope+s.vHead), s.kvLora)...)
		ts = append(ts, fp8(p+"self_attn.o_proj", s.hidden, s.heads*s.vHead)...)
		ts = append(ts, tensor{p + "self_attn.q_a_layernorm.weight", "BF16", []int{s.qLora}})
		ts = append(ts, fp8(p+"self_attn.q_a_proj", s.qLora, s.hidden)...)
		ts = append(ts, fp8(p+"self_attn.q_b_proj", s.heads*(s.nope+s.rope), s.qLora)...)
	}
	return append(ts, tensor{"lm_head.weight", "BF16", []int{vocab, s.hidden}},
		tensor{"model.norm.weight", "BF16", []int{s.hidden}})
}

// writeSafetensors writes the checkpoint, every tensor's values streamed.
func writeSafetensors(path string, ts []tensor) error {
	entries := make([]stgen.Tensor, len(ts))
	for i, t := range ts {
		entries[i] = stgen.Tensor{Name: t.name, DType: t.dtype, Shape: t.dims}
	}
	return stgen.Write(path, map[string]string{"format": "pt", "generator": "ggufkit scripts/genfp8moe"}, entries, func(w io.Writer) error {
		g := rng(0x9E3779B97F4A7C15)
		buf := make([]byte, 1<<16)
		for _, t := range ts {
			for left := t.bytes(); left > 0; {
				n := min(int64(len(buf)), left)
				fill(buf[:n], t, &g)
				if _, err := w.Write(buf[:n]); err != nil {
					return err
				}
				left -= n
			}
		}
		return nil
	})
}

// rng is xorshift64.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

// fill writes pseudo-random values of t's dtype into b (a whole number of
// values: the buffer size is a multiple of every element size).
func fill(b []byte, t tensor, g *rng) {
	switch t.dtype {
	case "F8_E4M3":
		// Sign, exponent 1…14 (never S.1111.111, the NaN), 3 mantissa bits:
		// |x| in [2^-6, 2^8).
		for i := 0; i < len(b); i += 8 {
			x := g.next()
			for k := 0; k < 8 && i+k < len(b); k++ {
				r := byte(x >> (8 * k))
				b[i+k] = r&0x80 | (1+(r>>3)%14)<<3 | r&7
			}
		}
	case "F32":
		// Scales (and the router bias): 2^-12 … 2^-5 times a mantissa.
		for i := 0; i+4 <= len(b); i += 4 {
			x := uint32(g.next())
			v := float32(1+float64(x&0xFFFF)/65536) * float32(math.Ldexp(1, -12+int(x>>16)%8))
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(v))
		}
	default: // BF16: sign, 7 mantissa bits, exponent 117…124 (|w| < 2^-2); norms the same.
		for i := 0; i < len(b); i += 8 {
			x := g.next()
			for k := 0; k < 4 && i+2*k+1 < len(b); k++ {
				r := uint16(x >> (16 * k))
				binary.LittleEndian.PutUint16(b[i+2*k:], r&0x8000|(117+(r>>7)&7)<<7|r&0x7F)
			}
		}
	}
}
