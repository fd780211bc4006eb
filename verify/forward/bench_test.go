package forward

import (
	"context"
	"strconv"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// BenchmarkForward times a 32-token prompt in one batch and 16 tokens one
// at a time (verify's two ways of running a model) on stories260K and on a
// random llama of 512-wide rows held in memory, with 1 and 2 threads
// (scripts/bench-verify.sh times real files, a 1.1B one included).
func BenchmarkForward(b *testing.B) {
	kvs := with(with(with(with(llamaKVs(), "llama.embedding_length", gguf.Uint32(512)),
		"llama.feed_forward_length", gguf.Uint32(1408)), "llama.block_count", gguf.Uint32(4)),
		"llama.attention.head_count", gguf.Uint32(8))
	cfg, err := ParseConfig(KVMap(with(kvs, "llama.vocab_size", gguf.Uint32(512))))
	if err != nil {
		b.Fatal(err)
	}
	random := randomWeights(cfg, 7)
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = (i*7 + 1) % 512
	}
	for _, threads := range []int{1, 2} {
		for _, m := range []struct {
			name string
			load func() *Model
		}{
			{"stories260K", func() *Model { return openModel(b, storiesF32, threads) }},
			{"llama-512x4", func() *Model {
				m, err := Load(cfg, random, Options{Threads: threads})
				if err != nil {
					b.Fatal(err)
				}
				return m
			}},
		} {
			model := m.load()
			b.Run(m.name+"/prompt32/threads="+strconv.Itoa(threads), func(b *testing.B) {
				for b.Loop() {
					s, _ := model.NewSession(len(prompt))
					if _, err := s.Eval(context.Background(), prompt, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(prompt)*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
			b.Run(m.name+"/generate16/threads="+strconv.Itoa(threads), func(b *testing.B) {
				for b.Loop() {
					s, _ := model.NewSession(17)
					next := 1
					for range 16 {
						l, err := s.Eval(context.Background(), []int{next}, false)
						if err != nil {
							b.Fatal(err)
						}
						next = Argmax(l[0])
					}
				}
				b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
