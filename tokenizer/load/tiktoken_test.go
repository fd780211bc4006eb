package load_test

import (
	"encoding/json"
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

// o200kRegex is the o200k_base split (tiktoken_ext/openai_public.py), as
// the gpt-4o and gpt-oss tokenizer.json files write it.
const o200kRegex = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// TestO200kPre converts OpenAI's o200k_base ranks (testdata/files/o200k,
// the GPT-4o and gpt-oss vocabulary) into a tokenizer.json of the
// structure Hugging Face's TikTokenConverter gives them (the o200k split,
// then ByteLevel without its regex; <|endoftext|> and <|endofprompt|> at
// 199999 and 200018 as in Xenova/gpt-4o) and checks the pre-tokenizer
// name: the converter's hash of that structure, which transformers 5.24.0
// computes as ccc2ef01… (gpt-4o) on the same ranks (see the testdata
// README). ggufkit names it from the structure table: llama.cpp's GPT4O
// splitting, which its encoder follows, cuts the check text's Khmer
// otherwise than the library, so its hash is in no table. With Llama 3's
// split on the same ranks no name is found.
func TestO200kPre(t *testing.T) {
	ranks, err := load.ParseTiktoken(readMaybeBz2(t, "testdata/files/o200k/o200k_base.tiktoken.bz2"), "o200k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	vocab, merges := load.TiktokenBPE(ranks)
	added := []map[string]any{
		{"id": 199999, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
		{"id": 200018, "content": "<|endofprompt|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
	tests := []struct {
		name, regex string
		want        string // "" for an *UnknownPreError
	}{
		{"o200k (by structure)", o200kRegex, "gpt-4o"},
		{"llama3 split", `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre := map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": tt.regex}, "behavior": "Isolated", "invert": false}, byteLevel}}
			b, err := json.Marshal(map[string]any{"version": "1.0", "added_tokens": added, "normalizer": nil, "pre_tokenizer": pre,
				"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
				"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
				"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": true, "byte_fallback": false,
					"dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil, "fuse_unk": false}})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			kvs, err := load.GPT2(dir, load.Options{VocabSize: 200019})
			if tt.want == "" {
				if !errors.Is(err, load.ErrUnknownPre) {
					t.Fatalf("err = %v, want ErrUnknownPre", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := kvString(t, kvs, gguf.KeyTokenizerPre); got != tt.want {
				t.Errorf("pre %q, want %q", got, tt.want)
			}
		})
	}
}
