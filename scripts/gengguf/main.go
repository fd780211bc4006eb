// Command gengguf writes a Llama-shaped F16 GGUF of a chosen size for the
// requantize benchmark (scripts/bench-quantize.sh):
//
//	go run ./scripts/gengguf -o /tmp/llama-2g.gguf -layers 22
//
// The shapes are scripts/genllama's (LlamaForCausalLM with hidden 2048, 16
// heads, 4 KV heads, FFN 5632: about 90 MiB of F16 per layer), with a
// 32000-token embedding and output matrix, under the tensor names and
// llama.* metadata llama.cpp's converter writes; there is no tokenizer
// (llama-quantize does not read one). genllama writes safetensors for the
// converter; this writes the GGUF a requantizer starts from. The values are
// deterministic pseudo-random weights of small magnitude (σ ≈ 0.02, roughly
// normal), norms are 1.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/writer"
)

func main() {
	out := flag.String("o", "", "output `FILE` (required)")
	layers := flag.Int("layers", 22, "number of blocks")
	hidden := flag.Int("hidden", 2048, "hidden size")
	ffn := flag.Int("ffn", 5632, "intermediate size")
	heads := flag.Int("heads", 16, "attention heads")
	kvHeads := flag.Int("kv-heads", 4, "key/value heads")
	vocab := flag.Int("vocab", 32000, "vocabulary size (rows of token_embd and output)")
	flag.Parse()
	if err := run(*out, *layers, *hidden, *ffn, *heads, *kvHeads, *vocab); err != nil {
		fmt.Fprintln(os.Stderr, "gengguf:", err)
		os.Exit(1)
	}
}

type tensor struct {
	name  string
	shape []uint64 // GGUF order: row length first
}

func run(path string, layers, hidden, ffn, heads, kvHeads, vocab int) error {
	switch {
	case path == "":
		return errors.New("-o FILE is required")
	case layers <= 0 || layers > 512 || hidden <= 0 || hidden > 1<<16 || ffn <= 0 || ffn > 1<<18 || vocab <= 0 || vocab > 1<<20:
		return errors.New("sizes out of range")
	case heads <= 0 || kvHeads <= 0 || hidden%heads != 0 || heads%kvHeads != 0:
		return errors.New("heads must divide hidden and be a multiple of kv-heads")
	}
	h, f, v := uint64(hidden), uint64(ffn), uint64(vocab)
	kv := uint64(kvHeads * (hidden / heads))
	ts := []tensor{{"token_embd.weight", []uint64{h, v}}}
	for l := range layers {
		b := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tensor{b + "attn_norm.weight", []uint64{h}},
			tensor{b + "attn_q.weight", []uint64{h, h}},
			tensor{b + "attn_k.weight", []uint64{h, kv}},
			tensor{b + "attn_v.weight", []uint64{h, kv}},
			tensor{b + "attn_output.weight", []uint64{h, h}},
			tensor{b + "ffn_norm.weight", []uint64{h}},
			tensor{b + "ffn_gate.weight", []uint64{h, f}},
			tensor{b + "ffn_up.weight", []uint64{h, f}},
			tensor{b + "ffn_down.weight", []uint64{f, h}},
		)
	}
	ts = append(ts, tensor{"output_norm.weight", []uint64{h}}, tensor{"output.weight", []uint64{h, v}})

	w, err := writer.Create(context.Background(), path, writer.Options{Overwrite: true})
	if err != nil {
		return err
	}
	u := func(k string, x int) { w.SetKV(k, gguf.Uint32(uint32(x))) }
	w.SetKV("general.architecture", gguf.String("llama"))
	w.SetKV("general.type", gguf.String("model"))
	w.SetKV("general.name", gguf.String(fmt.Sprintf("gengguf llama %d layers", layers)))
	u("llama.block_count", layers)
	u("llama.context_length", 4096)
	u("llama.embedding_length", hidden)
	u("llama.feed_forward_length", ffn)
	u("llama.attention.head_count", heads)
	u("llama.attention.head_count_kv", kvHeads)
	w.SetKV("llama.rope.freq_base", gguf.Float32(10000))
	w.SetKV("llama.attention.layer_norm_rms_epsilon", gguf.Float32(1e-5))
	u("general.file_type", int(gguf.FileTypeF16))
	u("llama.vocab_size", vocab)
	u("llama.rope.dimension_count", hidden/heads)
	u("general.quantization_version", gguf.QuantizationVersion)
	for _, t := range ts {
		typ := gguf.F16
		if len(t.shape) == 1 {
			typ = gguf.F32
		}
		if err := w.AddTensor(t.name, typ, t.shape); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Start(); err != nil {
		w.Abort()
		return err
	}
	rng := uint64(0x9E3779B97F4A7C15)
	var buf []byte
	for _, t := range ts {
		n := int(t.shape[0])
		if len(t.shape) == 1 {
			buf = buf[:0]
			for range n {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(1))
			}
		} else {
			n *= int(t.shape[1])
			buf = buf[:0]
			for range n {
				buf = binary.LittleEndian.AppendUint16(buf, quantize.FP32ToFP16(gauss(&rng)))
			}
		}
		if err := w.WriteTensor(t.name, buf); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// gauss returns a roughly normal value of σ ≈ 0.02, the sum of four uniform
// variates of a xorshift generator: cheap, deterministic, and closer to real
// weights than a single uniform variate.
func gauss(s *uint64) float32 {
	var sum float32
	for range 4 {
		*s ^= *s << 13
		*s ^= *s >> 7
		*s ^= *s << 17
		sum += float32(*s>>40) / (1 << 24)
	}
	return (sum - 2) * 0.0346
}
