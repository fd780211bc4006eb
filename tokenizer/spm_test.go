package tokenizer

import (
	"os"
	"slices"
	"testing"
)

// TestSPMCut checks the cut SPM merge against llama.cpp's single session:
// on every SPM vocabulary here, our texts, llama.cpp's own test texts and
// 256 KiB of English give the same ids either way; and the cut is only
// taken when no token could span it.
func TestSPMCut(t *testing.T) {
	var texts []string
	for _, path := range []string{"testdata/texts.inp", "testdata/vocab/ggml-vocab-llama-spm.gguf.inp", "testdata/pre.inp"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, splitCases(string(raw))...)
	}
	texts = append(texts, string(readOpticks(t)[:1<<18]))
	for _, tt := range []struct {
		vocab string
		cut   bool
	}{{"llama-spm", true}, {"phi-3", true}, {"torchtune-m", true}} {
		t.Run(tt.vocab, func(t *testing.T) {
			tok := loadTestVocab(t, testVocabNamed(t, tt.vocab))
			if tok.spmCut != tt.cut {
				t.Fatalf("spmCut = %v, want %v", tok.spmCut, tt.cut)
			}
			whole := *tok
			whole.spmCut = false
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
		want  bool
	}{
		{[]string{"▁the", "▁▁", "▁▁▁▁", "a", "<0x0A>"}, true},
		{[]string{"▁the", "a▁b"}, false},
		{[]string{"▁▁x▁"}, false},
		{[]string{"\xe2▁"}, false},
	} {
		if got := spmCutSafe(tt.texts); got != tt.want {
			t.Errorf("spmCutSafe(%q) = %v, want %v", tt.texts, got, tt.want)
		}
	}
}
