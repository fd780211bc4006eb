package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/requantize"
)

// TestOnePassSlabs: the one-pass quantizer reading a row at a time (expert
// stacks from their sources, Q/K permutations gathered, FP8 block scales
// applied per row) gives llama-quantize's bytes, as whole tensors do.
func TestOnePassSlabs(t *testing.T) {
	for _, name := range []string{"llama1", "mixtral", "dsv3fp8"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(fixtures, name)
			m := loadFixture(t, dir)
			var exp fixtureExpected
			b, err := os.ReadFile(filepath.Join(dir, "expected-Q4_K_M.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &exp); err != nil {
				t.Fatal(err)
			}
			got := convertTo(t, assemble(t, dir, m, false), Options{OutType: "Q4_K_M", ModelName: m.Fixture,
				Quantize: requantize.Options{SlabBytes: 1}})
			data, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != exp.File.SHA256 {
				t.Fatalf("sha256 differs from llama.cpp's: %s", describeDiff(got, &exp))
			}
		})
	}
}
