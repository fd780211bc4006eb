package forward

import (
	"testing"
)

// perHeadToQKV rearranges a NeoBERT attn_qkv (3·n rows of n values) from
// the remote code's per-head layout [q_h | k_h | v_h] to build_qkv's
// [Q | K | V] over all heads.
func perHeadToQKV(w []float32, n, heads int) []float32 {
	hd := n / heads
	out := make([]float32, 0, len(w))
	for part := range 3 {
		for h := range heads {
			r0 := (h*3 + part) * hd
			out = append(out, w[r0*n:(r0+hd)*n]...)
		}
	}
	return out
}

// TestNeoBERT runs NeoBERT's graph on the neobert fixture's F32 conversion
// and compares it with the fixture generator's PyTorch forward pass of the
// remote code (testdata/gen/fixtures/neobert.py). llama.cpp reads the fused
// qkv as [Q | K | V] over all heads (build_qkv), the model as [q_h | k_h |
// v_h] per head, and the converter writes it as stored: llama.cpp's graph,
// which this package follows, does not compute NeoBERT's output (cosine
// < 0.999 required here). With the projection rearranged to llama.cpp's
// layout, the rest of the graph (rotary pairs, SwiGLU, RMS norms, the
// output norm, CLS pooling) agrees: cosine ≥ 0.99999.
func TestNeoBERT(t *testing.T) {
	f := convertFixture(t, "neobert")
	want := readTransformersLogits(t, "neobert")
	ref := readEncoderReference(t, "neobert")
	for _, rearranged := range []bool{false, true} {
		name := map[bool]string{false: "file", true: "qkv per head rearranged"}[rearranged]
		t.Run(name, func(t *testing.T) {
			c, err := ParseEncoderConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			if c.Pooling != PoolingCLS {
				t.Fatalf("pooling %v, want cls", c.Pooling)
			}
			e, err := LoadEncoder(c, GGUFWeights(f))
			if err != nil {
				t.Fatal(err)
			}
			if rearranged {
				g := e.graph.(*neoBERT)
				for i := range g.layers {
					g.layers[i].qkv = perHeadToQKV(g.layers[i].qkv, c.Embd, c.Heads)
				}
			}
			least, pooled := runEncoder(t, e, want, c.Pooling)
			t.Logf("hidden states: least cosine %.8f; CLS-pooled cosine %.8f", least, Cosine(pooled, ref.Pooled))
			if !rearranged {
				if !(least < 0.999) {
					t.Errorf("least hidden state cosine %.7f: want llama.cpp's qkv layout to differ from the model's", least)
				}
				return
			}
			if !(least >= 0.99999) {
				t.Errorf("least hidden state cosine %.7f < 0.99999", least)
			}
			checkPooled(t, PoolingCLS, pooled, ref.Pooled)
		})
	}
}
