package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// benchText is 1 MiB of English prose: Newton's Opticks, the public-domain
// text Go's own compression benchmarks use ($GOROOT/src/testdata), repeated
// to 1 MiB and cut at a character boundary.
func benchText(b *testing.B) string {
	b.Helper()
	raw := readOpticks(b)
	s := strings.Repeat(string(raw), (1<<20)/len(raw)+1)[:1<<20]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// BenchmarkEncode tokenizes 1 MiB of English with each encoder kind and the
// main families of BPE pre-tokenizer (hand-written splitters, the regex
// engine), as llama.cpp's test-tokenizer-0 calls it (no special tokens).
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"llama-spm", "gpt-2", "llama-bpe", "qwen2", "falcon", "deepseek-llm", "gemma-4", "bert-bge", "t5"} {
		b.Run(name, func(b *testing.B) {
			var v testVocab
			for _, x := range testVocabs {
				if x.name == name {
					v = x
				}
			}
			tok := loadTestVocab(b, v)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for range b.N {
				if _, err := tok.Encode(text, false, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad builds the tokenizer of a vocabulary already read from its
// GGUF (what ggufkit tokenize does before encoding).
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"llama-spm", "gpt-2", "llama-bpe", "gemma-4", "t5"} {
		b.Run(name, func(b *testing.B) {
			var v testVocab
			for _, x := range testVocabs {
				if x.name == name {
					v = x
				}
			}
			f := openGGUF(b, v.file)
			b.ResetTimer()
			for range b.N {
				if _, err := Load(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
