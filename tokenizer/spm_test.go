package tokenizer

import (
	"os"
	"slices"
	"testing"
)

// TestSpaceCut checks the merge in pieces cut before runs of "▁" against
// llama.cpp's single session (SPM) or whole word (BPE): on the SPM
// vocabularies here and Gemma 4's BPE (whose words are lines), our texts,
// llama.cpp's own test texts and 256 KiB of English give the same ids
// either way; and noCutAfter lists what precedes "▁" inside a text.
func TestSpaceCut(t *testing.T) {
	var texts []string
	for _, path := range []string{"testdata/texts.inp", "testdata/vocab/ggml-vocab-llama-spm.gguf.inp", "testdata/pre.inp"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, splitCases(string(raw))...)
	}
	texts = append(texts, string(readOpticks(t)[:1<<18]))
	for _, vocab := range []string{"llama-spm", "phi-3", "torchtune-m", "gemma-4"} {
		t.Run(vocab, func(t *testing.T) {
			tok := loadTestVocab(t, testVocabNamed(t, vocab))
			if tok.noCut == nil {
				t.Fatal("no cut is ever taken")
			}
			whole := *tok
			whole.noCut = nil
			for i, text := range texts {
				for _, parse := range []bool{false, true} {
					got, err1 := tok.Encode(text, parse, parse)
					want, err2 := whole.Encode(text, parse, parse)
					if (err1 == nil) != (err2 == nil) || !slices.Equal(got, want) {
						t.Fatalf("text %d (special %v): cut %v %v, one session %v %v", i, parse, got, err1, want, err2)
					}
				}
			}
		})
	}
	for _, tt := range []struct {
		texts []string
		want  []string
	}{
		{[]string{"▁the", "a", "<0x0A>"}, nil},
		{[]string{"▁▁"}, []string{"▁", "\x81", "\x96\x81"}},
		{[]string{"a▁b"}, []string{"a"}},
		{[]string{">▁</", "xy▁"}, []string{">", "y", "xy"}},
		{[]string{"héé▁"}, []string{"\xa9", "é", "\xa9é", "éé"}}, // suffixes of 1-4 bytes
	} {
		m := noCutAfter(tt.texts)
		var got []string
		for k := range m {
			got = append(got, k)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("noCutAfter(%q) = %q, want %q", tt.texts, got, want)
		}
	}
}
