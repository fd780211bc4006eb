package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const convertTokenizers = "../../testdata/convert/tokenizers"

// TestXLMRoberta: the fairseq realignment of a Unigram model, and the
// folders the routine refuses.
func TestXLMRoberta(t *testing.T) {
	kvs, err := XLMRoberta(filepath.Join(convertTokenizers, "xlmr"), Options{VocabSize: 32002})
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, kv := range kvs {
		if kv.Key == gguf.KeyTokenizerTokens {
			tokens, _ = kv.Value.Strings()
		}
	}
	if len(tokens) != 32002 || strings.Join(tokens[:5], " ") != "<s> <pad> </s> <unk> ▁" || tokens[32001] != "[PAD32000]" {
		t.Errorf("%d tokens, first %q, last %q", len(tokens), tokens[:min(5, len(tokens))], tokens[len(tokens)-1])
	}

	copyTo := func(t *testing.T, src, name string) string {
		dir := t.TempDir()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"BPE model", copyTo(t, filepath.Join(convertTokenizers, "tok512", "tokenizer.model"), "sentencepiece.bpe.model"), "want UNIGRAM"},
		{"tokenizer.json only", copyTo(t, filepath.Join(convertTokenizers, "gpt2", "tokenizer.json"), "tokenizer.json"), "tokenizer.json branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := XLMRoberta(tc.dir, Options{})
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrUnsupported with %q", err, tc.want)
			}
		})
	}
}
