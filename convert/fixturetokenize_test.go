package convert

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
)

// TestFixtureTokenize converts a fixture and tokenizes with the vocabulary
// ggufkit wrote: the ids must be llama-tokenize's on llama.cpp's own
// conversion of the same fixture (tokenize-<name>.json, see
// testdata/convert/README.md), tokenizing as llama-tokenize does by
// default: special tokens added as the vocabulary's add_bos says, and
// parsed. A case's text is given as hex when it is not valid UTF-8.
func TestFixtureTokenize(t *testing.T) {
	for _, tc := range []struct{ golden, fixture string }{
		{"tokenize-t5.json", "t5encoder"}, // T5's SentencePiece Unigram
		{"tokenize-rwkv.json", "rwkv7"},   // RWKV's world vocabulary
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(fixtures, tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			var golden struct {
				Cases []struct {
					Text string `json:"text"`
					Hex  string `json:"hex"`
					IDs  []int  `json:"ids"`
				} `json:"cases"`
			}
			if err := json.Unmarshal(b, &golden); err != nil {
				t.Fatal(err)
			}
			if len(golden.Cases) == 0 {
				t.Fatalf("%s has no cases", tc.golden)
			}
			dir := filepath.Join(fixtures, tc.fixture)
			src := assemble(t, dir, loadFixture(t, dir), false)
			f, err := ggufread.Open(convertTo(t, src, Options{OutType: "f16", ModelName: tc.fixture}))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := tokenizer.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range golden.Cases {
				text := c.Text
				if c.Hex != "" {
					raw, err := hex.DecodeString(c.Hex)
					if err != nil {
						t.Fatal(err)
					}
					text = string(raw)
				}
				t.Run(c.Text+c.Hex, func(t *testing.T) {
					got, err := tok.Encode(text, tok.AddBOS(), true)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, c.IDs) {
						t.Errorf("ids %v, llama-tokenize %v", got, c.IDs)
					}
				})
			}
		})
	}
}
