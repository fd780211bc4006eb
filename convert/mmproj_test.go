package convert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/arch"
)

// TestMMProjFixtures converts the projector of every multimodal fixture
// with an mmproj/expected-<outtype>.json (llama.cpp's --mmproj conversion)
// and compares the bytes.
func TestMMProjFixtures(t *testing.T) {
	exps, _ := filepath.Glob(filepath.Join(fixtures, "*", "mmproj", "expected-*.json"))
	if len(exps) == 0 {
		t.Fatal("no mmproj fixtures")
	}
	covered := map[string]bool{}
	for _, expPath := range exps {
		dir := filepath.Dir(filepath.Dir(expPath))
		m := loadFixture(t, dir)
		covered[m.Architecture] = true
		outtype := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(expPath), "expected-"), ".json")
		t.Run(m.Fixture+"/"+outtype, func(t *testing.T) {
			t.Parallel()
			var exp fixtureExpected
			b, err := os.ReadFile(expPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &exp); err != nil {
				t.Fatal(err)
			}
			src := assemble(t, dir, m, false)
			got := convertTo(t, src, Options{OutType: outtype, ModelName: m.Fixture, MMProj: true})
			data, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(data)
			if hex.EncodeToString(h[:]) != exp.File.SHA256 {
				t.Fatalf("sha256 differs from llama.cpp's: %s", describeDiff(got, &exp))
			}
		})
	}
	t.Run("registered", func(t *testing.T) {
		for _, a := range arch.SupportedMMProj() {
			if !covered[a] && !mmprojAliases[a] {
				t.Errorf("projector of %s is registered but has no fixture", a)
			}
		}
	})
}

// mmprojAliases are projector registrations that share a family with a
// name that has a fixture.
var mmprojAliases = map[string]bool{
	// LlavaVisionModel: Pixtral 12B's class, the same tower, projector and
	// tensor names as Mistral 3's (the mistral3 fixture).
	"LlavaForConditionalGeneration": true,
	// SmolVLMModel: SmolVLM2's name of the class of the smolvlm fixture
	// (Idefics3ForConditionalGeneration), the same tensors and keys.
	"SmolVLMForConditionalGeneration": true,
	// Qwen2VLVisionModel: the base model class of the qwen2vl fixture's.
	"Qwen2VLModel": true,
	// InternVisionModel: the vision_config.architectures that picks the
	// class of the internvl and internvlchat fixtures.
	"InternVisionModel": true,
}

// TestMMProjFileName checks the converter's default name: "mmproj-", the
// naming convention without a size label.
func TestMMProjFileName(t *testing.T) {
	dir := filepath.Join(fixtures, "gemma3mm")
	src := assemble(t, dir, loadFixture(t, dir), false)
	out := t.TempDir()
	rep, err := Run(context.Background(), src, Options{OutType: "f16", MMProj: true, OutFile: out, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(rep.Output), "mmproj-Gemma3Mm-F16.gguf"; got != want {
		t.Errorf("file name %s, want %s", got, want)
	}
}

// TestMMProjErrors: a text-only checkpoint, and a multimodal one whose
// projector is not converted.
func TestMMProjErrors(t *testing.T) {
	dir := filepath.Join(fixtures, "llama3tied")
	src := assemble(t, dir, loadFixture(t, dir), false)
	_, err := Run(context.Background(), src, Options{OutType: "f16", MMProj: true, DryRun: true})
	if !errors.Is(err, arch.ErrNoTower) {
		t.Errorf("text-only checkpoint: %v, want ErrNoTower", err)
	}
	_, err = Run(context.Background(), src, Options{OutType: "Q4_K_M", MMProj: true, DryRun: true})
	if err == nil {
		t.Error("--mmproj with a llama-quantize preset: no error")
	}
	// A multimodal checkpoint whose projector is not converted: the error
	// names the tower found and the projectors converted.
	dir = filepath.Join(fixtures, "gemma3n")
	src = assemble(t, dir, loadFixture(t, dir), false)
	_, err = Run(context.Background(), src, Options{OutType: "f16", MMProj: true, DryRun: true})
	var unsup *arch.UnsupportedError
	if !errors.As(err, &unsup) || !strings.Contains(err.Error(), `a vision tower of model_type "gemma3n_vision"`) ||
		!strings.Contains(err.Error(), "Gemma3ForConditionalGeneration") {
		t.Errorf("unconverted projector: %v", err)
	}
}
