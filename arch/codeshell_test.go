package arch

import (
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestRefactFFN: RefactModel's feed-forward length, int(2 × 4·n_embd / 3)
// rounded up to a multiple of 256 (Refact-1.6B: 2048 → 5632).
func TestRefactFFN(t *testing.T) {
	for _, tc := range []struct{ embd, want int64 }{{2048, 5632}, {8, 256}, {96, 256}, {97, 512}} {
		if got := refactFFN(tc.embd); got != tc.want {
			t.Errorf("refactFFN(%d) = %d, want %d", tc.embd, got, tc.want)
		}
	}
}

// TestGPTCodeConfigErrors: a missing key of CodeShell's, Refact's or
// openPangu-Embedded's parameter list is an error naming it, and a split
// tensor with too few rows is refused.
func TestGPTCodeConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, js, want string }{
		{"codeshell without num_query_groups", `{"architectures":["CodeShellForCausalLM"],"n_layer":2,"n_positions":64,"n_embd":8,"n_head":2,"layer_norm_epsilon":1e-5}`, "num_query_groups"},
		{"codeshell without n_embd", `{"architectures":["CodeShellForCausalLM"],"n_layer":2,"n_positions":64,"n_head":2}`, "n_embd"},
		{"refact without layer_norm_epsilon", `{"architectures":["GPTRefactForCausalLM"],"n_layer":2,"n_positions":64,"n_embd":8,"n_head":2}`, "layer_norm_epsilon"},
		{"pangu without vocab_size", `{"architectures":["PanguEmbeddedForCausalLM"],"num_hidden_layers":2,"hidden_size":8,"num_attention_heads":2}`, "vocab_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, tc.js), "")
			if err == nil {
				_, err = m.Params(gguf.FileTypeF16)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
	t.Run("refact kv with too few rows", func(t *testing.T) {
		m, err := New(hp(t, `{"architectures":["GPTRefactForCausalLM"],"n_layer":2,"n_embd":8,"n_head":2}`), "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Modify(Input{Name: "transformer.h.0.attn.kv.weight", Shape: []int64{3, 8}}, 0)
		if err == nil || !strings.Contains(err.Error(), "fewer than 4 rows") {
			t.Fatalf("got %v, want the row count refused", err)
		}
	})
}
