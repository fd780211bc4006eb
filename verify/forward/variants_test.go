package forward

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// tinyKVs is a small configuration of arch with the given extra keys.
func tinyKVs(arch string, layers, embd, heads, headsKV int, extra ...gguf.KV) []gguf.KV {
	k := func(s string) string { return arch + "." + s }
	eps := k("attention.layer_norm_epsilon")
	if archs[arch].norm == normRMS {
		eps = k("attention.layer_norm_rms_epsilon")
	}
	return append([]gguf.KV{
		{Key: "general.architecture", Value: gguf.String(arch)},
		{Key: k("context_length"), Value: gguf.Uint32(64)},
		{Key: k("embedding_length"), Value: gguf.Uint32(uint32(embd))},
		{Key: k("block_count"), Value: gguf.Uint32(uint32(layers))},
		{Key: k("feed_forward_length"), Value: gguf.Uint32(32)},
		{Key: k("attention.head_count"), Value: gguf.Uint32(uint32(heads))},
		{Key: k("attention.head_count_kv"), Value: gguf.Uint32(uint32(headsKV))},
		{Key: eps, Value: gguf.Float32(1e-5)},
		{Key: k("vocab_size"), Value: gguf.Uint32(10)},
	}, extra...)
}

// TestVariants runs the layouts of this package's newer architectures the
// fixtures do not reach (a parallel stablelm block, per-head Q/K norms,
// Falcon-7B's shared norm and multi-query attention, Olmo 3's sliding
// window with YaRN, clamped Q/K/V, ALiBi, gemma3n's KV-shared blocks at
// llama.cpp's sizes) on random weights: each loads, and a prompt evaluated
// at once and token by token gives the same logits.
func TestVariants(t *testing.T) {
	tests := []struct {
		name  string
		kvs   []gguf.KV
		cfg   func(*Config)
		extra []string // optional tensors to add (per block: "%d")
	}{
		{"olmo clamped", tinyKVs("olmo", 2, 16, 4, 2, gguf.KV{Key: "olmo.attention.clamp_kqv", Value: gguf.Float32(0.5)}), nil, nil},
		{"olmo3 sliding window with yarn", tinyKVs("olmo2", 4, 16, 4, 2,
			gguf.KV{Key: "olmo2.attention.sliding_window", Value: gguf.Uint32(2)},
			gguf.KV{Key: "olmo2.rope.scaling.type", Value: gguf.String("yarn")},
			gguf.KV{Key: "olmo2.rope.scaling.factor", Value: gguf.Float32(4)},
			gguf.KV{Key: "olmo2.rope.scaling.original_context_length", Value: gguf.Uint32(16)}), nil, nil},
		{"command-r+ q/k norms", tinyKVs("command-r", 64, 8, 2, 1), nil, nil},
		{"stablelm 2 12b", tinyKVs("stablelm", 2, 16, 4, 2, gguf.KV{Key: "stablelm.rope.dimension_count", Value: gguf.Uint32(2)}),
			nil, []string{"blk.%d.attn_q_norm.weight", "blk.%d.attn_k_norm.weight"}},
		{"falcon-7b", tinyKVs("falcon", 2, 16, 4, 1), nil, nil},
		// ALiBi over 3 heads (ggml's second slope series), biases; MPT's
		// ALiBi with the clamp and a QKV bias.
		{"bloom 3 heads", tinyKVs("bloom", 2, 12, 3, 3), nil, nil},
		{"mpt alibi clamped", tinyKVs("mpt", 2, 16, 4, 4, gguf.KV{Key: "mpt.attention.max_alibi_bias", Value: gguf.Float32(8)},
			gguf.KV{Key: "mpt.attention.clamp_kqv", Value: gguf.Float32(0.5)}), nil, []string{"blk.%d.attn_qkv.bias"}},
		{"phi2", tinyKVs("phi2", 2, 16, 2, 2, gguf.KV{Key: "phi2.rope.dimension_count", Value: gguf.Uint32(4)}), nil, nil},
		{"chatglm", tinyKVs("chatglm", 2, 16, 4, 2, gguf.KV{Key: "chatglm.rope.dimension_count", Value: gguf.Uint32(2)}), nil, nil},
		// Batched and single-token products round differently in the last
		// bit, which ggml's fp16 GELU table (three per gemma3n block) can
		// turn into a whole fp16 rounding step: 1.7e-5 here, under 1e-5 with the
		// exact GELU.
		{"gemma3n kv-shared", tinyKVs("gemma3n", 4, 16, 2, 1, gguf.KV{Key: "gemma3n.attention.sliding_window", Value: gguf.Uint32(3)}),
			func(c *Config) { c.g3n.kvFrom = 2 }, nil},
	}
	ctx := context.Background()
	tokens := []int{1, 7, 3, 9, 2, 5}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig(KVMap(tc.kvs))
			if err != nil {
				t.Fatal(err)
			}
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			w := randomWeights(cfg, 2)
			specs := map[string]TensorSpec{}
			for _, s := range cfg.ExpectedTensors(func(string) bool { return false }) {
				specs[s.Name] = s
			}
			for _, pattern := range tc.extra {
				for il := range cfg.Layers {
					s, ok := specs[fmt.Sprintf(pattern, il)]
					if !ok {
						t.Fatalf("no tensor %s", fmt.Sprintf(pattern, il))
					}
					n := int64(1)
					for _, d := range s.Shape {
						n *= d
					}
					data := make([]float32, n)
					for i := range data {
						data[i] = 1 + float32(i%5)/10
					}
					w[s.Name] = &memTensor{shape: s.Shape, data: data}
				}
			}
			m, err := Load(cfg, w, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.NewSession(len(tokens))
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.Eval(ctx, tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			s.Truncate(0)
			for i, id := range tokens {
				got, err := s.Eval(ctx, []int{id}, false)
				if err != nil {
					t.Fatal(err)
				}
				limit := 1e-5
				if cfg.g3n != nil {
					limit = 1e-4
				}
				if d := relDiff(want[i:i+1], got); d > limit {
					t.Errorf("position %d: relative difference %.3g from the batch", i, d)
				}
			}
		})
	}
}

// TestGLMFixturesRefused: neither GLM fixture runs as llama.cpp would run
// it. Both conversions say rope.dimension_count 1 (the converter's
// head_dim/2 of a 2-wide head; ggml_rope asserts an even count), and the
// glm one (transformers' layout) has Q and output projections
// n_head·head_dim = 16 wide where llama.cpp's loader, given no key_length,
// expects n_embd = 4.
func TestGLMFixturesRefused(t *testing.T) {
	for _, name := range []string{"glm", "chatglm4"} {
		t.Run(name, func(t *testing.T) {
			f := convertFixture(t, name)
			if _, err := ParseConfig(f); !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), "rope.dimension_count 1") {
				t.Fatalf("err = %v, want ErrMetadata about rope.dimension_count 1", err)
			}
			cfg, err := ParseConfig(withKV{f, "chatglm.rope.dimension_count", gguf.Uint32(2)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(cfg, GGUFWeights(f), Options{Threads: 1})
			if name == "chatglm4" {
				if err != nil {
					t.Fatalf("with an even rope count: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), "blk.0.attn_q.weight has shape [4 16], expected [4 4]") {
				t.Fatalf("err = %v, want the attn_q shape", err)
			}
		})
	}
}
