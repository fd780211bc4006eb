package load_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// TestPadding checks Options.VocabSize: a config vocab_size above the
// tokenizer's pads the vocabulary with "[PAD{i}]" (SentencePiece: score
// -10000; all: UNUSED; WordPiece: in phantom-space form, as the converter
// applies its rule to every non-CONTROL token), one below it drops the
// SentencePiece pieces past it and is an error for BPE, whose token ids
// must fit; a hostile size is refused before anything is allocated.
func TestPadding(t *testing.T) {
	cases := readCases(t)
	tests := []struct {
		name      string
		vocabSize int
		wantLen   int
		tail      []string  // the last tokens
		tailScore []float32 // their scores (nil: no scores key)
		wantErr   error
	}{
		{"stories260K", 515, 515, []string{"[PAD512]", "[PAD513]", "[PAD514]"}, []float32{-10000, -10000, -10000}, nil},
		{"stories260K", 510, 510, []string{"[", "]"}, nil, nil}, // pieces 508, 509
		{"stories260K", 0, 512, []string{"\u200a"}, nil, nil},   // the last piece
		{"gpt2", 50259, 50259, []string{"<|endoftext|>", "[PAD50257]", "[PAD50258]"}, nil, nil},
		{"gpt2", 50000, 0, nil, nil, load.ErrFormat},
		{"bert", 30524, 30524, []string{"～", "▁[PAD30522]", "▁[PAD30523]"}, nil, nil},
		{"stories260K", 1 << 30, 0, nil, nil, load.ErrTooLarge},
		{"gpt2", 1 << 30, 0, nil, nil, load.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.name, tt.vocabSize), func(t *testing.T) {
			c := cases[tt.name]
			kvs, err := routines[c.Routine](materialize(t, c), load.Options{VocabSize: tt.vocabSize, TypeVocabSize: c.TypeVocabSize})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tokens, _ := kvValue(kvs, gguf.KeyTokenizerTokens).Strings()
			types, _ := kvValue(kvs, gguf.KeyTokenizerTokenType).Ints()
			if len(tokens) != tt.wantLen || len(types) != tt.wantLen {
				t.Fatalf("%d tokens, %d types, want %d", len(tokens), len(types), tt.wantLen)
			}
			tail := tokens[len(tokens)-len(tt.tail):]
			for i, want := range tt.tail {
				if tail[i] != want {
					t.Errorf("token %d = %q, want %q", len(tokens)-len(tt.tail)+i, tail[i], want)
				}
			}
			for i := len(tokens) - len(tt.tail); i < len(tokens); i++ {
				if isPad := tokens[i] == fmt.Sprintf("[PAD%d]", i) || tokens[i] == fmt.Sprintf("▁[PAD%d]", i); isPad != (types[i] == 5) {
					t.Errorf("token %d %q has type %d", i, tokens[i], types[i])
				}
			}
			if tt.tailScore != nil {
				scores, _ := kvValue(kvs, gguf.KeyTokenizerScores).Float32s()
				for i, want := range tt.tailScore {
					if got := scores[len(scores)-len(tt.tailScore)+i]; got != want {
						t.Errorf("score %d = %v, want %v", len(scores)-len(tt.tailScore)+i, got, want)
					}
				}
			}
		})
	}
}

// TestGemma3VocabRows checks the embedding rows Gemma 3 keeps: the padded
// SentencePiece vocabulary, else the tokenizer.json model vocabulary and
// its added tokens.
func TestGemma3VocabRows(t *testing.T) {
	cases := readCases(t)
	tests := []struct {
		name      string
		vocabSize int
		want      int
	}{
		{"stories260K", 0, 512},
		{"stories260K", 520, 520},
		{"llama2-hf", 0, 32000 + 3}, // 32000 model tokens, 3 added tokens that are also model tokens
		{"gpt2", 0, 50257 + 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.name, tt.vocabSize), func(t *testing.T) {
			got, err := load.Gemma3VocabRows(materialize(t, cases[tt.name]), load.Options{VocabSize: tt.vocabSize})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%d rows, want %d", got, tt.want)
			}
		})
	}
}
