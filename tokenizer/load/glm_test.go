package load_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// TestGLMSpecials: the three GLM routines take their special ids from the
// added vocabulary, after (and without replacing) those of the files, in
// SpecialVocab's insertion order.
func TestGLMSpecials(t *testing.T) {
	dir := t.TempDir()
	tok := `{"added_tokens":[` +
		`{"id":2,"content":"<|endoftext|>","special":true},{"id":3,"content":"[gMASK]","special":true},` +
		`{"id":4,"content":"<|user|>","special":true},{"id":5,"content":"<|observation|>","special":true}],` +
		`"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},` +
		`"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}}`
	for name, data := range map[string]string{"tokenizer.json": tok, "config.json": `{"eos_token_id":2}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type id struct {
		key string
		v   uint32
	}
	for _, tc := range []struct {
		name    string
		routine func(string, load.Options) ([]gguf.KV, error)
		want    []id
	}{
		{"ChatGLM", load.ChatGLM, []id{{gguf.KeyTokenizerEOSID, 2}, {gguf.KeyTokenizerEOTID, 4}, {gguf.KeyTokenizerUnknownID, 2}}},
		{"GLM4", load.GLM4, []id{{gguf.KeyTokenizerEOSID, 2}, {gguf.KeyTokenizerEOTID, 4}, {gguf.KeyTokenizerUnknownID, 2}, {gguf.KeyTokenizerBOSID, 2}}},
		{"GLM", load.GLM, []id{{gguf.KeyTokenizerEOSID, 2}, {gguf.KeyTokenizerBOSID, 3}, {gguf.KeyTokenizerEOTID, 4}, {gguf.KeyTokenizerUnknownID, 2}, {gguf.KeyTokenizerEOMID, 5}}},
	} {
		kvs, err := tc.routine(dir, load.Options{Pre: "gpt-2"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []id
		for _, kv := range kvs {
			if v, ok := kv.Value.Any().(uint32); ok && kv.Key != gguf.KeyTokenizerTokenTypeCount {
				got = append(got, id{kv.Key, v})
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: special ids %v, want %v", tc.name, got, tc.want)
		}
	}
}
