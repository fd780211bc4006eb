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
//
// With -experts N the feed-forward tensors become N stacked experts
// (ffn_gate_inp, ffn_{gate,up,down}_exps), as for Mixtral. With -imatrix
// FILE it also writes an importance matrix for the model in llama-imatrix's
// GGUF form (general.type imatrix, <name>.in_sum2 [ne0, experts] and
// <name>.counts [1, experts], imatrix.datasets/chunk_count/chunk_size) with
// deterministic positive sums and per-expert counts, so that requantizing
// with weights (and with per-expert slices) can be compared with
// llama-quantize on a model of any shape. testdata/llama-quantize holds two
// such small models (see its README).
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
	experts := flag.Int("experts", 0, "feed-forward experts (0: a dense model)")
	im := flag.String("imatrix", "", "also write an importance matrix for the model to `FILE`")
	flag.Parse()
	if err := run(*out, *im, *layers, *hidden, *ffn, *heads, *kvHeads, *vocab, *experts); err != nil {
		fmt.Fprintln(os.Stderr, "gengguf:", err)
		os.Exit(1)
	}
}

type tensor struct {
	name  string
	shape []uint64 // GGUF order: row length first
}

func run(path, imPath string, layers, hidden, ffn, heads, kvHeads, vocab, experts int) error {
	switch {
	case path == "":
		return errors.New("-o FILE is required")
	case layers <= 0 || layers > 512 || hidden <= 0 || hidden > 1<<16 || ffn <= 0 || ffn > 1<<18 || vocab <= 0 || vocab > 1<<20 ||
		experts < 0 || experts > 256:
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
		)
		if experts > 0 {
			e := uint64(experts)
			ts = append(ts,
				tensor{b + "ffn_gate_inp.weight", []uint64{h, e}},
				tensor{b + "ffn_gate_exps.weight", []uint64{h, f, e}},
				tensor{b + "ffn_up_exps.weight", []uint64{h, f, e}},
				tensor{b + "ffn_down_exps.weight", []uint64{f, h, e}},
			)
		} else {
			ts = append(ts,
				tensor{b + "ffn_gate.weight", []uint64{h, f}},
				tensor{b + "ffn_up.weight", []uint64{h, f}},
				tensor{b + "ffn_down.weight", []uint64{f, h}},
			)
		}
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
	if experts > 0 {
		u("llama.expert_count", experts)
		u("llama.expert_used_count", min(2, experts))
	}
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
			for _, d := range t.shape[1:] {
				n *= int(d)
			}
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
	if err := w.Close(); err != nil {
		return err
	}
	if imPath == "" {
		return nil
	}
	return writeImatrix(imPath, ts, max(1, experts))
}

// writeImatrix writes llama-imatrix's GGUF form for the matrix multiplies
// of ts (every 2-D and 3-D weight but the embedding, which llama-imatrix
// never sees): per tensor, Σx² over its columns for each expert and each
// expert's token count, chosen deterministically.
func writeImatrix(path string, ts []tensor, experts int) error {
	w, err := writer.Create(context.Background(), path, writer.Options{Overwrite: true})
	if err != nil {
		return err
	}
	w.SetKV("general.type", gguf.String("imatrix"))
	w.SetKV("imatrix.datasets", gguf.Array([]string{"gengguf"}))
	w.SetKV("imatrix.chunk_count", gguf.Uint32(10))
	w.SetKV("imatrix.chunk_size", gguf.Uint32(512))
	type entry struct {
		name  string
		sums  []byte
		count []byte
	}
	rng := uint64(0x243F6A8885A308D3)
	var es []entry
	for _, t := range ts {
		if len(t.shape) < 2 || t.name == "token_embd.weight" {
			continue
		}
		ne := 1
		if len(t.shape) == 3 {
			ne = experts
		}
		var e entry
		e.name = t.name
		for x := range ne {
			count := float32(100 + 37*x)
			e.count = binary.LittleEndian.AppendUint32(e.count, math.Float32bits(count))
			for range t.shape[0] {
				v := gauss(&rng) * 50
				e.sums = binary.LittleEndian.AppendUint32(e.sums, math.Float32bits(count*(0.01+v*v)))
			}
		}
		ne64 := uint64(ne)
		if err := w.AddTensor(e.name+".in_sum2", gguf.F32, []uint64{t.shape[0], ne64}); err != nil {
			w.Abort()
			return err
		}
		if err := w.AddTensor(e.name+".counts", gguf.F32, []uint64{1, ne64}); err != nil {
			w.Abort()
			return err
		}
		es = append(es, e)
	}
	if err := w.Start(); err != nil {
		w.Abort()
		return err
	}
	for _, e := range es {
		if err := w.WriteTensor(e.name+".in_sum2", e.sums); err != nil {
			w.Abort()
			return err
		}
		if err := w.WriteTensor(e.name+".counts", e.count); err != nil {
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
