package forward

import "testing"

// TestSSMFamilies runs Mamba, Falcon-Mamba, Mamba-2, RWKV-7, RWKV-6, ARWKV-7 and
// the hybrids (Nemotron-H's blocks of one kind each among them) of attention and recurrent blocks on their convert fixtures
// and compares the logits with transformers' (within 1e-5 relative, as the
// attention families here).
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
		{"arwkv7", "arwkv7", 1e-5},
		{"arwkv7gate", "arwkv7", 1e-5},
		{"lfm2", "lfm2", 1e-5},
		{"lfm2moe", "lfm2moe", 1e-5},
		{"qwen3next", "qwen3next", 1e-5},
		{"qwen35", "qwen35", 1e-5},
		// 2 key heads, 4 value heads: the tiled value-head order.
		{"qwen35gqa", "qwen35", 1e-5},
		{"qwen35moe", "qwen35moe", 1e-5},
		{"granitehybrid", "granitehybrid", 1e-5},
		{"jamba", "jamba", 1e-5},
		{"falconh1", "falcon-h1", 1e-5},
		// llama.cpp L2-normalises KDA's Q and K and RMS-normalises the MLA
		// latent with the layer epsilon (1e-5), transformers with 1e-6:
		// with 1e-6 there the logits agree to 5.0e-7.
		{"kimilinear", "kimi-linear", 2e-5},
		{"nemotronhmoe", "nemotron_h_moe", 1e-5},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			checkFamily(t, tc.fixture, tc.arch, tc.maxRel, nil, nil, nil)
		})
	}
}
