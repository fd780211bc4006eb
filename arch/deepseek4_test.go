package arch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

const deepseek4Base = `"architectures":["DeepseekV4ForCausalLM"],"model_type":"deepseek_v4","num_hidden_layers":2,` +
	`"hidden_size":32,"num_attention_heads":2,"head_dim":16,"qk_rope_head_dim":8,"vocab_size":16,` +
	`"compress_ratios":[0,4,0],"compress_rope_theta":160000`

// TestDeepseek4Params: the file type is MXFP4_MOE whatever the outtype, the
// clamp limits are one per block (INT32 for an integer literal, as gguf-py
// types a list), the output width is hidden·hc_mult, and the keys the
// converter reads without a default are errors naming them when missing.
func TestDeepseek4Params(t *testing.T) {
	m, err := New(hp(t, `{`+deepseek4Base+`,"num_hash_layers":1,"swiglu_limit":7}`), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeAllF32)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	if got[gguf.KeyGeneralFileType] != uint32(gguf.FileTypeMXFP4_MOE) {
		t.Errorf("file type %v", got[gguf.KeyGeneralFileType])
	}
	if v, ok := got["deepseek4.swiglu_clamp_exp"].([]int32); !ok || len(v) != 2 || v[0] != 7 {
		t.Errorf("swiglu_clamp_exp %#v, want two INT32 7", got["deepseek4.swiglu_clamp_exp"])
	}
	if got["deepseek4.embedding_length_out"] != uint32(128) {
		t.Errorf("embedding_length_out %v, want 32·4", got["deepseek4.embedding_length_out"])
	}
	if _, err := New(hp(t, `{`+deepseek4Base+`}`), ""); err == nil || !strings.Contains(err.Error(), "num_hash_layers") {
		t.Errorf("no num_hash_layers: %v", err)
	}
	if _, err := New(hp(t, `{`+deepseek4Base+`,"num_hash_layers":3}`), ""); !errors.Is(err, ErrConfig) {
		t.Errorf("3 hash layers of 2: %v, want ErrConfig", err)
	}
	m, err = New(hp(t, `{`+strings.Replace(deepseek4Base, `"compress_ratios":[0,4,0],`, "", 1)+`,"num_hash_layers":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "compress_ratios") {
		t.Errorf("no compress_ratios: %v", err)
	}
}

// TestDeepseek4FP8Dequant: each value is multiplied by its 128×128
// block's scale (the last blocks partial); a NaN scale is an error naming
// the scale tensor and the block.
func TestDeepseek4FP8Dequant(t *testing.T) {
	w := Input{Name: "w", Source: "w.weight", Shape: []int64{130, 3}, DType: readers.F8E4M3}
	s := Input{Name: "s", Source: "w.scale", Shape: []int64{2, 1}, DType: readers.F8E8M0}
	build, err := fp8BlockDequant(w, s, 128)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, 130*3)
	for i := range v {
		v[i] = 1
	}
	out, err := build([][]float32{v, {2, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if out[127*3] != 2 || out[128*3] != 0.5 || out[129*3+2] != 0.5 {
		t.Errorf("rows 127, 128, 129: %v %v %v", out[127*3], out[128*3], out[129*3+2])
	}
	nan := readers.F8E8M0ToFloat32(0xff)
	if _, err := build([][]float32{v, {2, nan}}); !errors.Is(err, readers.ErrScale) || !strings.Contains(err.Error(), "w.scale") {
		t.Errorf("NaN scale: %v", err)
	}
	if _, err := fp8BlockDequant(w, Input{Source: "w.scale", Shape: []int64{1, 1}}, 128); !errors.Is(err, readers.ErrScale) {
		t.Errorf("1×1 scale for 130 rows: %v", err)
	}
}

// TestTiktokenRemoteCodeRefused: Kimi K2 (a DeepSeek-V3 folder with
// tiktoken.model and no tokenizer.json), Kimi-VL / K2.5 and HunYuan-A13B
// are refused with an error saying what the converter needs.
func TestTiktokenRemoteCodeRefused(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tiktoken.model", "tokenization_kimi.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v3 := `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":2,"qk_rope_head_dim":2,"qk_nope_head_dim":2,"v_head_dim":2,"vocab_size":16}`
	var ue *UnsupportedError
	if _, err := New(hp(t, v3), dir); !errors.As(err, &ue) || !strings.Contains(err.Error(), "tiktoken.model") {
		t.Errorf("Kimi K2: %v", err)
	}
	if _, err := New(hp(t, v3), t.TempDir()); err != nil {
		t.Errorf("DeepSeek-V3 without tiktoken.model: %v", err)
	}
	for name, want := range map[string]string{
		"HunYuanMoEV1ForCausalLM":         "hy.tiktoken",
		"KimiK25ForConditionalGeneration": "tokenization_kimi.py",
		"DeepseekV4DSparkModel":           "--target-model-dir",
	} {
		_, err := New(hp(t, `{"architectures":["`+name+`"]}`), "")
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an UnsupportedError naming %s", name, err, want)
		}
	}
}

// TestDeepseek4ChatTemplate: DeepseekV4Model.__init__'s default template,
// the 0731 one when the folder's name says 0731.
func TestDeepseek4ChatTemplate(t *testing.T) {
	h := `{` + deepseek4Base + `,"num_hash_layers":1}`
	for dir, want := range map[string]string{"/m/DeepSeek-V4-Flash": deepseek4Template, "/m/DeepSeek-V4-Flash-0731": deepseek4Template0731} {
		m, err := New(hp(t, h), dir)
		if err != nil {
			t.Fatal(err)
		}
		kvs := m.(interface{ EarlyKVs() []gguf.KV }).EarlyKVs()
		if len(kvs) != 1 || kvs[0].Key != "tokenizer.chat_template" || kvs[0].Value.Any() != want {
			t.Errorf("%s: %d pairs, want the template", dir, len(kvs))
		}
	}
	if deepseek4Template == deepseek4Template0731 || deepseek4Template == "" {
		t.Error("the two embedded templates are not distinct")
	}
}
