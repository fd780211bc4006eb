package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/internal/fixture"
)

// TestConvertMMProj: --with-mmproj writes the text model and the projector
// (with the mmproj- prefix), inspect describes the projector, verify
// passes it (its vision tower run over the fixed image) and fails it with
// a wrong image mean, --list-architectures --mmproj lists the projectors, and a
// text-only checkpoint given --mmproj is refused.
func TestConvertMMProj(t *testing.T) {
	dir := t.TempDir()
	fx := "../../testdata/convert/gemma3mm"
	m, err := fixture.Load(fx)
	if err != nil {
		t.Fatal(err)
	}
	src, err := fixture.Assemble(fx, m, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "g-{ftype}.gguf")
	stdout, stderr, code := runCLI(t, "convert", "-q", "--outtype", "Q4_K_M", "--with-mmproj", "--outfile", out, src)
	if code != 0 || !strings.Contains(stdout, "g-q4_k_m.gguf: Q4_K_M") || !strings.Contains(stdout, "mmproj-g-f16.gguf: F16, 23 tensors") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	proj := filepath.Join(dir, "mmproj-g-f16.gguf")
	if stdout, _, code = runCLI(t, "inspect", proj); code != 0 || !strings.Contains(stdout, "multimodal projector gemma3") ||
		!strings.Contains(stdout, "vision tower: 1 blocks, width 16") {
		t.Errorf("inspect: exit %d, %q", code, stdout)
	}
	if stdout, stderr, code = runCLI(t, "verify", "--source", src, proj); code != 0 ||
		!strings.Contains(stdout, "vision tower: fixed 28×28 image → 4 image features of 64 values") {
		t.Errorf("verify: exit %d, %q %q", code, stdout, stderr)
	}
	// The image mean of another model (CLIP's for Gemma 3's 0.5): the
	// vision forward pass says the image features differ.
	broken := filepath.Join(dir, "mmproj-broken.gguf")
	if _, stderr, code = runCLI(t, "meta", "--set", "clip.vision.image_mean=[0.48145466, 0.4578275, 0.40821073]", proj, broken); code != 0 {
		t.Fatalf("meta: exit %d, %q", code, stderr)
	}
	if stdout, _, code = runCLI(t, "verify", "--source", src, broken); code != 1 || !strings.Contains(stdout, "forward: image features: cosine similarity") {
		t.Errorf("verify of a wrong image mean: exit %d, %q", code, stdout)
	}
	if stdout, _, code = runCLI(t, "convert", "--list-architectures", "--mmproj"); code != 0 || !strings.Contains(stdout, "Gemma3ForConditionalGeneration\n") ||
		strings.Contains(stdout, "LlamaForCausalLM") {
		t.Errorf("list: exit %d, %q", code, stdout)
	}
	_, stderr, code = runCLI(t, "convert", "-q", "--mmproj", "--outfile", filepath.Join(dir, "x.gguf"), convertSource)
	if code != 1 || !strings.Contains(stderr, "no vision or audio tower") {
		t.Errorf("text-only checkpoint: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gguf")); err == nil {
		t.Error("a file was written for a refused conversion")
	}
}
