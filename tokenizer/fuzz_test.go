package tokenizer

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// byteLevelBPE builds a small GPT-2-style vocabulary: the 256 byte
// characters, a few merges, a control and a user-defined token.
func byteLevelBPE(model, pre string) *Vocab {
	var toks []string
	for _, r := range byteRunes {
		toks = append(toks, r)
	}
	merges := []string{"Ġ t", "h e", "Ġt he", "i n", "in g", "e r", "o n", "Ġ a", "a n", "an d", "Ġa nd", "1 2", "12 3", "Ċ Ċ"}
	for _, m := range merges {
		toks = append(toks, strings.Replace(m, " ", "", 1))
	}
	types := make([]TokenType, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	toks = append(toks, "<|endoftext|>", "<tool>", "<dna>", "</dna>", "<oov>", "ACGTAC"+dnaMarker, "AAAAAA"+dnaMarker)
	types = append(types, TypeControl, TypeUserDefined, TypeControl, TypeControl, TypeControl)
	v := smallVocab(model, toks, types)
	v.Pre, v.Merges = pre, merges
	return v
}

// fuzzVocabs are the vocabularies FuzzEncode tokenizes with: one small
// byte-level BPE per pre-tokenizer name llama.cpp knows (and the
// hybriddna and whitespace models), plus real SentencePiece, WordPiece
// and Unigram vocabularies from testdata.
func fuzzVocabs(f *testing.F) []*Tokenizer {
	var toks []*Tokenizer
	names := make([]string, 0, len(preNames))
	for n := range preNames {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		tok, err := New(byteLevelBPE("gpt2", n))
		if err != nil {
			f.Fatalf("pre %s: %v", n, err)
		}
		toks = append(toks, tok)
	}
	for _, m := range [][2]string{{"hybriddna", "gpt-2"}, {"whitespace", "whitespace"}} {
		tok, err := New(byteLevelBPE(m[0], m[1]))
		if err != nil {
			f.Fatalf("model %s: %v", m[0], err)
		}
		toks = append(toks, tok)
	}
	for _, name := range []string{"llama-spm", "bert-bge", "t5"} {
		for _, v := range testVocabs {
			if v.name == name {
				toks = append(toks, loadTestVocab(f, v))
			}
		}
	}
	return toks
}

// lenientText is the text as llama.cpp's UTF-8 decoder sees it: each byte
// that starts no valid sequence becomes U+FFFD.
func lenientText(s string) (string, bool) {
	var b []byte
	for _, c := range decodeLenient(s) {
		var err error
		if b, err = appendCpt(b, c); err != nil {
			return "", false
		}
	}
	return string(b), true
}

// FuzzEncode tokenizes arbitrary bytes: no panic, every id in range, and
// where the tokenizer is lossless the pieces give the text back — for
// byte-level BPE the text as decoded leniently, for SentencePiece with byte
// fallback the text with its dummy prefix ("▁" and " " alike).
func FuzzEncode(f *testing.F) {
	for _, path := range []string{"testdata/texts.inp", "testdata/vocab/ggml-vocab-llama-spm.gguf.inp"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for i, c := range splitCases(string(raw)) {
			f.Add(c, uint16(i*7), uint8(i))
		}
	}
	toks := fuzzVocabs(f)
	f.Fuzz(func(t *testing.T, text string, which uint16, flags uint8) {
		if len(text) > 1<<12 {
			return
		}
		tok := toks[int(which)%len(toks)]
		addSpecial, parseSpecial := flags&1 != 0, flags&2 != 0
		ids, err := tok.Encode(text, addSpecial, parseSpecial)
		if err != nil {
			return // an ErrTokenize where llama.cpp throws, checked by the golden tests
		}
		var pieces strings.Builder
		for _, id := range ids {
			if id < 0 || id >= tok.NumTokens() {
				t.Fatalf("id %d out of range [0, %d)", id, tok.NumTokens())
			}
			pieces.WriteString(tok.Piece(id))
		}
		got := pieces.String()
		switch {
		case tok.typ == typeBPE && tok.pretok.byteEncode && tok.model == "gpt2" && !addSpecial:
			want, ok := lenientText(text)
			if !ok {
				t.Fatalf("Encode succeeded on a codepoint beyond U+10FFFF")
			}
			if got != want {
				t.Fatalf("pieces %q, want %q", got, want)
			}
			if utf8.ValidString(text) && got != text {
				t.Fatalf("pieces %q of valid UTF-8 %q", got, text)
			}
		case tok.typ == typeSPM && !addSpecial && !parseSpecial:
			norm := func(s string) string { return strings.ReplaceAll(s, "▁", " ") }
			if text != "" && norm(got) != norm(" "+text) {
				t.Fatalf("pieces %q, want %q", got, " "+text)
			}
		}
	})
}
