package forward

import "testing"

// TestClassicFamilies runs the families of arch_classic.go on their convert
// fixtures and compares the logits with the fixture's reference
// (transformers', or our PyTorch forward pass of a remote-code model).
func TestClassicFamilies(t *testing.T) {
	tests := []struct {
		fixture, arch string
		maxRel        float64
	}{
		{"nemotron", "nemotron", 1e-6},
		{"minicpm", "minicpm", 1e-6},
		{"minicpm4", "minicpm", 1e-6},
		{"minicpm3", "minicpm3", 1e-6},
		{"orion", "orion", 1e-6},
		{"plm", "plm", 1e-6},
		{"xverse", "xverse", 1e-6},
		// GELU through ggml's fp16 table: 5.2e-4 (3.2e-7 with the
		// float64 reference's tanh GELU swapped in).
		{"codeshell", "codeshell", 1e-3},
		{"refact", "refact", 1e-6},
		{"pangu", "pangu-embedded", 1e-6},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			checkFamily(t, tc.fixture, tc.arch, tc.maxRel, nil, nil, nil)
		})
	}
}
