package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const qwen3VLBase = `"architectures":["Qwen3VLForConditionalGeneration"],"model_type":"qwen3_vl_text","num_hidden_layers":2,` +
	`"hidden_size":8,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"vocab_size":16`

func TestQwen3VLDeepstack(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want uint32
	}{
		{`"vision_config":{"deepstack_visual_indexes":[1,2]}`, 2},
		{`"vision_config":{"depth":3}`, 3}, // Qwen3VLVisionConfig's default [8, 16, 24]
		{`"vision_config":{"deepstack_visual_indexes":[]}`, 0},
		{`"thinker_config":{"vision_config":{"deepstack_visual_indexes":[5]}},"vision_config":{}`, 1},
	} {
		m, err := New(hp(t, `{`+qwen3VLBase+`,`+tc.cfg+`}`), "")
		if err != nil {
			t.Fatal(err)
		}
		kvs, err := m.Params(gguf.FileTypeF16)
		if err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		var got any
		for _, kv := range kvs {
			if kv.Key == "qwen3vl.n_deepstack_layers" {
				got = kv.Value.Any()
			}
		}
		if got != tc.want {
			t.Errorf("%s: n_deepstack_layers %v, want %d", tc.cfg, got, tc.want)
		}
	}
	for _, cfg := range []string{`"vision_config":{"deepstack_visual_indexes":3}`, `"vision_config":[1]`, `"thinker_config":1`} {
		m, err := New(hp(t, `{`+qwen3VLBase+`,`+cfg+`}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Params(gguf.FileTypeF16); err == nil || !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want a config error", cfg, err)
		}
	}
}

func TestQwen3VLMoeExperts(t *testing.T) {
	cfg := strings.NewReplacer(`Qwen3VLForConditionalGeneration`, `Qwen3VLMoeForConditionalGeneration`,
		`qwen3_vl_text`, `qwen3_vl_moe_text`).Replace(qwen3VLBase)
	m, err := New(hp(t, `{`+cfg+`,"num_experts":2,"num_experts_per_tok":1,"moe_intermediate_size":2}`), "")
	if err != nil {
		t.Fatal(err)
	}
	// gate_up_proj [experts 1, hidden 2, 2·ff 4]: gate is columns 0-1, up 2-3,
	// each transposed to [1, 2, 2].
	outs, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.gate_up_proj", Shape: []int64{1, 2, 4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := []float32{0, 1, 2, 3, 10, 11, 12, 13}
	gate, _ := outs[0].Build([][]float32{src})
	up, _ := outs[1].Build([][]float32{src})
	if outs[0].Name != "blk.0.ffn_gate_exps.weight" || !slices.Equal(gate, []float32{0, 10, 1, 11}) || !slices.Equal(up, []float32{2, 12, 3, 13}) {
		t.Errorf("%s %v, %s %v", outs[0].Name, gate, outs[1].Name, up)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.gate_up_proj", Shape: []int64{1, 2, 3}}, 0); err == nil {
		t.Error("odd gate_up_proj accepted")
	}
}
