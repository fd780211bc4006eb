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

// TestWithPreTokenizer checks that a tokenizer switched to another
// pre-tokenizer encodes as one built with that pre from the start, for
// every name llama.cpp knows, on gpt-2's vocabulary and texts aimed at the
// pre-tokenizers.
func TestWithPreTokenizer(t *testing.T) {
	raw, err := os.ReadFile("testdata/pre.inp")
	if err != nil {
		t.Fatal(err)
	}
	texts := splitCases(string(raw))
	f := openGGUF(t, "testdata/vocab/ggml-vocab-gpt-2.gguf.bz2")
	v, err := FromKVs(f)
	if err != nil {
		t.Fatal(err)
	}
	base, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(preNames))
	for n := range preNames {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			vv := *v
			vv.Pre = name
			want, err := New(&vv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := base.WithPreTokenizer(name)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				a, err1 := got.Encode(text, false, false)
				b, err2 := want.Encode(text, false, false)
				if (err1 == nil) != (err2 == nil) || !slices.Equal(a, b) {
					t.Fatalf("text %d: switched %v %v, built %v %v", i, a, err1, b, err2)
				}
			}
		})
	}
	if _, err := base.WithPreTokenizer("no-such-pre"); err == nil {
		t.Error("an unknown pre name was accepted")
	}
}
