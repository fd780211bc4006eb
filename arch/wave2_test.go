package arch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func TestPermuteRowBlocks(t *testing.T) {
	// 3 blocks of 2 rows of 1 column, written as blocks 2, 0, 1.
	build, err := permuteRowBlocks([]int64{6, 1}, 2, []int64{2, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := build([][]float32{seq(6)})
	if want := []float32{4, 5, 0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []struct {
		shape []int64
		order []int64
	}{{[]int64{5, 1}, []int64{2, 0, 1}}, {[]int64{6, 1}, []int64{0, 1, 3}}, {nil, nil}} {
		if _, err := permuteRowBlocks(bad.shape, 2, bad.order); err == nil {
			t.Errorf("shape %v order %v accepted", bad.shape, bad.order)
		}
	}
}

// TestFalconQKV checks the regrouping of query_key_value against
// FalconModel.modify_tensors' view(n_kv, n_head/n_kv + 2, head_dim, hidden):
// 4 heads of 2 rows in 2 KV groups, stored q q k v | q q k v.
func TestFalconQKV(t *testing.T) {
	const cfg = `{"architectures":["FalconForCausalLM"],"model_type":"falcon","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":4,"num_kv_heads":2,"new_decoder_architecture":true}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Name: "transformer.h.0.self_attention.query_key_value.weight", Shape: []int64{16, 8}}
	outs, err := m.Modify(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Name != "blk.0.attn_qkv.weight" || outs[0].Build == nil {
		t.Fatalf("outputs %+v", outs)
	}
	got, err := outs[0].Build([][]float32{seq(16 * 8)})
	if err != nil {
		t.Fatal(err)
	}
	// Head blocks (2 rows each) in the source: group 0 = 0 1 (q) 2 (k) 3 (v), group 1 = 4 5 6 7.
	var rows []float32
	for i := 0; i < len(got); i += 16 {
		rows = append(rows, got[i]/16)
	}
	if want := []float32{0, 1, 4, 5, 2, 6, 3, 7}; !slices.Equal(rows, want) {
		t.Fatalf("head blocks in the order %v, want %v", rows, want)
	}
	// falcon-7b: multi_query without num_kv_heads. FalconConfig makes
	// num_kv_heads the head count, and the converter's view of the
	// (heads + 2) × head_dim rows then fails; so does ours.
	const mq = `{"architectures":["FalconForCausalLM"],"model_type":"falcon","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":4,"multi_query":true}`
	m, err = New(hp(t, mq), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(Input{Name: in.Name, Shape: []int64{12, 8}}, 0); err == nil || !strings.Contains(err.Error(), "num_kv_heads is 4") {
		t.Errorf("multi_query tensor with num_kv_heads = num_attention_heads: %v", err)
	}
	if _, err := m.Modify(Input{Name: "transformer.h.0.self_attention.query_key_value.bias", Shape: []int64{12}}, 0); err == nil {
		t.Error("query_key_value bias accepted (the converter's view fails on it)")
	}
}

// TestWave2Params checks the hyperparameter metadata of the wave-2 classes
// where it depends on transformers' defaults and on the classes' own rules.
func TestWave2Params(t *testing.T) {
	const base = `"num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,"intermediate_size":128,` +
		`"max_position_embeddings":256,"vocab_size":100`
	for _, tc := range []struct {
		name, config string
		want         map[string]any // key → value; nil: key absent
	}{
		{"phi without partial_rotary_factor: PhiConfig's 0.5", `"architectures":["PhiForCausalLM"],"model_type":"phi"`,
			map[string]any{"phi2.rope.dimension_count": uint32(8), "phi2.feed_forward_length": uint32(256),
				"phi2.attention.head_count_kv": uint32(4), gguf.KeyTokenizerAddBOS: false}},
		{"phi with 0.4", `"architectures":["PhiForCausalLM"],"model_type":"phi","partial_rotary_factor":0.4`,
			map[string]any{"phi2.rope.dimension_count": uint32(6)}},
		{"stablelm defaults: 0.25, no parallel residual", `"architectures":["StableLmForCausalLM"],"model_type":"stablelm"`,
			map[string]any{"stablelm.rope.dimension_count": uint32(4), "stablelm.use_parallel_residual": false,
				"stablelm.attention.head_count_kv": uint32(32), "stablelm.attention.layer_norm_epsilon": float32(1e-5)}},
		{"stablelm factor in rope_parameters", `"architectures":["StableLmForCausalLM"],"model_type":"stablelm","use_parallel_residual":true,` +
			`"rope_parameters":{"rope_type":"default","rope_theta":10000,"partial_rotary_factor":0.5}`,
			map[string]any{"stablelm.rope.dimension_count": uint32(8), "stablelm.use_parallel_residual": true}},
		{"falcon kv heads from the head count", `"architectures":["FalconForCausalLM"],"model_type":"falcon"`,
			map[string]any{"falcon.attention.head_count_kv": uint32(4), "falcon.context_length": uint32(2048),
				"falcon.feed_forward_length": uint32(256), "falcon.tensor_data_layout": "jploski"}},
		{"olmo2 without sliding_window", `"architectures":["Olmo2ForCausalLM"],"model_type":"olmo2"`,
			map[string]any{"olmo2.attention.sliding_window": nil, "olmo2.attention.head_count_kv": uint32(4),
				"olmo2.attention.layer_norm_rms_epsilon": float32(1e-5)}},
		{"olmo2 sliding_window, every 4th layer global", `"architectures":["Olmo2ForCausalLM"],"model_type":"olmo2","sliding_window":4096`,
			map[string]any{"olmo2.attention.sliding_window": uint32(4096),
				"olmo2.attention.sliding_window_pattern": []bool{true, true, true, false}}},
		{"olmo2 sliding_window with layer_types", `"architectures":["Olmo2ForCausalLM"],"model_type":"olmo2","sliding_window":64,` +
			`"layer_types":["full_attention","sliding_attention","sliding_attention","full_attention"]`,
			map[string]any{"olmo2.attention.sliding_window_pattern": []bool{false, true, true, false}}},
		{"granite drops head_dim, skips a zero multiplier", `"architectures":["GraniteForCausalLM"],"model_type":"granite",` +
			`"head_dim":32,"attention_multiplier":0.0,"embedding_multiplier":12,"residual_multiplier":0.22,"logits_scaling":8`,
			map[string]any{"granite.attention.key_length": nil, "granite.rope.dimension_count": uint32(16),
				"granite.attention.scale": nil, "granite.embedding_scale": float32(12),
				"granite.residual_scale": float32(0.22), "granite.logit_scale": float32(8)}},
		{"granite defaults: multipliers of 1", `"architectures":["GraniteForCausalLM"],"model_type":"granite"`,
			map[string]any{"granite.attention.scale": float32(1), "granite.logit_scale": float32(1),
				"granite.attention.head_count_kv": uint32(4)}},
		{"gpt_bigcode: one KV head, 4 × n_embd", `"architectures":["GPTBigCodeForCausalLM"],"model_type":"gpt_bigcode","n_embd":8,"n_head":2,"multi_query":false`,
			map[string]any{"starcoder.attention.head_count_kv": uint32(1), "starcoder.feed_forward_length": uint32(32),
				"starcoder.context_length": uint32(1024), "starcoder.attention.layer_norm_epsilon": float32(1e-5)}},
		{"olmo with clip_qkv", `"architectures":["OlmoForCausalLM"],"model_type":"olmo","clip_qkv":8.0`,
			map[string]any{"olmo.attention.clamp_kqv": float32(8), "olmo.attention.layer_norm_epsilon": float32(1e-5),
				"olmo.attention.head_count_kv": uint32(4)}},
		{"olmo without clip_qkv", `"architectures":["OlmoForCausalLM"],"model_type":"olmo"`,
			map[string]any{"olmo.attention.clamp_kqv": nil, "olmo.rope.freq_base": float32(10000)}},
		{"command-r: context from model_max_length", `"architectures":["CohereForCausalLM"],"model_type":"cohere","model_max_length":131072`,
			map[string]any{"command-r.context_length": uint32(131072), "command-r.logit_scale": float32(0.0625),
				"command-r.rope.scaling.type": "none", "command-r.rope.freq_base": float32(500000)}},
		{"command-r without model_max_length", `"architectures":["CohereForCausalLM"],"model_type":"cohere","logit_scale":0.125`,
			map[string]any{"command-r.context_length": uint32(256), "command-r.logit_scale": float32(0.125)}},
		{"seed_oss without head_dim: derived", `"architectures":["SeedOssForCausalLM"],"model_type":"seed_oss","head_dim":null,"num_key_value_heads":null`,
			map[string]any{"seed_oss.attention.key_length": uint32(16), "seed_oss.attention.head_count_kv": uint32(4)}},
		{"smollm3 rope base: SmolLM3Config's", `"architectures":["SmolLM3ForCausalLM"],"model_type":"smollm3"`,
			map[string]any{"smollm3.rope.freq_base": float32(2e6), "smollm3.rope.dimension_count": uint32(16),
				"smollm3.vocab_size": uint32(100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, "{"+base+","+tc.config+"}"), "")
			if err != nil {
				t.Fatal(err)
			}
			kvs, err := m.Params(gguf.FileTypeF16)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for _, kv := range kvs {
				got[kv.Key] = kv.Value.Any()
			}
			for k, w := range tc.want {
				g, ok := got[k]
				switch wv := w.(type) {
				case nil:
					if ok {
						t.Errorf("%s = %v, want absent", k, g)
					}
				case []bool:
					if gb, _ := g.([]bool); !slices.Equal(gb, wv) {
						t.Errorf("%s = %v, want %v", k, g, wv)
					}
				default:
					if g != w {
						t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
					}
				}
			}
		})
	}
}

func TestStableLMRefusals(t *testing.T) {
	const cfg = `{"architectures":["StableLmForCausalLM"],"model_type":"stablelm","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":2,"qk_layernorm":true}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Modify(Input{Name: "model.layers.0.self_attn.q_layernorm.norms.0.weight", Shape: []int64{4}}, 0)
	if err == nil || !strings.Contains(err.Error(), "qk_layernorm") {
		t.Errorf("per-head q norm: %v", err)
	}
	dir := t.TempDir()
	if _, err := New(hp(t, cfg), dir); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("folder without tokenizer.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(hp(t, cfg), dir); err != nil {
		t.Errorf("folder with tokenizer.json: %v", err)
	}
}

func TestGraniteFilterAndTruthy(t *testing.T) {
	const cfg = `{"architectures":["GraniteForCausalLM"],"model_type":"granite","num_hidden_layers":1}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	for name, keep := range map[string]bool{
		"model.layers.0.self_attn.q_proj.weight": true,
		"encoder.layers.0.weight":                false,
		"model.image_newline":                    false,
		"layerwise_projectors.0.weight":          false,
	} {
		if _, ok := m.Filter(name); ok != keep {
			t.Errorf("Filter(%q) keeps %v, want %v", name, ok, keep)
		}
	}
	if _, err := New(hp(t, `{"architectures":["GraniteForCausalLM"],"num_hidden_layers":1,"deepstack_layer_map":[[1,2]]}`), ""); err == nil {
		t.Error("Granite 4 Vision config accepted")
	}
	for _, tc := range []struct {
		js   string
		want bool
	}{{`0`, false}, {`0.0`, false}, {`1e-3`, true}, {`null`, false}, {`""`, false}, {`[]`, false}, {`[0]`, true}, {`true`, true}} {
		h := hp(t, `{"v":`+tc.js+`}`)
		if got := Truthy(h["v"]); got != tc.want {
			t.Errorf("Truthy(%s) = %v", tc.js, got)
		}
	}
}

// TestOlmoPermute checks that OlmoModel permutes Q and K weights (K with
// the KV head count) and leaves biases alone.
func TestOlmoPermute(t *testing.T) {
	const cfg = `{"architectures":["OlmoForCausalLM"],"model_type":"olmo","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":2,"num_key_value_heads":1}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		rows  int64
		heads int64
	}{{"model.layers.0.self_attn.q_proj.weight", 8, 2}, {"model.layers.0.self_attn.k_proj.weight", 4, 1}} {
		outs, err := m.Modify(Input{Name: tc.name, Shape: []int64{tc.rows, 8}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := permuteQK([]int64{tc.rows, 8}, tc.heads, tc.heads)
		src := seq(int(tc.rows * 8))
		got, err := outs[0].Build([][]float32{src})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := want([][]float32{src})
		if !slices.Equal(got, w) {
			t.Errorf("%s: not permuted for %d heads", tc.name, tc.heads)
		}
	}
	outs, err := m.Modify(Input{Name: "model.layers.0.self_attn.q_proj.bias", Shape: []int64{8}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Build != nil {
		t.Error("q_proj.bias transformed")
	}
}

func TestExaone4(t *testing.T) {
	const base = `"architectures":["Exaone4ForCausalLM"],"model_type":"exaone4","num_hidden_layers":4,"hidden_size":64,` +
		`"num_attention_heads":4,"head_dim":16,"vocab_size":100`
	pattern := func(t *testing.T, cfg string) ([]bool, error) {
		t.Helper()
		m, err := New(hp(t, "{"+base+","+cfg+"}"), "")
		if err != nil {
			return nil, err
		}
		kvs, err := m.Params(gguf.FileTypeF16)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			if kv.Key == "exaone4.attention.sliding_window_pattern" {
				p, _ := kv.Value.Any().([]bool)
				return p, nil
			}
		}
		return nil, nil
	}
	for _, tc := range []struct {
		name, cfg string
		want      []bool
	}{
		{"derived from the default period 4", `"sliding_window":128`, []bool{true, true, true, false}},
		{"derived from period 2", `"sliding_window":128,"sliding_window_pattern":2`, []bool{true, false, true, false}},
		{"layer_types", `"layer_types":["full_attention","sliding_attention","full_attention","sliding_attention"]`, []bool{false, true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pattern(t, tc.cfg)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("pattern %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// Exaone4Config raises on these (the converter then reads config.json
	// without the class's defaults): refused.
	for _, cfg := range []string{`"sliding_window":null`, `"sliding_window":128,"sliding_window_pattern":"LLLG"`} {
		if _, err := pattern(t, cfg); err == nil || !strings.Contains(err.Error(), "layer_types") {
			t.Errorf("%s: %v", cfg, err)
		}
	}
	// llama3 rope factors with Exaone4Model's default factor of 16.
	m, err := New(hp(t, "{"+base+`,"sliding_window":128,"rope_scaling":{"rope_type":"llama3","original_max_position_embeddings":8192}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Extra()
	if err != nil {
		t.Fatal(err)
	}
	if want := llama3RopeFactors(10000, 16, 16, 1, 4, 8192); len(outs) != 1 || outs[0].Name != "rope_freqs.weight" || !slices.Equal(outs[0].Data, want) {
		t.Errorf("rope factors %+v, want %v", outs, want)
	}
}
