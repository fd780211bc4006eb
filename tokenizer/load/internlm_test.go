package load_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// TestInternLM2Vocab: InternLM2Model.set_vocab's own rules: a "\x00" piece
// becomes "🐉", an "[UNUSED…" piece is UNUSED, added_tokens.json entries
// are appended whatever their ids, and eos becomes "<|im_end|>".
func TestInternLM2Vocab(t *testing.T) {
	dir := t.TempDir()
	var model []byte
	for _, p := range []struct {
		s   string
		typ byte
	}{{"<unk>", 2}, {"<s>", 3}, {"</s>", 3}, {"\x00", 1}, {"[UNUSED_TOKEN_1]", 1}, {"a", 1}} {
		model = append(model, spmPiece(p.s, p.typ)...)
	}
	files := map[string]string{
		"tokenizer.model":   string(model),
		"added_tokens.json": `{"<|im_end|>": 1}`,
		"tokenizer_config.json": `{"added_tokens_decoder": {"6": {"content": "<|im_end|>", "special": true}},` +
			`"eos_token": "</s>"}`,
		"config.json": `{"bos_token_id": 1, "eos_token_id": 2}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kvs, err := load.InternLM2(dir, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	var keys []string
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
		keys = append(keys, kv.Key)
	}
	if toks, _ := got["tokenizer.ggml.tokens"].([]string); !slices.Equal(toks, []string{"<unk>", "<s>", "</s>", "🐉", "[UNUSED_TOKEN_1]", "a", "<|im_end|>"}) {
		t.Errorf("tokens %q", got["tokenizer.ggml.tokens"])
	}
	if types, _ := got["tokenizer.ggml.token_type"].([]int32); !slices.Equal(types, []int32{2, 3, 3, 1, 5, 1, 3}) {
		t.Errorf("token types %v", got["tokenizer.ggml.token_type"])
	}
	if got["tokenizer.ggml.eos_token_id"] != uint32(6) {
		t.Errorf("eos %v, want 6 (<|im_end|>)", got["tokenizer.ggml.eos_token_id"])
	}
	if got["tokenizer.ggml.add_space_prefix"] != true {
		t.Errorf("add_space_prefix %v, want the model's add_dummy_prefix (protobuf default true here)", got["tokenizer.ggml.add_space_prefix"])
	}
	if i := slices.Index(keys, "tokenizer.ggml.add_space_prefix"); i != slices.Index(keys, "tokenizer.ggml.token_type")+1 {
		t.Errorf("add_space_prefix at %d in %v, want right after the token types", i, keys)
	}
}
