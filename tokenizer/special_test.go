package tokenizer

import (
	"os"
	"slices"
	"testing"
)

// TestSpecialsIn checks partition's one-pass filter against the plain scan
// per special token: the same ids on vocabularies with hundreds or
// thousands of special tokens, for our texts (which hold the special-token
// text of many models) and llama.cpp's, with and without parse_special.
func TestSpecialsIn(t *testing.T) {
	var texts []string
	for _, path := range []string{"testdata/texts.inp", "testdata/vocab/ggml-vocab-llama-bpe.gguf.inp"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, splitCases(string(raw))...)
	}
	texts = append(texts, "<|begin_of_text|><|begin_of_text|>x<|eot_id|>", "[PAD100015][PAD100016]", "<start_of_turn>user\n<end_of_turn>")
	for _, vocab := range []string{"deepseek-llm", "llama-bpe", "qwen2", "deepseek-coder"} {
		t.Run(vocab, func(t *testing.T) {
			tok := loadTestVocab(t, testVocabNamed(t, vocab))
			if tok.specialTrie == nil {
				t.Fatalf("%d special tokens and no trie", len(tok.specialCache))
			}
			plain := *tok
			plain.specialTrie = nil
			for i, text := range texts {
				for _, parse := range []bool{false, true} {
					got, err1 := tok.Encode(text, parse, parse)
					want, err2 := plain.Encode(text, parse, parse)
					if (err1 == nil) != (err2 == nil) || !slices.Equal(got, want) {
						t.Fatalf("text %d (special %v): with the filter %v %v, plain %v %v", i, parse, got, err1, want, err2)
					}
				}
			}
		})
	}
}
