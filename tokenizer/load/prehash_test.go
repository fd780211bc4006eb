package load

import (
	"bufio"
	"compress/bzip2"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// TestPreHash tokenizes the converter's check text with ggufkit's encoder
// on llama.cpp's vocab GGUFs, each with the pre-tokenizer its model has,
// and looks the hash up in the converter's table: the name must be the
// model's, which shows the encoder reproduces the Hugging Face library's
// ids for each (the table's hashes are the library's). deepseek-llm,
// deepseek-coder and falcon are here although their tokenizer.json
// structure is not mapped to a candidate yet (hashCandidates).
func TestPreHash(t *testing.T) {
	const dir = "../testdata/vocab/"
	bos := func(id int) map[string]any {
		return map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "B"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}},
			"special_tokens": map[string]any{"B": map[string]any{"ids": []any{jsonInt(id)}}}}
	}
	bert := map[string]any{"type": "BertProcessing", "cls": []any{"[CLS]", jsonInt(101)}, "sep": []any{"[SEP]", jsonInt(102)}}
	tests := []struct {
		file, model, pre string
		post             any
		normalizer       any
		want             string
	}{
		{"ggml-vocab-gpt-2.gguf.bz2", "gpt2", "gpt-2", nil, nil, "gpt-2"},
		{"ggml-vocab-llama-bpe.gguf.bz2", "gpt2", "llama-bpe", bos(128000), nil, "llama-bpe"},
		{"ggml-vocab-llama-bpe.gguf.bz2", "gpt2", "llama-bpe", nil, nil, "smaug-bpe"},
		{"ggml-vocab-qwen2.gguf.bz2", "gpt2", "qwen2", nil, nil, "qwen2"},
		{"ggml-vocab-starcoder.gguf.bz2", "gpt2", "starcoder", nil, nil, "starcoder"},
		{"ggml-vocab-falcon.gguf.bz2", "gpt2", "falcon", nil, nil, "falcon"},
		{"ggml-vocab-deepseek-llm.gguf.bz2", "gpt2", "deepseek-llm", bos(100000), nil, "deepseek-llm"},
		{"ggml-vocab-deepseek-coder.gguf.bz2", "gpt2", "deepseek-coder", bos(32013), nil, "deepseek-coder"},
		{"ggml-vocab-bert-bge.gguf.bz2", "bert", "default", bert, map[string]any{"type": "BertNormalizer", "lowercase": true}, "jina-v2-en"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.want, func(t *testing.T) {
			tokens, types, merges := readVocab(t, dir+tt.file)
			if tt.model == "bert" {
				tokens = unphantom(tokens, types)
			}
			v := &hfView{postProcessor: tt.post, normalizer: tt.normalizer, unkToken: "[UNK]", vocab: map[string]int{"[UNK]": 100}}
			base := hashTokenizer(v, tt.model, tokens, types, merges)
			if base == nil {
				t.Fatal("the encoder refused the vocabulary")
			}
			tok := base
			if tt.model == "gpt2" {
				var err error
				if tok, err = base.WithPreTokenizer(tt.pre); err != nil {
					t.Fatal(err)
				}
			}
			h := preHash(v, tok)
			if got := preHashes[h]; got != tt.want {
				t.Errorf("hash %s names %q, want %q", h, got, tt.want)
			}
		})
	}
}

func jsonInt(i int) any { return json.Number(strconv.Itoa(i)) }

// readVocab reads tokens, token types and merges of a (bz2) vocab GGUF.
func readVocab(t *testing.T, path string) (tokens []string, types []int32, merges []string) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b, err := io.ReadAll(bzip2.NewReader(bufio.NewReader(fh)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.NewFile(strings.NewReader(string(b)), int64(len(b)), path)
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) gguf.Value {
		for _, kv := range f.KVs {
			if kv.Key == key {
				return kv.Value
			}
		}
		return gguf.Value{}
	}
	tokens, _ = get(gguf.KeyTokenizerTokens).Strings()
	ts, _ := get(gguf.KeyTokenizerTokenType).Ints()
	merges, _ = get(gguf.KeyTokenizerMerges).Strings()
	types = make([]int32, len(ts))
	for i, x := range ts {
		types[i] = int32(x)
	}
	return tokens, types, merges
}

// unphantom undoes phantomSpace for a WordPiece GGUF.
func unphantom(tokens []string, types []int32) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		switch {
		case types[i] == typeControl:
			out[i] = tok
		case strings.HasPrefix(tok, "\u2581"):
			out[i] = strings.TrimPrefix(tok, "\u2581")
		default:
			out[i] = "##" + tok
		}
	}
	return out
}
