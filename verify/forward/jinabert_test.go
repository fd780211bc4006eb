package forward

import (
	"testing"
)

// TestJinaBERTAlibi: without ALiBi's biases (or with those of another
// head count) Jina BERT v2's graph moves off the reference that
// TestEncoderFixtures matches to within 1e-8, below its 0.99999 bound (at
// the fixture's 16 values and 4 tokens the attention moves the post-normed
// states little: 6e-5 without any bias).
func TestJinaBERTAlibi(t *testing.T) {
	f := convertFixture(t, "jinabert")
	want := readTransformersLogits(t, "jinabert")
	tests := []struct {
		name  string
		alibi func(heads int) []float32
	}{
		{"no bias", func(heads int) []float32 { return make([]float32, heads) }},
		{"slopes of 4 heads", func(heads int) []float32 { return alibiSlopes(4, jinaMaxAlibiBias)[:heads] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseEncoderConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			e, err := LoadEncoder(c, GGUFWeights(f))
			if err != nil {
				t.Fatal(err)
			}
			e.alibi = tc.alibi(c.Heads)
			least, _ := runEncoder(t, e, want, c.Pooling)
			t.Logf("least hidden state cosine %.8f", least)
			if !(least < 0.99999) {
				t.Errorf("least hidden state cosine %.7f: the broken graph matches the reference", least)
			}
		})
	}
}

// TestAlibiSlopes checks ggml's slopes against ALiBi's closed forms: 2^(−8(h+1)/n)
// for a power of two, and for 12 heads those of 8 then every other one of 16.
func TestAlibiSlopes(t *testing.T) {
	got := alibiSlopes(12, 8)
	want := []float32{0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
		0.70710677, 0.35355338, 0.17677669, 0.088388346}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-7 || d < -1e-7 {
			t.Errorf("slope %d: %g, want %g", i, got[i], want[i])
		}
	}
}
