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
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
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
		// plain: an error of no particular class (setPooling's)
		plain bool
	}{
		{"ModernBertForMaskedLM", `{"architectures":["ModernBertForMaskedLM"],"model_type":"modernbert"}`, nil,
			"Can not map tensor 'decoder.bias'", false},
		{"NomicMoESwiGLU", nomicConfig(`"moe_every_n_layers":2`), wordPiece, "activation_function", false},
		{"NomicMoENoBias", nomicConfig(`"moe_every_n_layers":2,"activation_function":"gelu"`), wordPiece,
			"a MoE model has bias tensors", false},
		{"NomicUnknownTokenizer", nomicConfig(""), map[string]string{"tokenizer.json": `{"model":{"type":"BPE"}}`},
			"unknown tokenizer", false},
		{"NomicNoTokenizerJSON", nomicConfig(""), nil, "needs a tokenizer.json", false},
		{"NomicPositions", nomicConfig(`"n_positions":4096`), wordPiece,
			"unrecognized parameters: n_positions=4096, max_trained_positions=2048", false},
		{"NomicPrenorm", nomicConfig(`"prenorm":true`), wordPiece, "prenorm", false},
		{"NomicCausalMissing", strings.Replace(nomicConfig(""), `"causal":false,`, "", 1), wordPiece, "causal", false},
		{"JinaRobertaTokenizer", `{"architectures":["JinaBertModel"],"model_type":"bert","num_hidden_layers":1}`,
			map[string]string{"tokenizer_config.json": `{"tokenizer_class":"RobertaTokenizer"}`}, "RobertaTokenizer", false},
		{"JinaNoTokenizerClass", `{"architectures":["JinaBertModel"],"model_type":"bert","num_hidden_layers":1}`,
			map[string]string{"tokenizer_config.json": `{}`}, "no tokenizer_class", false},
		{"NeoBERTTwoLabels", `{"architectures":["NeoBERTForSequenceClassification"],"model_type":"neobert",` +
			`"num_hidden_layers":1,"id2label":{"0":"negative","1":"positive"}}`, nil, "KeyError: 0", false},
		{"LFM2ColBERTDense", `{"architectures":["Lfm2Model"],"model_type":"lfm2","num_hidden_layers":1}`,
			map[string]string{"1_Dense/model.safetensors": "x"}, "ColBERT projection", false},
		{"EuroBertLatePooling", `{"architectures":["EuroBertModel"],"model_type":"eurobert","num_hidden_layers":1,` +
			`"hidden_size":8,"num_attention_heads":2}`, nil, "unsupported classifier_pooling late", true},
		{"T5NullDModel", `{"architectures":["T5ForConditionalGeneration"],"model_type":"t5","num_layers":1,"d_model":null}`,
			nil, "t5.embedding_length: null is not a uint32", false},
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
			if !c.plain && !errors.As(err, &ue) && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v is neither an UnsupportedError nor an ErrConfig", err)
			}
		})
	}
}

// TestT5DecoderDeeperThanEncoder: the converter maps tensors for
// num_layers blocks, so a decoder block past them cannot be named (its
// "Can not map tensor 'decoder.block.N…'"), and ggufkit fails the same way.
func TestT5DecoderDeeperThanEncoder(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["T5ForConditionalGeneration"],"model_type":"t5","num_layers":2,`+
		`"num_decoder_layers":3}`), "")
	if err != nil {
		t.Fatal(err)
	}
	name := "decoder.block.2.layer.0.SelfAttention.k.weight"
	_, err = m.Modify(Input{Name: name, Source: name, Shape: []int64{8, 8}}, 2)
	if err == nil || !strings.Contains(err.Error(), "can not map tensor") {
		t.Fatalf("error %v, want can not map tensor", err)
	}
}
