package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// vectorFiles maps each file of shared/data/tokenizer-vectors to the test
// vocabulary holding the same tokenizer and to the parse_special flag that
// mirrors the library's call: sentencepiece and tiktoken never match
// special-token text, Hugging Face tokenizers always matches its added
// tokens. add_special is the case's own. (The same table is in
// testdata/gen/make_vector_golden.py.)
var vectorFiles = map[string]struct {
	vocab        string
	parseSpecial bool
}{
	"llama2__tokenizer.model.json":  {"llama-spm", false},
	"llama2__tokenizer.json.json":   {"llama-spm", true},
	"llama2__AutoTokenizer.json":    {"llama-spm", true},
	"phi-3__tokenizer.model.json":   {"phi-3", false},
	"phi-3__tokenizer.json.json":    {"phi-3", true},
	"phi-3__AutoTokenizer.json":     {"phi-3", true},
	"t5__spiece.model.json":         {"t5", false},
	"t5__tokenizer.json.json":       {"t5", true},
	"t5__AutoTokenizer.json":        {"t5", true},
	"hf-gpt2__tokenizer.json.json":  {"gpt-2", true},
	"fake_gpt2__AutoTokenizer.json": {"gpt-2", true},
	"bert__vocab.txt.json":          {"bert-bge", true},
	"llama-3__tokenizer.model.json": {"llama-bpe", false},
}

// torchtuneAssets maps the torchtune tokenizer assets at hand to the test
// vocabulary converted from them; the other assets (tiktoken, tokenizer.json,
// vocab.json + merges.txt, CLIP merges) have no GGUF here.
var torchtuneAssets = map[string]string{"sentencepiece.model": "t5", "m.model": "torchtune-m"}

func testVocabNamed(t *testing.T, name string) testVocab {
	t.Helper()
	for _, v := range testVocabs {
		if v.name == name {
			return v
		}
	}
	t.Fatalf("no test vocabulary %q", name)
	return testVocab{}
}

// llamacppOverrides reads testdata/vectors-llamacpp.json: per vector file,
// llama.cpp's ids for the cases where it disagrees with the library.
func llamacppOverrides(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors-llamacpp.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestVectors checks the (text, ids) vectors made by sentencepiece,
// tokenizers, transformers and tiktoken, and torchtune's expected ids
// (testdata/vectors, copies of shared/data/tokenizer-vectors and
// shared/data/torchtune/tests-with-expected-ids), on the vocabularies at
// hand. llama.cpp is the truth: where it disagrees with the library, the
// expectation is llama.cpp's output (made by
// testdata/gen/make_vector_golden.py); everywhere else it is the vector.
func TestVectors(t *testing.T) {
	const dir = "testdata/vectors"
	overrides := llamacppOverrides(t)
	files, err := filepath.Glob(filepath.Join(dir, "*__*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(vectorFiles) {
		t.Fatalf("%d vector files, %d known", len(files), len(vectorFiles))
	}
	loaded := map[string]*Tokenizer{}
	load := func(t *testing.T, name string) *Tokenizer {
		if tok, ok := loaded[name]; ok {
			return tok
		}
		tok := loadTestVocab(t, testVocabNamed(t, name))
		loaded[name] = tok
		return tok
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			m, ok := vectorFiles[name]
			if !ok {
				t.Fatal("no vocabulary is known for this file")
			}
			tok := load(t, m.vocab)
			var d struct {
				Cases []struct {
					Text       string `json:"text"`
					AddSpecial bool   `json:"add_special"`
					IDs        []int  `json:"ids"`
				} `json:"cases"`
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			differ := 0
			for i, c := range d.Cases {
				want := formatIDs(c.IDs)
				if o, ok := overrides[name][strconv.Itoa(i)]; ok {
					want = o
					differ++
				}
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					checkEncode(t, tok, c.Text, c.AddSpecial, m.parseSpecial, want)
				})
			}
			t.Logf("%d cases, %d where llama.cpp disagrees with the library", len(d.Cases), differ)
		})
	}
	t.Run("torchtune", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(dir, "torchtune_tokenizer_cases.json"))
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Cases []struct {
				Method   string         `json:"method"`
				Asset    string         `json:"tokenizer_asset"`
				Text     string         `json:"text"`
				Kwargs   map[string]any `json:"kwargs"`
				Expected []int          `json:"expected_ids"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, c := range d.Cases {
			vocab, ok := torchtuneAssets[c.Asset]
			if c.Method != "encode" || !ok {
				continue
			}
			n++
			tok := load(t, vocab)
			// torchtune's add_bos (default true) is llama.cpp's add_special;
			// T5 always appends its EOS.
			addSpecial := true
			if b, ok := c.Kwargs["add_bos"].(bool); ok && vocab != "t5" {
				addSpecial = b
			}
			want := formatIDs(c.Expected)
			if o, ok := overrides["torchtune_tokenizer_cases.json"][strconv.Itoa(i)]; ok {
				want = o
			}
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				checkEncode(t, tok, c.Text, addSpecial, false, want)
			})
		}
		if n != 6 {
			t.Fatalf("%d encode cases with a tokenizer at hand, want 6", n)
		}
	})
}
