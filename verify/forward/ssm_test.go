package forward

import "testing"

// TestSSMFamilies runs Mamba, Falcon-Mamba, Mamba-2, RWKV-7 and RWKV-6 on
// their convert fixtures and compares the logits with transformers' (within
// 1e-5 relative, as the attention families here).
func TestSSMFamilies(t *testing.T) {
	tests := []struct {
		fixture, arch string
		maxRel        float64
	}{
		{"mamba", "mamba", 1e-5},
		// llama.cpp normalises Falcon-Mamba's Δ, B and C with the layer
		// epsilon (1e-5), transformers with mixer_rms_eps (1e-6): with
		// 1e-6 there the logits agree to 2.6e-7.
		{"falconmamba", "mamba", 5e-4},
		{"mamba2", "mamba2", 1e-5},
		// The RWKV ones against our float64 PyTorch implementations of
		// llama.cpp's graphs (testdata/gen/fixtures/rwkv.py), not transformers.
		{"rwkv7", "rwkv7", 1e-5},
		{"rwkv7fla", "rwkv7", 1e-5},
		{"rwkv6", "rwkv6", 1e-5},
		{"rwkv6qwen2", "rwkv6qwen2", 1e-5},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			checkFamily(t, tc.fixture, tc.arch, tc.maxRel, nil, nil, nil)
		})
	}
}
