package verify

import "testing"

// TestClassicFixtures verifies ggufkit's conversions of the fixtures of
// verify/forward's arch_classic.go families (see TestFixtures).
func TestClassicFixtures(t *testing.T) {
	tests := []struct {
		fixture, prompt string
	}{
		{"nemotron", "Squared ReLU and LayerNorm1P"},
		{"minicpm", "Scaled embeddings, residuals and logits"},
		{"minicpm4", "LongRoPE factors and grouped keys"},
		{"minicpm3", "Latent attention, expanded per head"},
		{"orion", "LayerNorms with biases"},
		{"plm", "Latent attention without a query LoRA"},
		{"xverse", "Its own vocabulary routine"},
		{"codeshell", "Grouped keys in a fused QKV"},
		{"refact", "ALiBi with one key head"},
		{"pangu", "Biases and grouped keys"},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			checkFixture(t, tc.fixture, tc.prompt)
		})
	}
}
