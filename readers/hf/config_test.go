package hf

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, js string) map[string]any {
	t.Helper()
	m, err := ParseJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTextConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		js     string
		arch   string
		hidden int64
	}{
		{"plain", `{"architectures":["LlamaForCausalLM"],"hidden_size":8}`, "LlamaForCausalLM", 8},
		{"text_config wins", `{"architectures":["X"],"hidden_size":1,"text_config":{"hidden_size":2}}`, "X", 2},
		{"text_config architectures", `{"architectures":["Wrapper"],"text_config":{"architectures":["Inner"],"hidden_size":2}}`, "Inner", 2},
		{"llm_config (InternVL)", `{"architectures":["W"],"llm_config":{"hidden_size":3}}`, "W", 3},
		{"lm_config (GlmASR)", `{"architectures":["W"],"lm_config":{"hidden_size":4}}`, "W", 4},
		{"thinker_config.text_config (Qwen2.5-Omni)", `{"architectures":["W"],"thinker_config":{"text_config":{"hidden_size":5}}}`, "W", 5},
		{"language_config (DeepSeekOCR)", `{"architectures":["W"],"language_config":{"hidden_size":6}}`, "W", 6},
		{"lfm (LFM2-Audio)", `{"architectures":["W"],"lfm":{"hidden_size":7}}`, "W", 7},
		{"later rename wins", `{"llm_config":{"hidden_size":3},"lfm":{"hidden_size":7}}`, "", 7},
		{"null text_config", `{"hidden_size":9,"text_config":null}`, "", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustParse(t, tc.js)
			c := &Config{Raw: raw, Params: textConfig(raw)}
			if got := c.Architecture(); got != tc.arch {
				t.Errorf("architecture %q, want %q", got, tc.arch)
			}
			if got, _ := c.HiddenSize(); got != tc.hidden {
				t.Errorf("hidden_size %d, want %d", got, tc.hidden)
			}
			if !reflect.DeepEqual(c.Raw, mustParse(t, tc.js)) {
				t.Error("Raw was modified")
			}
		})
	}
}

func TestMultimodalFolder(t *testing.T) {
	c, err := ReadConfig("testdata/multimodal")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := c.HiddenSize(); h != 2560 {
		t.Errorf("hidden_size %d, want the text model's 2560", h)
	}
	if n, _ := c.NumHiddenLayers(); n != 34 {
		t.Errorf("layers %d", n)
	}
	if c.ModelType() != "gemma3_text" || c.Architecture() != "Gemma3ForConditionalGeneration" || c.TorchDType() != "bfloat16" {
		t.Errorf("model_type %q arch %q dtype %q", c.ModelType(), c.Architecture(), c.TorchDType())
	}
	if v := c.Raw["hidden_size"]; v != json.Number("1") {
		t.Errorf("Raw hidden_size = %v, want 1 as read", v)
	}
}

func TestAccessors(t *testing.T) {
	c, err := ReadConfig("testdata/tiny-pt")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.TokenIDs("eos_token_id"); !slices.Equal(got, []int64{2, 3}) {
		t.Errorf("eos ids %v", got)
	}
	if _, ok := c.EOSTokenID(); ok {
		t.Error("EOSTokenID of a list should not be ok")
	}
	if _, ok := c.PadTokenID(); ok {
		t.Error("null pad_token_id should not be ok")
	}
	if got := c.TokenIDs("bos_token_id"); !slices.Equal(got, []int64{1}) {
		t.Errorf("bos ids %v", got)
	}
	if rs := c.RopeScaling(); rs["rope_type"] != "llama3" {
		t.Errorf("rope_scaling %v", rs)
	}
	if tie, ok := c.TieWordEmbeddings(); tie || !ok {
		t.Errorf("tie %v %v", tie, ok)
	}
	if c.TorchDType() != "bfloat16" || c.TokenizerConfig["add_bos_token"] != true {
		t.Errorf("dtype %q tokenizer_config %v", c.TorchDType(), c.TokenizerConfig)
	}

	g, err := ReadConfig("testdata/gpt2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    func() (int64, bool)
		want int64
		ok   bool
	}{
		{"n_embd", g.HiddenSize, 64, true},
		{"n_layer", g.NumHiddenLayers, 2, true},
		{"n_head", g.NumAttentionHeads, 2, true},
		{"n_positions", g.MaxPositionEmbeddings, 128, true},
		{"n_inner null", g.IntermediateSize, 0, false},
		{"no kv heads", g.NumKeyValueHeads, 0, false},
	} {
		if got, ok := tc.f(); got != tc.want || ok != tc.ok {
			t.Errorf("%s = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if eps, _ := g.LayerNormEps(); eps != 1e-5 {
		t.Errorf("layer_norm_epsilon %g", eps)
	}
	if g.TorchDType() != "float16" {
		t.Errorf("dtype %q", g.TorchDType())
	}
}

func TestNumbers(t *testing.T) {
	c := &Config{Params: mustParse(t, `{"i":7,"f":4.0,"frac":0.5,"big":1e300,"s":"x","n":null,"b":false,"neg":-3,
		"rope_parameters":{"rope_theta":1e6,"rope_type":"default"},"rope_scaling":{"factor":2}}`)}
	for _, tc := range []struct {
		keys []string
		want int64
		ok   bool
	}{
		{[]string{"i"}, 7, true},
		{[]string{"f"}, 4, true},
		{[]string{"frac"}, 0, false},
		{[]string{"big"}, 0, false},
		{[]string{"s"}, 0, false},
		{[]string{"n", "i"}, 7, true}, // a null value is skipped
		{[]string{"missing", "neg"}, -3, true},
		{[]string{"missing"}, 0, false},
	} {
		if got, ok := c.Int(tc.keys...); got != tc.want || ok != tc.ok {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tc.keys, got, ok, tc.want, tc.ok)
		}
	}
	if f, ok := c.Float("frac"); f != 0.5 || !ok {
		t.Errorf("Float = %g, %v", f, ok)
	}
	if s, ok := c.String("s"); s != "x" || !ok {
		t.Errorf("String = %q, %v", s, ok)
	}
	if b, ok := c.Bool("b"); b || !ok {
		t.Errorf("Bool = %v, %v", b, ok)
	}
	if theta, ok := c.RopeTheta(); theta != 1e6 || !ok {
		t.Errorf("rope_theta from rope_parameters = %g, %v", theta, ok)
	}
	if rs := c.RopeScaling(); rs["rope_type"] != "default" {
		t.Errorf("rope_parameters should win over rope_scaling: %v", rs)
	}
	c.Params["rope_parameters"] = nil
	if rs := c.RopeScaling(); rs != nil {
		t.Errorf("a null rope_parameters gives no scaling (as llama.cpp's `or {}`), got %v", rs)
	}
}

// TestParams checks the params.json mapping, including Meta's FeedForward
// width for published checkpoints (Llama 2 7B: 11008, 70B: 28672, Llama 3
// 8B: 14336).
func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		js                   string
		hidden, ffn, kv, voc int64
	}{
		{"llama2-7b", `{"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-05, "vocab_size": -1}`, 4096, 11008, 32, -1},
		{"llama2-70b", `{"dim": 8192, "multiple_of": 4096, "ffn_dim_multiplier": 1.3, "n_heads": 64, "n_kv_heads": 8, "n_layers": 80, "norm_eps": 1e-05, "vocab_size": -1}`, 8192, 28672, 8, -1},
		{"llama3-8b", `{"dim": 4096, "n_layers": 32, "n_heads": 32, "n_kv_heads": 8, "vocab_size": 128256, "multiple_of": 1024, "ffn_dim_multiplier": 1.3, "norm_eps": 1e-05, "rope_theta": 500000.0}`, 4096, 14336, 8, 128256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustParse(t, tc.js)
			c := &Config{Raw: raw, Params: fromParams(raw)}
			get := func(f func() (int64, bool)) int64 {
				v, ok := f()
				if !ok {
					return -1
				}
				return v
			}
			if got := get(c.HiddenSize); got != tc.hidden {
				t.Errorf("hidden_size %d", got)
			}
			if got := get(c.IntermediateSize); got != tc.ffn {
				t.Errorf("intermediate_size %d, want %d", got, tc.ffn)
			}
			if got := get(c.NumKeyValueHeads); got != tc.kv {
				t.Errorf("num_key_value_heads %d, want %d", got, tc.kv)
			}
			if got := get(c.VocabSize); got != tc.voc {
				t.Errorf("vocab_size %d, want %d", got, tc.voc)
			}
			if eps, _ := c.RMSNormEps(); eps != 1e-5 {
				t.Errorf("rms_norm_eps %g", eps)
			}
		})
	}
}

func TestParseJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, js, msg string
	}{
		{"empty", ``, "EOF"},
		{"array", `[1]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"syntax", `{"a":}`, "offset 6"},
		{"truncated", `{"a":1`, "unexpected EOF"},
		{"trailing", `{"a":1} {"b":2}`, "data after the JSON object"},
		{"python NaN", `{"a":NaN}`, "offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tc.js))
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want ErrConfig saying %q", err, tc.msg)
			}
		})
	}
}

func TestReadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"x":`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadConfig(dir)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "generation_config.json") {
		t.Errorf("error %v, want ErrConfig naming generation_config.json", err)
	}
	empty, err := ReadConfig(t.TempDir())
	if err != nil || empty.File != "" || empty.Params != nil {
		t.Errorf("empty folder: %+v, %v", empty, err)
	}
	if empty.Architecture() != "" || empty.RopeScaling() != nil {
		t.Error("accessors of an empty Config must be zero")
	}
}

// FuzzParseJSON feeds arbitrary bytes to the config parser and every
// accessor of both views (config.json's and params.json's): errors wrap
// ErrConfig, nothing panics.
func FuzzParseJSON(f *testing.F) {
	for _, p := range []string{"testdata/tiny-pt/config.json", "testdata/meta/params.json", "testdata/multimodal/config.json", "testdata/gpt2/config.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"thinker_config":1,"text_config":[1],"rope_parameters":null,"eos_token_id":[1,"x",2.0]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := ParseJSON(b)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		for _, c := range []*Config{{Raw: raw, Params: textConfig(raw)}, {Raw: raw, Params: fromParams(raw)}} {
			c.Architectures()
			c.ModelType()
			c.HiddenSize()
			c.NumHiddenLayers()
			c.NumAttentionHeads()
			c.NumKeyValueHeads()
			c.IntermediateSize()
			c.VocabSize()
			c.RMSNormEps()
			c.LayerNormEps()
			c.RopeTheta()
			c.RopeScaling()
			c.MaxPositionEmbeddings()
			c.TieWordEmbeddings()
			c.TorchDType()
			c.BOSTokenID()
			c.EOSTokenID()
			c.PadTokenID()
			c.TokenIDs("eos_token_id")
		}
	})
}
