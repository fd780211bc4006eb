package load

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestGLMKeepsFileSpecials: GLM's special tokens come from the added tokens, each only
// where SpecialVocab has none yet (bos stays config.json's); a tokenizer
// without one of them is refused naming it.
func TestGLMKeepsFileSpecials(t *testing.T) {
	tok, err := os.ReadFile("../../testdata/convert/tokenizers/gpt2/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	added := func(names ...string) string {
		var parts []string
		for i, n := range names {
			parts = append(parts, `"`+strconv.Itoa(50257+i)+`":{"content":"`+n+`","special":true}`)
		}
		return `{"tokenizer_class":"GPT2Tokenizer","added_tokens_decoder":{` + strings.Join(parts, ",") + `}}`
	}
	folder := func(tc string) string {
		dir := t.TempDir()
		for name, b := range map[string][]byte{"tokenizer.json": tok, "tokenizer_config.json": []byte(tc),
			"config.json": []byte(`{"bos_token_id":50256,"eos_token_id":50256}`)} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	kvs, err := GLM(folder(added("[gMASK]", "<|user|>", "<|observation|>")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	for k, want := range map[string]uint32{gguf.KeyTokenizerBOSID: 50256, gguf.KeyTokenizerEOTID: 50258,
		gguf.KeyTokenizerUnknownID: 50256, gguf.KeyTokenizerEOMID: 50259} {
		if got[k] != want {
			t.Errorf("%s = %v, want %d", k, got[k], want)
		}
	}
	_, err = GLM(folder(added("[gMASK]", "<|user|>")), Options{})
	if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"<|observation|>" (the eom token`) {
		t.Errorf("without <|observation|>: error %v", err)
	}
}
