package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func paramMap(t *testing.T, m Model) map[string]any {
	t.Helper()
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	return got
}

// TestChatGLMConfig: THUDM's config.json keys, and the converter's
// KeyError on a config without vocab_size.
func TestChatGLMConfig(t *testing.T) {
	base := `"architectures":["ChatGLMModel"],"model_type":"chatglm","num_layers":2,"hidden_size":64,` +
		`"num_attention_heads":4,"multi_query_group_num":2,"ffn_hidden_size":96,"seq_length":2048,"rope_ratio":500,"padded_vocab_size":32`
	m, err := New(hp(t, `{`+base+`,"vocab_size":32}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got := paramMap(t, m)
	want := map[string]any{
		"chatglm.context_length": uint32(2048), "chatglm.feed_forward_length": uint32(96),
		"chatglm.attention.head_count_kv": uint32(2), "chatglm.rope.dimension_count": uint32(8),
		"chatglm.rope.freq_base": float32(5e6), "chatglm.attention.layer_norm_rms_epsilon": float32(1e-5),
		gguf.KeyTokenizerAddBOS: false,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	if _, err := New(hp(t, `{`+base+`}`), ""); err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "vocab_size") {
		t.Errorf("no vocab_size: error %v", err)
	}
	if name, ok := m.Filter("transformer.rotary_pos_emb.inv_freq"); ok {
		t.Errorf("inv_freq kept as %q", name)
	}
	if name, _ := m.Filter("transformer.encoder.layers.0.self_attention.dense.weight"); name != "encoder.layers.0.self_attention.dense.weight" {
		t.Errorf("filtered name %q", name)
	}
}

// TestGLM4NeoxRows: normal_to_neox's row order, per head the even rotary
// rows, the odd ones, then the rest.
func TestGLM4NeoxRows(t *testing.T) {
	cfg := `{"architectures":["Glm4ForCausalLM"],"num_hidden_layers":1,"hidden_size":16,"num_attention_heads":2,` +
		`"num_key_value_heads":1,"head_dim":8,"rope_parameters":{"rope_theta":10000,"partial_rotary_factor":0.5,"mrope_section":[1,1,0]}}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Modify(Input{Name: "model.layers.0.self_attn.k_proj.bias", Shape: []int64{8}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 2, 1, 3, 4, 5, 6, 7}; !slices.Equal(out[0].RowOrder, want) {
		t.Errorf("row order %v, want %v", out[0].RowOrder, want)
	}
	v, err := out[0].Build([][]float32{{0, 1, 2, 3, 4, 5, 6, 7}})
	if err != nil || !slices.Equal(v, []float32{0, 2, 1, 3, 4, 5, 6, 7}) {
		t.Errorf("build %v, %v", v, err)
	}
	// Three heads of 8 rows are neither the 2 query heads nor the 1 KV head.
	if _, err := m.Modify(Input{Name: "model.layers.0.self_attn.k_proj.weight", Shape: []int64{24, 16}}, 0); err == nil || !strings.Contains(err.Error(), "effective heads") {
		t.Errorf("3 heads: error %v", err)
	}
	odd := strings.Replace(cfg, `"partial_rotary_factor":0.5`, `"partial_rotary_factor":0.375`, 1)
	if m, err = New(hp(t, odd), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.self_attn.q_proj.weight", Shape: []int64{16, 16}}, 0); err == nil || !strings.Contains(err.Error(), "even") {
		t.Errorf("3 rotary dims: error %v", err)
	}
}

// TestGLM4MoeNextN: the NextN/MTP layers are extra blocks.
func TestGLM4MoeNextN(t *testing.T) {
	base := `"architectures":["Glm4MoeForCausalLM"],"model_type":"glm4_moe","num_hidden_layers":2,"hidden_size":8,` +
		`"num_attention_heads":2,"num_key_value_heads":1,"n_routed_experts":4`
	for _, tc := range []struct {
		extra  string
		blocks int
		nextn  any
	}{
		{`,"num_nextn_predict_layers":1`, 3, uint32(1)},
		{`,"num_nextn_predict_layers":0`, 2, uint32(0)},
		{``, 2, nil},
	} {
		m, err := New(hp(t, `{`+base+tc.extra+`}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if m.BlockCount() != tc.blocks {
			t.Errorf("%q: %d blocks, want %d", tc.extra, m.BlockCount(), tc.blocks)
		}
		got := paramMap(t, m)
		if got["glm4moe.nextn_predict_layers"] != tc.nextn {
			t.Errorf("%q: nextn_predict_layers %v, want %v", tc.extra, got["glm4moe.nextn_predict_layers"], tc.nextn)
		}
		if got["glm4moe.expert_gating_func"] != uint32(2) || got["glm4moe.rope.dimension_count"] != uint32(2) {
			t.Errorf("%q: gating %v, rope dims %v", tc.extra, got["glm4moe.expert_gating_func"], got["glm4moe.rope.dimension_count"])
		}
	}
	for _, bad := range []string{`"x"`, `-1`, `1.5`} {
		if _, err := New(hp(t, `{`+base+`,"num_nextn_predict_layers":`+bad+`}`), ""); err == nil || !errors.Is(err, ErrConfig) {
			t.Errorf("num_nextn_predict_layers %s: error %v", bad, err)
		}
	}
	m, err := New(hp(t, `{`+base+`,"norm_topk_prob":"yes"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("norm_topk_prob \"yes\": error %v", err)
	}
}

// TestCohere2Config: rope dimensions from rotary_pct, keys the class needs.
func TestCohere2Config(t *testing.T) {
	base := `"architectures":["Cohere2ForCausalLM"],"model_type":"cohere2","num_hidden_layers":4,"hidden_size":64,` +
		`"num_attention_heads":4,"logit_scale":0.25,"sliding_window":4096,"vocab_size":32`
	m, err := New(hp(t, `{`+base+`,"rotary_pct":0.5}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got := paramMap(t, m)
	if got["cohere2.rope.dimension_count"] != uint32(8) || got["cohere2.rope.scaling.type"] != "none" {
		t.Errorf("rope dims %v, scaling %v", got["cohere2.rope.dimension_count"], got["cohere2.rope.scaling.type"])
	}
	if m, err = New(hp(t, `{`+base+`}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); err == nil || !strings.Contains(err.Error(), "rotary_pct") {
		t.Errorf("no rotary_pct: error %v", err)
	}
	out, err := m.Modify(Input{Name: "model.layers.0.self_attn.q_proj.bias", Shape: []int64{64}}, 0)
	if err != nil || len(out) != 1 || !out[0].DropIfZero {
		t.Errorf("bias: %+v, %v", out, err)
	}
}
