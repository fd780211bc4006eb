package convert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The LoRA fixtures in testdata/lora (see testdata/gen/make_lora_fixtures.py):
// PEFT adapters of convert fixtures, each with the digests of
// convert_lora_to_gguf.py's conversions (expected-<outtype>.json).
const loraFixtures = "../testdata/lora"

func TestLoRAFixtures(t *testing.T) {
	mans, _ := filepath.Glob(filepath.Join(loraFixtures, "*", "manifest.json"))
	if len(mans) == 0 {
		t.Fatal("no LoRA fixtures")
	}
	for _, manPath := range mans {
		dir := filepath.Dir(manPath)
		var man struct {
			Fixture string `json:"fixture"`
			Base    string `json:"base"`
		}
		b, err := os.ReadFile(manPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		exps, _ := filepath.Glob(filepath.Join(dir, "expected-*.json"))
		if len(exps) == 0 {
			t.Errorf("LoRA fixture %s has no expected-<outtype>.json", man.Fixture)
		}
		for _, expPath := range exps {
			outtype := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(expPath), "expected-"), ".json")
			t.Run(man.Fixture+"/"+outtype, func(t *testing.T) {
				t.Parallel()
				var exp fixtureExpected
				b, err := os.ReadFile(expPath)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &exp); err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(t.TempDir(), "out.gguf")
				base := filepath.Join(fixtures, man.Base)
				if _, err := RunLoRA(context.Background(), dir, LoRAOptions{Base: base, OutType: outtype, OutFile: out}); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				h := sha256.Sum256(data)
				if hex.EncodeToString(h[:]) != exp.File.SHA256 {
					t.Fatalf("sha256 differs from llama.cpp's: %s", describeDiff(out, &exp))
				}
			})
		}
	}
}
