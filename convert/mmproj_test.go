package convert

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
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
			if table, ok := mmprojTables[m.Fixture]; ok {
				spliceTable(t, got, data, filepath.Join(dir, "mmproj", table+".f32"), table)
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

// mmprojTables are the float32 tables the converter computes with torch's
// exp, sin and cos, whose last bit ggufkit's correctly rounded values do
// not always share (docs/compat.md): the fixture's mmproj/<tensor>.f32
// holds llama.cpp's values.
var mmprojTables = map[string]string{
	"qwen25omni": "a.position_embd.weight",
}

// spliceTable requires the F32 tensor name of the GGUF file path (whose
// bytes are data) to be within one ulp of the values in ref, then writes
// ref's values over it in data, so that the rest of the file is compared
// byte for byte.
func spliceTable(t *testing.T, path string, data []byte, ref, name string) {
	t.Helper()
	want, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor(name)
	if !ok || ti.Type != gguf.F32 {
		t.Fatalf("no F32 tensor %s", name)
	}
	off := f.DataOffset + int64(ti.Offset)
	if off+int64(len(want)) > int64(len(data)) {
		t.Fatalf("%s: %d bytes at %d, the file has %d", name, len(want), off, len(data))
	}
	got := data[off : off+int64(len(want))]
	for i := 0; i < len(want); i += 4 {
		a := int64(int32(binary.LittleEndian.Uint32(got[i:])))
		b := int64(int32(binary.LittleEndian.Uint32(want[i:])))
		if a-b > 1 || b-a > 1 {
			t.Fatalf("%s[%d]: %#x, llama.cpp %#x: more than one ulp apart", name, i/4, a, b)
		}
	}
	copy(got, want)
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
	// Qwen25OmniModel: the config's architectures of the qwen25omni
	// fixture, built as Qwen2_5OmniForConditionalGeneration.
	"Qwen2_5OmniModel": true,
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
	// A multimodal checkpoint whose projector llama.cpp's converter fails
	// on: the error says why.
	dir = filepath.Join(fixtures, "gemma3n")
	src = assemble(t, dir, loadFixture(t, dir), false)
	_, err = Run(context.Background(), src, Options{OutType: "f16", MMProj: true, DryRun: true})
	var unsup *arch.UnsupportedError
	if !errors.As(err, &unsup) || !strings.Contains(err.Error(), "subsample_conv_projection.conv_0.norm.weight") {
		t.Errorf("refused projector: %v", err)
	}
}
