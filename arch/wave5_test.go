package arch

import (
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestALiBiFamiliesRefuse checks that Bloom's, MPT's and Jais 2's
// converters refuse what they cannot convert as llama.cpp's does, with an
// error naming the cause.
func TestALiBiFamiliesRefuse(t *testing.T) {
	const (
		bloom = `{"architectures":["BloomForCausalLM"],"model_type":"bloom","n_layer":1,"hidden_size":8,"n_head":2,"layer_norm_epsilon":1e-5}`
		mpt   = `{"architectures":["MPTForCausalLM"],"model_type":"mpt","n_layers":1,"d_model":8,"n_heads":2,"max_seq_len":16,` +
			`"attn_config":{"alibi":true,"alibi_bias_max":8,"clip_qkv":null}}`
	)
	tests := []struct {
		name, cfg string
		tensor    *Input // nil: Params
		want      string
	}{
		{"bloom QKV of another width", bloom, &Input{Name: "transformer.h.0.self_attention.query_key_value.weight", Shape: []int64{12, 8}}, "does not hold 2 heads"},
		{"bloom heads not dividing the width", strings.Replace(bloom, `"n_head":2`, `"n_head":3`, 1), nil, "does not divide the width 8"},
		{"mpt AWQ scales", mpt, &Input{Name: "transformer.blocks.0.ffn.act.scales", Shape: []int64{32}}, "AWQ activation scales"},
		{"mpt without attn_config", strings.Replace(mpt, `"attn_config"`, `"attn_cfg"`, 1), nil, "attn_config is missing"},
		{"mpt alibi not a bool", strings.Replace(mpt, `"alibi":true`, `"alibi":"yes"`, 1), nil, "attn_config.alibi"},
		{"mpt without alibi_bias_max", strings.Replace(mpt, `,"alibi_bias_max":8`, ``, 1), nil, "alibi_bias_max is missing"},
		{"jais2 without heads", `{"architectures":["Jais2ForCausalLM"],"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":0}`, nil, "not a head count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, tc.cfg), "")
			if err == nil {
				if tc.tensor != nil {
					_, err = m.Modify(*tc.tensor, 0)
				} else {
					_, err = m.Params(gguf.FileTypeAllF32)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
