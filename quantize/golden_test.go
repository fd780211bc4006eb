package quantize

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// The golden vectors in testdata/golden were made by ggml itself (see the
// README.txt there): every case's encoding must equal ggml's byte for byte,
// and decoding ggml's bytes must equal ggml's to_float bit for bit.

type goldenCase struct {
	Type          string  `json:"type"`
	ID            int     `json:"id"`
	Input         string  `json:"input"`
	Weights       bool    `json:"weights"`
	EncodedFile   *string `json:"encoded_file"`
	EncodedSize   int     `json:"encoded_size"`
	EncodedSHA256 string  `json:"encoded_sha256"`
	DecodedFile   *string `json:"decoded_file"`
	DecodedSHA256 *string `json:"decoded_sha256"`
	Valid         bool    `json:"valid"`
}

type goldenIndex struct {
	Inputs map[string]struct {
		File string `json:"file"`
		Rows int    `json:"rows"`
		Cols int    `json:"cols"`
	} `json:"inputs"`
	Weights map[string]struct {
		File string `json:"file"`
	} `json:"weights"`
	Types []struct {
		Name           string `json:"name"`
		ID             int    `json:"id"`
		BlockSize      int    `json:"block_size"`
		TypeSize       int    `json:"type_size"`
		RequiresIM     bool   `json:"requires_imatrix"`
		WeightsIgnored *bool  `json:"weights_ignored"` // null for Q8_1, Q8_K and the imatrix-only types
	} `json:"types"`
	Cases    []goldenCase `json:"cases"`
	Validate []struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		File  string `json:"file"`
		Valid bool   `json:"valid"`
	} `json:"validate_cases"`
}

const goldenDir = "testdata/golden"

var loadGolden = sync.OnceValues(func() (*goldenIndex, error) {
	b, err := os.ReadFile(filepath.Join(goldenDir, "golden.json"))
	if err != nil {
		return nil, err
	}
	var g goldenIndex
	return &g, json.Unmarshal(b, &g)
})

func golden(t testing.TB) *goldenIndex {
	t.Helper()
	g, err := loadGolden()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func readF32(t testing.TB, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32Bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// goldenInput returns the input matrix, its row length and the weights of a case.
func goldenInput(t testing.TB, g *goldenIndex, c goldenCase) (src []float32, ncols int, imatrix []float32) {
	in := g.Inputs[c.Input]
	src = readF32(t, in.File)
	if c.Weights {
		w := "weights_512"
		if in.Cols == 4096 {
			w = "weights_4096"
		}
		imatrix = readF32(t, g.Weights[w].File)
	}
	return src, in.Cols, imatrix
}

func caseName(c goldenCase) string {
	n := c.Type + "/" + c.Input
	if c.Weights {
		n += "+imatrix"
	}
	return n
}

func TestGoldenTypeTable(t *testing.T) {
	for _, ty := range golden(t).Types {
		typ := gguf.Type(ty.ID)
		if typ.String() != ty.Name || typ.BlockSize() != ty.BlockSize || typ.TypeSize() != ty.TypeSize {
			t.Errorf("%s: table has %s %d/%d, ggml %s %d/%d", ty.Name, typ, typ.BlockSize(), typ.TypeSize(), ty.Name, ty.BlockSize, ty.TypeSize)
		}
		if RequiresImatrix(typ) != ty.RequiresIM && CanEncode(typ) {
			t.Errorf("%s: RequiresImatrix = %v, ggml %v", ty.Name, RequiresImatrix(typ), ty.RequiresIM)
		}
		if CanEncode(typ) && ty.WeightsIgnored != nil && UsesImatrix(typ) == *ty.WeightsIgnored {
			t.Errorf("%s: UsesImatrix = %v, ggml ignores weights: %v", ty.Name, UsesImatrix(typ), *ty.WeightsIgnored)
		}
	}
}

func TestGoldenEncode(t *testing.T) {
	g := golden(t)
	for _, c := range g.Cases {
		typ := gguf.Type(c.ID)
		t.Run(caseName(c), func(t *testing.T) {
			if !CanEncode(typ) {
				t.Fatalf("%s: ggml encodes this type, ggufkit has no encoder", typ)
			}
			src, ncols, imatrix := goldenInput(t, g, c)
			dst := make([]byte, c.EncodedSize)
			if err := Encode(typ, dst, src, ncols, imatrix); err != nil {
				t.Fatal(err)
			}
			if got := sha(dst); got != c.EncodedSHA256 {
				if c.EncodedFile != nil {
					want, err := os.ReadFile(filepath.Join(goldenDir, *c.EncodedFile))
					if err == nil {
						t.Fatalf("encoding differs from ggml's: %s", firstDiff(dst, want, c.EncodedSize/(len(src)/ncols)))
					}
				}
				t.Fatalf("encoding sha256 %s, ggml %s", got, c.EncodedSHA256)
			}
		})
	}
}

func TestGoldenDecode(t *testing.T) {
	g := golden(t)
	for _, c := range g.Cases {
		typ := gguf.Type(c.ID)
		if c.DecodedSHA256 == nil {
			continue // Q8_1 has no decoder in ggml
		}
		if c.Input == "large" {
			continue // TestGoldenLarge decodes the large input (its ggml bytes are not copied)
		}
		t.Run(caseName(c), func(t *testing.T) {
			if !CanDecode(typ) {
				t.Fatalf("%s: ggml decodes this type, ggufkit has no decoder", typ)
			}
			if c.EncodedFile == nil {
				t.Fatal("golden.json lists no encoded file for a small case")
			}
			enc, err := os.ReadFile(filepath.Join(goldenDir, *c.EncodedFile))
			if err != nil {
				t.Fatal(err)
			}
			in := g.Inputs[c.Input]
			dst := make([]float32, in.Rows*in.Cols)
			if err := Decode(typ, dst, enc, in.Cols); err != nil {
				t.Fatal(err)
			}
			got := f32Bytes(dst)
			if sha(got) == *c.DecodedSHA256 {
				return
			}
			if c.DecodedFile != nil {
				want := readF32(t, *c.DecodedFile)
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(dst[i]) {
						t.Fatalf("value %d (row %d col %d): got %v (%#08x), ggml %v (%#08x)", i, i/in.Cols, i%in.Cols,
							dst[i], math.Float32bits(dst[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
			t.Fatalf("decoding sha256 %s, ggml %s", sha(got), *c.DecodedSHA256)
		})
	}
}

// firstDiff names the first differing byte, with its row and byte-in-row.
func firstDiff(got, want []byte, rowSize int) string {
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			lo, hi := max(0, i-4), min(len(want), i+8)
			return fmt.Sprintf("first difference at byte %d (row %d, byte %d): got %x, ggml %x",
				i, i/rowSize, i%rowSize, got[lo:min(hi, len(got))], want[lo:hi])
		}
	}
	if len(got) != len(want) {
		return "length differs"
	}
	return "equal"
}
