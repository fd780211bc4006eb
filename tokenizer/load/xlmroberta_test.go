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

// TestNomicBertMoE: XLM-R's vocabulary with <mask> as a control token at
// id 250001, which a smaller vocabulary cannot hold.
func TestNomicBertMoE(t *testing.T) {
	dir := filepath.Join(convertTokenizers, "xlmr")
	kvs, err := NomicBertMoE(dir, Options{VocabSize: 250048})
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	var types []int32
	for _, kv := range kvs {
		switch kv.Key {
		case gguf.KeyTokenizerTokens:
			tokens, _ = kv.Value.Strings()
		case gguf.KeyTokenizerTokenType:
			types, _ = kv.Value.Any().([]int32)
		}
	}
	if len(tokens) != 250048 || len(types) != 250048 || tokens[250001] != "<mask>" || types[250001] != typeControl ||
		tokens[250000] != "[PAD249999]" {
		t.Fatalf("%d tokens, %d types; 250001: %q", len(tokens), len(types), tokens[min(250001, len(tokens)-1)])
	}
	if _, err := NomicBertMoE(dir, Options{VocabSize: 32002}); !errors.Is(err, ErrFormat) {
		t.Errorf("32002 ids: error %v, want ErrFormat", err)
	}
}
