package quantize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// The parts of golden.json that golden_test.go's index leaves out: ggml's
// results on rows with a NaN, an Inf or a huge value (error_cases), and the
// hand-patched buffers given to ggml_validate_row_data (validate_cases), with
// ggml's messages.
type goldenExtraIndex struct {
	Errors []struct {
		Type          string  `json:"type"`
		Input         string  `json:"input"`
		Weights       bool    `json:"weights"`
		EncodedFile   *string `json:"encoded_file"`
		EncodedSHA256 *string `json:"encoded_sha256"`
		Valid         *bool   `json:"valid"` // null where ggml aborted
	} `json:"error_cases"`
	ErrorInputs []struct {
		Name string `json:"name"`
		File string `json:"file"`
	} `json:"error_inputs"`
	Validate []struct {
		Name    string  `json:"name"`
		Type    string  `json:"type"`
		File    string  `json:"file"`
		NBytes  int     `json:"nbytes"`
		Valid   bool    `json:"valid"`
		Message *string `json:"ggml_message"`
	} `json:"validate_cases"`
}

var loadGoldenExtra = sync.OnceValues(func() (*goldenExtraIndex, error) {
	b, err := os.ReadFile(filepath.Join(goldenDir, "golden.json"))
	if err != nil {
		return nil, err
	}
	var g goldenExtraIndex
	return &g, json.Unmarshal(b, &g)
})

func goldenExtra(t testing.TB) *goldenExtraIndex {
	t.Helper()
	g, err := loadGoldenExtra()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGoldenLarge completes TestGoldenEncode/TestGoldenDecode for the large
// input, whose ggml bytes are not stored in testdata (only their SHA-256):
// once an encoding's SHA-256 equals ggml's, the bytes are ggml's, so they
// must pass Validate exactly where ggml's did, and decoding them must give
// ggml's decoded SHA-256. Skipped with -short (it re-encodes 4 MiB per case).
func TestGoldenLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	g := golden(t)
	for _, c := range g.Cases {
		typ := gguf.Type(c.ID)
		if c.Input != "large" {
			continue
		}
		t.Run(caseName(c), func(t *testing.T) {
			if !CanEncode(typ) {
				t.Fatalf("%s: ggml encodes this type, ggufkit has no encoder", typ)
			}
			src, ncols, imatrix := goldenInput(t, g, c)
			enc := make([]byte, c.EncodedSize)
			if err := Encode(typ, enc, src, ncols, imatrix); err != nil {
				t.Fatal(err)
			}
			if sha(enc) != c.EncodedSHA256 {
				t.Fatalf("encoding sha256 %s, ggml %s", sha(enc), c.EncodedSHA256)
			}
			if err := Validate(typ, enc); (err == nil) != c.Valid {
				t.Errorf("Validate = %v, ggml valid = %v", err, c.Valid)
			}
			if c.DecodedSHA256 == nil {
				return // Q8_1: no decoder in ggml
			}
			if !CanDecode(typ) {
				t.Fatalf("%s: ggml decodes this type, ggufkit has no decoder", typ)
			}
			dec := make([]float32, len(src))
			if err := Decode(typ, dec, enc, ncols); err != nil {
				t.Fatal(err)
			}
			if got := sha(f32Bytes(dec)); got != *c.DecodedSHA256 {
				t.Fatalf("decoding sha256 %s, ggml %s", got, *c.DecodedSHA256)
			}
		})
	}
}

// TestGoldenHugeInput encodes the finite row with one value of 1e10, whose
// block scale overflows fp16 in most types: the bytes must still be ggml's,
// and Validate must reject them exactly where ggml did.
func TestGoldenHugeInput(t *testing.T) {
	g := goldenExtra(t)
	src := readF32(t, "errors/input_huge.f32")
	var weights []float32
	for _, c := range g.Errors {
		if c.Input != "huge" || c.EncodedSHA256 == nil || c.Valid == nil {
			continue
		}
		typ := mustParseType(t, c.Type)
		t.Run(c.Type, func(t *testing.T) {
			if !CanEncode(typ) {
				t.Fatalf("%s: ggml encodes this type, ggufkit has no encoder", typ)
			}
			var imatrix []float32
			if c.Weights {
				if weights == nil {
					weights = readF32(t, "weights_512.f32")[:len(src)]
				}
				imatrix = weights
			}
			n, _ := RowSize(typ, len(src))
			enc := make([]byte, n)
			if err := Encode(typ, enc, src, len(src), imatrix); err != nil {
				t.Fatal(err)
			}
			if got := sha(enc); got != *c.EncodedSHA256 {
				t.Errorf("encoding sha256 %s, ggml %s", got, *c.EncodedSHA256)
			}
			if err := Validate(typ, enc); (err == nil) != *c.Valid {
				t.Errorf("Validate = %v, ggml valid = %v", err, *c.Valid)
			}
		})
	}
}
