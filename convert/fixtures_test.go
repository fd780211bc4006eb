package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/internal/fixture"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// The converter fixtures in testdata/convert (see its README): small models
// made with transformers from shrunken configs of real models, each with
// the digests of llama.cpp's own conversions (expected-<outtype>.json).
const fixtures = "../testdata/convert"

type fixtureExpected struct {
	File struct {
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"file"`
	KV []struct {
		Key    string          `json:"key"`
		Type   string          `json:"type"`
		Value  json.RawMessage `json:"value"`
		SHA256 string          `json:"sha256"`
	} `json:"kv"`
	Tensors []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Shape  []uint64 `json:"shape"`
		SHA256 string   `json:"sha256"`
	} `json:"tensors"`
}

// assemble builds the fixture's model folder in a temporary folder (see
// fixture.Assemble).
func assemble(t *testing.T, dir string, m *fixture.Manifest, pytorch bool) string {
	t.Helper()
	out, err := fixture.Assemble(dir, m, t.TempDir(), pytorch)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadFixture reads the manifest of the fixture folder dir.
func loadFixture(t testing.TB, dir string) *fixture.Manifest {
	t.Helper()
	m, err := fixture.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wave1 lists the architectures each of which needs a fixture (issue 6).
var wave1 = []string{"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
	"Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM",
	"Gemma3ForCausalLM", "Phi3ForCausalLM", "GPT2LMHeadModel", "GPTNeoXForCausalLM", "Starcoder2ForCausalLM",
	"BertModel", "BertForMaskedLM"}

// wave2 lists the wave-2 architectures, each of which needs a fixture too.
var wave2 = []string{"PhiForCausalLM", "FalconForCausalLM", "StableLmForCausalLM", "Olmo2ForCausalLM",
	"GraniteForCausalLM", "SmolLM3ForCausalLM", "GPTBigCodeForCausalLM", "OlmoForCausalLM", "CohereForCausalLM",
	"Exaone4ForCausalLM", "SeedOssForCausalLM"}

// aliasesWithoutFixture are registered names that share a plugin with a
// name that has a fixture and differ from it only in a tensor-name prefix
// or a head the converter drops; every other registered name needs a
// fixture of its own (waves 3 on).
var aliasesWithoutFixture = map[string]string{
	"LLaMAForCausalLM":              "LlamaForCausalLM",
	"LlamaModel":                    "LlamaForCausalLM",
	"Qwen2Model":                    "Qwen2ForCausalLM",
	"Qwen3Model":                    "Qwen3ForCausalLM",
	"BertForSequenceClassification": "BertModel",
	"LFM2ForCausalLM":               "Lfm2ForCausalLM",
	// ChatGLMModel's second name: the same remote-code checkpoints.
	"ChatGLMForConditionalGeneration": "ChatGLMModel",
	// Qwen2VLModel: Qwen2-VL's text tower and Qwen2.5-VL's differ only in
	// their vision towers, which the converter drops; the base model has no
	// lm_head; Qwen2.5-Omni's thinker carries a "thinker." prefix.
	"Qwen2VLModel":     "Qwen2_5_VLForConditionalGeneration",
	"Qwen2_5OmniModel": "Qwen2_5_VLForConditionalGeneration",
	// The Qwen3.5 text-only classes: the multimodal checkpoint's text tower
	// without the "model.language_model." prefix and the vision tower.
	"Qwen3_5ForCausalLM":    "Qwen3_5ForConditionalGeneration",
	"Qwen3_5MoeForCausalLM": "Qwen3_5MoeForConditionalGeneration",
	"Gemma4ForCausalLM":     "Gemma4ForConditionalGeneration",
	"Gemma3nForCausalLM":    "Gemma3nForConditionalGeneration",
	"Ernie4_5_ForCausalLM":  "Ernie4_5ForCausalLM",
	// JinaBertV2Model's two names: the same remote-code checkpoints.
	"JinaBertModel": "JinaBertForMaskedLM",
	// KimiLinearModel's second name: the same remote-code checkpoints.
	"KimiLinearModel": "KimiLinearForCausalLM",
	// BloomModel: BloomForCausalLM's checkpoint without the "transformer."
	// prefix (which the converter strips) and without a head.
	"BloomModel": "BloomForCausalLM",
	// LLaVA's StableLM text tower: StableLMEpoch's tensors beside the vision
	// tower and the mm_projector, which the converter drops.
	"LlavaStableLMEpochForCausalLM": "StableLMEpochForCausalLM",
	// GrokModel's second name: the same remote-code checkpoints.
	"Grok1ForCausalLM": "GrokForCausalLM",
}

func TestFixtures(t *testing.T) {
	mans, _ := filepath.Glob(filepath.Join(fixtures, "*", "manifest.json"))
	if len(mans) == 0 {
		t.Fatal("no fixtures")
	}
	covered := map[string]bool{}
	pytorchCopies := 0
	defer func() {
		for _, a := range append(slices.Clone(wave1), wave2...) {
			if !covered[a] {
				t.Errorf("no fixture of %s", a)
			}
		}
		for _, a := range arch.Supported() {
			if _, alias := aliasesWithoutFixture[a]; !covered[a] && !alias {
				t.Errorf("%s is registered but has no fixture", a)
			}
		}
		if pytorchCopies == 0 {
			t.Error("no fixture has a PyTorch copy")
		}
	}()
	for _, manPath := range mans {
		dir := filepath.Dir(manPath)
		m := loadFixture(t, dir)
		exps, _ := filepath.Glob(filepath.Join(dir, "expected-*.json"))
		mmproj, _ := filepath.Glob(filepath.Join(dir, "mmproj", "expected-*.json"))
		if len(exps) == 0 && len(mmproj) == 0 {
			t.Errorf("fixture %s has no expected-<outtype>.json", m.Fixture)
		} else if len(exps) > 0 {
			covered[m.Architecture] = true
		}
		if m.PyTorchCopy != nil {
			pytorchCopies++
		}
		for _, expPath := range exps {
			outtype := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(expPath), "expected-"), ".json")
			variants := []bool{false}
			if m.PyTorchCopy != nil {
				variants = append(variants, true)
			}
			for _, pt := range variants {
				name := m.Fixture + "/" + outtype
				if pt {
					name += "/pytorch"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					var exp fixtureExpected
					b, err := os.ReadFile(expPath)
					if err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal(b, &exp); err != nil {
						t.Fatal(err)
					}
					src := assemble(t, dir, m, pt)
					got := convertTo(t, src, Options{OutType: outtype, ModelName: m.Fixture})
					data, err := os.ReadFile(got)
					if err != nil {
						t.Fatal(err)
					}
					h := sha256.Sum256(data)
					if hex.EncodeToString(h[:]) == exp.File.SHA256 {
						return
					}
					t.Fatalf("sha256 differs from llama.cpp's: %s", describeDiff(got, &exp))
				})
			}
		}
	}
}

// describeDiff names the first metadata key or tensor that differs from a
// fixture's expectation.
func describeDiff(path string, exp *fixtureExpected) string {
	f, err := ggufread.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	for i, e := range exp.KV {
		if i >= len(f.KVs) {
			return fmt.Sprintf("missing key #%d %s", i, e.Key)
		}
		kv := f.KVs[i]
		if kv.Key != e.Key {
			return fmt.Sprintf("key #%d is %s, llama.cpp has %s", i, kv.Key, e.Key)
		}
		if e.SHA256 == "" {
			// The expectation's value is pretty-printed JSON: compare it compacted.
			var want bytes.Buffer
			if json.Compact(&want, e.Value) != nil {
				want.Reset()
				want.Write(e.Value)
			}
			if got, _ := json.Marshal(kv.Value.Any()); string(got) != want.String() && !jsonNumbersEqual(got, e.Value) {
				return fmt.Sprintf("%s = %s, llama.cpp %s", e.Key, got, e.Value)
			}
		}
	}
	if len(f.KVs) != len(exp.KV) {
		return fmt.Sprintf("%d keys, llama.cpp %d (extra: %s)", len(f.KVs), len(exp.KV), f.KVs[len(exp.KV)].Key)
	}
	for i, e := range exp.Tensors {
		if i >= len(f.Tensors) {
			return fmt.Sprintf("missing tensor %s", e.Name)
		}
		ti := f.Tensors[i]
		if ti.Name != e.Name || ti.Type.String() != e.Type || fmt.Sprint(ti.Shape) != fmt.Sprint(e.Shape) {
			return fmt.Sprintf("tensor #%d %s %s %v, llama.cpp %s %s %v", i, ti.Name, ti.Type, ti.Shape, e.Name, e.Type, e.Shape)
		}
		d, _ := f.TensorData(ti.Name)
		h := sha256.Sum256(d)
		if hex.EncodeToString(h[:]) != e.SHA256 {
			return fmt.Sprintf("tensor %s: data differs", ti.Name)
		}
	}
	return "metadata values with digests differ (large arrays)"
}

func jsonNumbersEqual(a, b []byte) bool {
	var x, y float64
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return float32(x) == float32(y)
}
