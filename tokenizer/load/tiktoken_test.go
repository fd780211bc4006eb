package load_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// TestTiktoken turns torchtune's tiktoken ranks file into a byte-level BPE
// vocabulary and merges and compares them with the tokenizer.json
// torchtune made from the same file with Hugging Face's converter: the
// same token → id map and the same merges in the same order.
func TestTiktoken(t *testing.T) {
	ranks, err := load.ParseTiktoken(readMaybeBz2(t, "testdata/files/torchtune/tiktoken_small.model"), "tiktoken_small.model")
	if err != nil {
		t.Fatal(err)
	}
	vocab, merges := load.TiktokenBPE(ranks)
	tok, err := load.ParseTokenizerJSON(readMaybeBz2(t, "testdata/files/torchtune/tokenizer.json.bz2"), "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(vocab) != len(tok.Model.Vocab) {
		t.Fatalf("%d tokens, tokenizer.json %d", len(vocab), len(tok.Model.Vocab))
	}
	for s, id := range tok.Model.Vocab {
		if got, ok := vocab[s]; !ok || got != id {
			t.Fatalf("token %q: id %d (present %v), tokenizer.json %d", s, got, ok, id)
		}
	}
	if !slices.Equal(merges, tok.Model.Merges) {
		t.Fatalf("%d merges differ from tokenizer.json's %d", len(merges), len(tok.Model.Merges))
	}
}

// TestTiktokenHostile feeds malformed ranks files.
func TestTiktokenHostile(t *testing.T) {
	tests := []struct{ name, data, field string }{
		{"one field", "QQ==\n", "line 1"},
		{"bad base64", "Q!== 0\n", "line 1"},
		{"bad rank", "QQ== x\n", "line 1"},
		{"negative rank", "QQ== -1\n", "line 1"},
		{"rank far past the lines", "QQ== 9999999\n", "line 1"},
		{"two tokens one rank", "QQ== 0\nQg== 0\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load.ParseTiktoken([]byte(tt.data), "tokenizer.model")
			var fe *load.FileError
			if !errors.As(err, &fe) || !errors.Is(err, load.ErrFormat) || fe.Field != tt.field {
				t.Fatalf("err = %v, want an ErrFormat *FileError at %q", err, tt.field)
			}
		})
	}
}

// TestSharedTiktoken (GGUFKIT_SHARED) turns Meta's original Llama 3
// tokenizer.model (tiktoken ranks) into tokens and merges: they must be
// ggml-vocab-llama-bpe.gguf's 128000 base tokens and its 280147 merges.
func TestSharedTiktoken(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED is not set (.ci/run sets it to ../shared)")
	}
	b, err := os.ReadFile(filepath.Join(shared, "data/tokenizers/llama-3/tokenizer.model"))
	if err != nil {
		t.Fatal(err)
	}
	ranks, err := load.ParseTiktoken(b, "tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	vocab, merges := load.TiktokenBPE(ranks)
	kvs := tokenizerKVs(t, vocabDir+"ggml-vocab-llama-bpe.gguf.bz2")
	tokens, _ := kvValue(kvs, gguf.KeyTokenizerTokens).Strings()
	want, _ := kvValue(kvs, gguf.KeyTokenizerMerges).Strings()
	if len(vocab) != 128000 {
		t.Fatalf("%d tokens, want 128000", len(vocab))
	}
	for s, id := range vocab {
		if tokens[id] != s {
			t.Fatalf("rank %d is %q, the GGUF's token %q", id, s, tokens[id])
		}
	}
	if !slices.Equal(merges, want) {
		n := 0
		for i := range min(len(merges), len(want)) {
			if merges[i] != want[i] {
				n++
			}
		}
		t.Fatalf("merges: %d, the GGUF %d, %d differ", len(merges), len(want), n)
	}
}
