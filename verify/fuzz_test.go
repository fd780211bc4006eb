package verify

import (
	"context"
	"runtime/metrics"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// FuzzHyperparameters runs verify on stories260K's tensors under arbitrary
// hyperparameters and architecture names: whatever the metadata claims,
// verify must not panic, must not allocate far beyond the model's size, and
// must either report (a wrong shape, a refused key) or run.
func FuzzHyperparameters(f *testing.F) {
	f.Add("llama", uint32(64), uint32(5), uint32(8), uint32(4), uint32(172), uint32(8), uint32(512), float32(1e-5), float32(10000))
	f.Add("qwen2", uint32(64), uint32(5), uint32(8), uint32(4), uint32(172), uint32(8), uint32(512), float32(1e-6), float32(1e6))
	f.Add("gemma2", uint32(64), uint32(1), uint32(1), uint32(1), uint32(172), uint32(64), uint32(1), float32(0), float32(-1))
	f.Add("phi3", uint32(1<<24), uint32(512), uint32(1<<20), uint32(1), uint32(1<<24), uint32(0), uint32(1<<31), float32(1e30), float32(0))
	f.Add("gptneox", uint32(64), uint32(5), uint32(8), uint32(8), uint32(172), uint32(3), uint32(512), float32(1e-5), float32(10000))
	base := loadModel(f, storiesF32)
	f.Fuzz(func(t *testing.T, arch string, embd, layers, heads, headsKV, ff, rot, ctx uint32, eps, base_ float32) {
		m := &model{tensors: base.tensors}
		for _, kv := range base.kvs {
			if kv.Key == gguf.KeyGeneralArchitecture || len(kv.Key) > 9 && kv.Key[:9] == "tokenizer" {
				m.kvs = append(m.kvs, kv)
			}
		}
		m.setKV(gguf.KeyGeneralArchitecture, gguf.String(arch))
		for _, kv := range []struct {
			k string
			v uint32
		}{{"embedding_length", embd}, {"block_count", layers}, {"attention.head_count", heads},
			{"attention.head_count_kv", headsKV}, {"feed_forward_length", ff}, {"rope.dimension_count", rot}, {"context_length", ctx}} {
			m.setKV(arch+"."+kv.k, gguf.Uint32(kv.v))
		}
		m.setKV(arch+".attention.layer_norm_rms_epsilon", gguf.Float32(eps))
		m.setKV(arch+".attention.layer_norm_epsilon", gguf.Float32(eps))
		m.setKV(arch+".rope.freq_base", gguf.Float32(base_))
		m.setKV(arch+".use_parallel_residual", gguf.Bool(true))
		path := m.write(t)
		before := allocatedBytes()
		rep, err := Run(context.Background(), open(t, path), nil, Options{NPredict: 2, Threads: 1})
		if alloc := allocatedBytes() - before; alloc > 256<<20 {
			t.Fatalf("allocated %d bytes for a 1 MB model", alloc)
		}
		if err == nil && rep == nil {
			t.Fatal("no report and no error")
		}
	})
}

// allocatedBytes is the cumulative heap allocation of the process.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
