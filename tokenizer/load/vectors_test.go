package load_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// kvMap lets tokenizer.FromKVs read a KV list.
type kvMap []gguf.KV

func (m kvMap) KV(key string) (gguf.Value, bool) {
	for _, kv := range m {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}

// torchtuneCase is one case of torchtune's expected ids
// (../testdata/vectors/torchtune_tokenizer_cases.json).
type torchtuneCase struct {
	Method   string `json:"method"`
	Asset    string `json:"tokenizer_asset"`
	Text     string `json:"text"`
	Expected []int  `json:"expected_ids"`
}

func readTorchtuneCases(t *testing.T) []torchtuneCase {
	t.Helper()
	b, err := os.ReadFile("../testdata/vectors/torchtune_tokenizer_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Cases []torchtuneCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Cases
}

// encodeKVs tokenizes text with the vocabulary a routine wrote, as
// llama-tokenize --no-bos --no-parse-special does.
func encodeKVs(t *testing.T, kvs []gguf.KV, text string) []int {
	t.Helper()
	v, err := tokenizer.FromKVs(kvMap(kvs))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(text, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestTorchtuneVectors converts the torchtune tokenizer assets that the
// encoder tests have no GGUF for — the tiktoken ranks file and the
// tokenizer.json made from it, and (GGUFKIT_SHARED) Phi-4's cropped
// vocab.json + merges.txt — with the loaders, and tokenizes torchtune's
// texts with the result: the ids must be torchtune's expected ones
// (verified there with tiktoken and tokenizers), without the BOS/EOS its
// tests add with made-up ids. The pre-tokenizer is named as the test
// builds it (cl100k's regex is Llama 3's; a plain ByteLevel is GPT-2's): a
// 2000-token toy vocabulary has no hash in llama.cpp's table.
func TestTorchtuneVectors(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	n := 0
	for i, c := range readTorchtuneCases(t) {
		if c.Method != "encode" {
			continue
		}
		want := c.Expected
		var kvs []gguf.KV
		switch c.Asset {
		case "tiktoken_small.model":
			ranks, err := load.ParseTiktoken(readMaybeBz2(t, "testdata/files/torchtune/tiktoken_small.model"), "tiktoken_small.model")
			if err != nil {
				t.Fatal(err)
			}
			vocab, merges := load.TiktokenBPE(ranks)
			tokens := make([]string, len(ranks))
			for s, id := range vocab {
				tokens[id] = s
			}
			kvs = []gguf.KV{
				{Key: gguf.KeyTokenizerModel, Value: gguf.String("gpt2")},
				{Key: gguf.KeyTokenizerPre, Value: gguf.String("llama-bpe")},
				{Key: gguf.KeyTokenizerTokens, Value: gguf.Array(tokens)},
				{Key: gguf.KeyTokenizerMerges, Value: gguf.Array(merges)},
			}
			want = want[1 : len(want)-1] // torchtune's [0] … [-1]
		case "tokenizer.json":
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), readMaybeBz2(t, "testdata/files/torchtune/tokenizer.json.bz2"), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if kvs, err = load.GPT2(dir, load.Options{Pre: "llama-bpe"}); err != nil {
				t.Fatal(err)
			}
		case "vocab.json + merges.txt":
			if shared == "" {
				continue
			}
			dir := t.TempDir()
			for _, f := range []string{"vocab.json", "merges.txt"} {
				copyInto(t, filepath.Join(shared, "data/torchtune", f), dir)
			}
			if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"tokenizer_class": "GPT2Tokenizer"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			// The cropped vocabulary has ids up to 100351 with holes.
			if kvs, err = load.GPT2(dir, load.Options{Pre: "gpt-2", VocabSize: 100352}); err != nil {
				t.Fatal(err)
			}
			// torchtune's test adds BOS and EOS id 1 as its kwargs say.
			if want[0] == 1 {
				want = want[1:]
			}
			if want[len(want)-1] == 1 {
				want = want[:len(want)-1]
			}
		default:
			continue
		}
		n++
		t.Run(strconv.Itoa(i)+"/"+c.Asset, func(t *testing.T) {
			if got := encodeKVs(t, kvs, c.Text); !slices.Equal(got, want) {
				t.Errorf("%q: %v, torchtune %v", c.Text, got, want)
			}
		})
	}
	if n < 2 {
		t.Fatalf("%d cases run", n)
	}
}
