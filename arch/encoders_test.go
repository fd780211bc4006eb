package arch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// nomicConfig is nomic-embed-text-v1.5's config.json, shrunk, with
// changes as extra JSON members (a later member wins).
func nomicConfig(changes string) string {
	c := `{"architectures":["NomicBertModel"],"model_type":"nomic_bert","activation_function":"swiglu",` +
		`"causal":false,"qkv_proj_bias":false,"mlp_fc1_bias":false,"mlp_fc2_bias":false,"prenorm":false,` +
		`"rotary_emb_fraction":1.0,"rotary_emb_interleaved":false,"rotary_emb_scale_base":null,` +
		`"n_positions":8192,"max_trained_positions":2048,"n_embd":16,"n_head":2,"n_inner":32,"n_layer":2,` +
		`"vocab_size":30528`
	if changes != "" {
		c += "," + changes
	}
	return c + "}"
}

// tokDir is a model folder holding the given tokenizer files.
func tokDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEncoderRefusals covers the encoder checkpoints llama.cpp's converter
// fails on or ggufkit does not convert: each gives an error naming why.
func TestEncoderRefusals(t *testing.T) {
	wordPiece := map[string]string{"tokenizer.json": `{"model":{"type":"WordPiece"}}`}
	cases := []struct {
		name, config string
		files        map[string]string
		want         string
	}{
		{"ModernBertForMaskedLM", `{"architectures":["ModernBertForMaskedLM"],"model_type":"modernbert"}`, nil,
			"Can not map tensor 'decoder.bias'"},
		{"NomicMoE", nomicConfig(`"moe_every_n_layers":2`), wordPiece, "nomic-bert-moe"},
		{"NomicUnigram", nomicConfig(""), map[string]string{"tokenizer.json": `{"model":{"type":"Unigram"}}`},
			"XLM-R Unigram"},
		{"NomicNoTokenizerJSON", nomicConfig(""), nil, "needs a tokenizer.json"},
		{"NomicPositions", nomicConfig(`"n_positions":4096`), wordPiece,
			"unrecognized parameters: n_positions=4096, max_trained_positions=2048"},
		{"NomicPrenorm", nomicConfig(`"prenorm":true`), wordPiece, "prenorm"},
		{"NomicCausalMissing", strings.Replace(nomicConfig(""), `"causal":false,`, "", 1), wordPiece, "causal"},
		{"JinaRobertaTokenizer", `{"architectures":["JinaBertModel"],"model_type":"bert","num_hidden_layers":1}`,
			map[string]string{"tokenizer_config.json": `{"tokenizer_class":"RobertaTokenizer"}`}, "RobertaTokenizer"},
		{"JinaNoTokenizerClass", `{"architectures":["JinaBertModel"],"model_type":"bert","num_hidden_layers":1}`,
			map[string]string{"tokenizer_config.json": `{}`}, "no tokenizer_class"},
		{"NeoBERTTwoLabels", `{"architectures":["NeoBERTForSequenceClassification"],"model_type":"neobert",` +
			`"num_hidden_layers":1,"id2label":{"0":"negative","1":"positive"}}`, nil, "KeyError: 0"},
		{"T5NullDModel", `{"architectures":["T5ForConditionalGeneration"],"model_type":"t5","num_layers":1,"d_model":null}`,
			nil, "t5.embedding_length: null is not a uint32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(hp(t, c.config), tokDir(t, c.files))
			if err == nil {
				_, err = m.Params(gguf.FileTypeF16)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v is neither an UnsupportedError nor an ErrConfig", err)
			}
		})
	}
}
