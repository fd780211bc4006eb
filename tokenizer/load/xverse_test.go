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

// TestXverseVocab: XverseModel.set_vocab's own rules: "\x00" becomes the
// BYTE token "<b'\x00'>", <0xXX> is BYTE, added tokens are CONTROL or
// USER_DEFINED by their special flag, the rest NORMAL; an id below
// vocab_size without a token, or a token at or past it, is an error.
func TestXverseVocab(t *testing.T) {
	dir := t.TempDir()
	added := func(id int, content string, special bool) string {
		s := "false"
		if special {
			s = "true"
		}
		return `{"id":` + string(rune('0'+id)) + `,"content":"` + content + `","single_word":false,"lstrip":false,` +
			`"rstrip":false,"normalized":false,"special":` + s + `}`
	}
	files := map[string]string{
		"tokenizer.json": `{"version":"1.0","truncation":null,"padding":null,"added_tokens":[` +
			added(3, "<s>", true) + `,` + added(4, "<u>", false) + `],"normalizer":null,"pre_tokenizer":null,` +
			`"post_processor":null,"decoder":null,"model":{"type":"BPE","dropout":null,"unk_token":null,` +
			`"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":true,` +
			`"vocab":{"\u0000":0,"<0x41>":1,"a":2,"<s>":3,"<u>":4},"merges":[]}}`,
		"tokenizer_config.json": `{"tokenizer_class":"PreTrainedTokenizerFast","bos_token":"<s>"}`,
		"config.json":           `{"model_type":"xverse"}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kvs, err := load.Xverse(dir, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	if tokens, _ := got[gguf.KeyTokenizerTokens].([]string); !slices.Equal(tokens, []string{`<b'\x00'>`, "<0x41>", "a", "<s>", "<u>"}) {
		t.Errorf("tokens %q", got[gguf.KeyTokenizerTokens])
	}
	if types, _ := got[gguf.KeyTokenizerTokenType].([]int32); !slices.Equal(types, []int32{6, 6, 1, 3, 4}) {
		t.Errorf("token types %v", got[gguf.KeyTokenizerTokenType])
	}
	if _, ok := got[gguf.KeyTokenizerScores]; ok || got[gguf.KeyTokenizerModel] != "llama" || got[gguf.KeyTokenizerPre] != "default" {
		t.Errorf("model %v, pre %v, scores present %v", got[gguf.KeyTokenizerModel], got[gguf.KeyTokenizerPre], ok)
	}
	for _, n := range []int{4, 6} {
		if _, err := load.Xverse(dir, load.Options{VocabSize: n}); !errors.Is(err, load.ErrFormat) {
			t.Errorf("vocab_size %d: error %v, want ErrFormat", n, err)
		}
	}
}
