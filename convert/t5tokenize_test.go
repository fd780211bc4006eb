package convert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
)

// TestT5FixtureTokenize converts the t5encoder fixture and tokenizes with
// the vocabulary ggufkit wrote: the ids must be llama-tokenize's on
// llama.cpp's own conversion of the same fixture (tokenize-t5.json, see
// testdata/convert/README.md), tokenizing as llama-tokenize does by
// default: special tokens added as the vocabulary's add_bos says, and
// parsed.
func TestT5FixtureTokenize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures, "tokenize-t5.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) == 0 {
		t.Fatal("tokenize-t5.json has no cases")
	}
	dir := filepath.Join(fixtures, "t5encoder")
	src := assemble(t, dir, loadFixture(t, dir), false)
	f, err := ggufread.Open(convertTo(t, src, Options{OutType: "f16", ModelName: "t5encoder"}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Cases {
		t.Run(c.Text, func(t *testing.T) {
			got, err := tok.Encode(c.Text, tok.AddBOS(), true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.IDs) {
				t.Errorf("ids %v, llama-tokenize %v", got, c.IDs)
			}
		})
	}
}
