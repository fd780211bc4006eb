package forward

import (
	"context"
	"testing"
)

// TestRecurrentTruncate cuts a recurrent session back and evaluates the
// rest of the prompt again: the state rebuilt from the kept tokens gives
// the logits of the uncut run (to float32 rounding: the products batch the
// rows differently).
func TestRecurrentTruncate(t *testing.T) {
	for _, fixture := range []string{"mamba2", "rwkv7", "rwkv6", "rwkv6qwen2", "arwkv7", "lfm2", "qwen35", "falconh1", "kimilinear", "nemotronhmoe"} {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			ids := readTransformersLogits(t, logitsOf(fixture)).PromptIDs
			f := convertFixture(t, fixture)
			cfg, err := ParseConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(cfg, GGUFWeights(f), Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.NewSession(len(ids))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			want, err := s.Eval(ctx, ids, false)
			if err != nil {
				t.Fatal(err)
			}
			s.Truncate(2)
			got, err := s.Eval(ctx, ids[2:], false)
			if err != nil {
				t.Fatal(err)
			}
			if d := relDiff(want, got); d > 1e-5 {
				t.Errorf("after Truncate(2): relative difference %.3g", d)
			}
		})
	}
}
