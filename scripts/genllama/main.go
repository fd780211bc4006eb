// Command genllama writes a Llama-shaped Hugging Face model folder of a
// chosen size, for the conversion benchmark (scripts/bench-convert.sh):
//
//	go run ./scripts/genllama -o /tmp/llama-2g -layers 22
//
// The folder holds config.json, one BF16 model.safetensors with the real
// tensor names and shapes of LlamaForCausalLM (hidden 2048, 16 heads, 4 KV
// heads, FFN 5632 by default: about 90 MiB per layer), and the 512-token
// SentencePiece tokenizer of testdata/stories260K/source (-tokenizer). The
// values are deterministic pseudo-random weights of small magnitude.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/scripts/internal/stgen"
)

type shape struct {
	name string
	dims []int
}

func main() {
	out := flag.String("o", "", "output `DIR` (required; created)")
	layers := flag.Int("layers", 22, "number of blocks")
	hidden := flag.Int("hidden", 2048, "hidden size")
	ffn := flag.Int("ffn", 5632, "intermediate size")
	heads := flag.Int("heads", 16, "attention heads")
	kvHeads := flag.Int("kv-heads", 4, "key/value heads")
	tok := flag.String("tokenizer", "testdata/stories260K/source", "`DIR` whose tokenizer files are copied (vocabulary 512)")
	flag.Parse()
	if err := run(*out, *tok, *layers, *hidden, *ffn, *heads, *kvHeads); err != nil {
		fmt.Fprintln(os.Stderr, "genllama:", err)
		os.Exit(1)
	}
}

func run(dir, tok string, layers, hidden, ffn, heads, kvHeads int) error {
	switch {
	case dir == "":
		return errors.New("-o DIR is required")
	case layers <= 0 || layers > 512 || hidden <= 0 || hidden > 1<<16 || ffn <= 0 || ffn > 1<<18:
		return errors.New("sizes out of range")
	case heads <= 0 || kvHeads <= 0 || hidden%heads != 0 || heads%kvHeads != 0 || (hidden/heads)%2 != 0:
		return errors.New("heads must divide hidden (even head size) and be a multiple of kv-heads")
	}
	const vocab = 512
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	headDim := hidden / heads
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
		"num_attention_heads": heads, "num_key_value_heads": kvHeads, "head_dim": headDim,
		"vocab_size": vocab, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
		"rope_theta": 10000.0, "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2,
		"torch_dtype": "bfloat16",
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return err
	}
	for _, f := range []string{"tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} {
		if err := stgen.CopyFile(filepath.Join(tok, f), filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	ts := []shape{{"model.embed_tokens.weight", []int{vocab, hidden}}}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			shape{p + "input_layernorm.weight", []int{hidden}},
			shape{p + "mlp.down_proj.weight", []int{hidden, ffn}},
			shape{p + "mlp.gate_proj.weight", []int{ffn, hidden}},
			shape{p + "mlp.up_proj.weight", []int{ffn, hidden}},
			shape{p + "post_attention_layernorm.weight", []int{hidden}},
			shape{p + "self_attn.k_proj.weight", []int{kvHeads * headDim, hidden}},
			shape{p + "self_attn.o_proj.weight", []int{hidden, hidden}},
			shape{p + "self_attn.q_proj.weight", []int{hidden, hidden}},
			shape{p + "self_attn.v_proj.weight", []int{kvHeads * headDim, hidden}},
		)
	}
	ts = append(ts, shape{"lm_head.weight", []int{vocab, hidden}}, shape{"model.norm.weight", []int{hidden}})
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), ts)
}

func writeSafetensors(path string, ts []shape) error {
	entries := make([]stgen.Tensor, len(ts))
	var total int64
	for i, t := range ts {
		entries[i] = stgen.Tensor{Name: t.name, DType: "BF16", Shape: t.dims}
		total += entries[i].Bytes()
	}
	return stgen.Write(path, map[string]string{"format": "pt"}, entries, func(w io.Writer) error {
		buf := make([]byte, 1<<16)
		x := uint64(0x9E3779B97F4A7C15)
		for left := total; left > 0; {
			n := min(int64(len(buf)), left)
			for j := int64(0); j < n; j += 8 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				for k := range int64(4) {
					if j+2*k+1 < n {
						// Sign, 7 mantissa bits, exponent 117…124: |w| < 2^-2.
						r := uint16(x >> (16 * k))
						binary.LittleEndian.PutUint16(buf[j+2*k:], r&0x8000|(117+(r>>7)&7)<<7|r&0x7F)
					}
				}
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			left -= n
		}
		return nil
	})
}
