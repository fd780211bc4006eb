package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const qwen3NextBase = `"architectures":["Qwen3NextForCausalLM"],"model_type":"qwen3_next","num_hidden_layers":4,` +
	`"hidden_size":4,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":32,"vocab_size":16,` +
	`"linear_conv_kernel_dim":4,"linear_key_head_dim":2,"linear_value_head_dim":2,"linear_num_key_heads":2,` +
	`"linear_num_value_heads":4,"num_experts":2,"num_experts_per_tok":1`

func TestQwen3NextConfig(t *testing.T) {
	m, err := New(hp(t, `{`+qwen3NextBase+`,"full_attention_interval":2}`), "")
	if err != nil {
		t.Fatal(err)
	}
	ix := m.(TensorIndexer)
	// Qwen3-Next's config has no mtp_num_hidden_layers: without mtp.*
	// tensors the converter's assertion fails.
	if err := ix.IndexTensors([]string{"model.layers.0.linear_attn.A_log"}); err == nil || !strings.Contains(err.Error(), "AssertionError") {
		t.Fatalf("no MTP tensors: error %v", err)
	}
	if err := ix.IndexTensors([]string{"mtp.fc.weight", "model.mtp.layers.0.input_layernorm.weight"}); err != nil {
		t.Fatal(err)
	}
	if m.BlockCount() != 5 {
		t.Errorf("block count %d, want 5 (4 layers + 1 MTP)", m.BlockCount())
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	// layer_types derived from the interval 2, which Qwen3NextConfig pops:
	// the converter then writes its default 4.
	if v, _ := got["qwen3next.attention.recurrent_layers"].([]bool); !slices.Equal(v, []bool{true, false, true, false, false}) {
		t.Errorf("recurrent_layers %v", got["qwen3next.attention.recurrent_layers"])
	}
	for key, want := range map[string]any{
		"qwen3next.full_attention_interval": uint32(4), "qwen3next.rope.dimension_count": uint32(8),
		"qwen3next.ssm.inner_size": uint32(8), "qwen3next.nextn_predict_layers": uint32(1),
		"qwen3next.block_count": uint32(5),
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	for name, want := range map[string]string{
		"mtp.fc.weight":                        "model.layers.4.eh_proj.weight",
		"mtp.pre_fc_norm_embedding.weight":     "model.layers.4.enorm.weight",
		"model.mtp.norm.weight":                "model.layers.4.shared_head.norm.weight",
		"mtp.layers.0.self_attn.q_proj.weight": "model.layers.4.self_attn.q_proj.weight",
	} {
		if g, ok := m.Filter(name); !ok || g != want {
			t.Errorf("Filter(%s) = %q, want %q", name, g, want)
		}
	}
	// in_proj_qkvz of 2 key heads, each [q(2) k(2) v(4) z(4)] rows.
	outs, err := m.Modify(Input{Name: "model.layers.0.linear_attn.in_proj_qkvz.weight", Shape: []int64{24, 4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Name != "blk.0.attn_qkv.weight" || outs[1].Name != "blk.0.attn_gate.weight" {
		t.Fatalf("outputs %v", outs)
	}
	src := make([]float32, 24*4)
	for i := range src {
		src[i] = float32(i / 4)
	}
	qkv, _ := outs[0].Build([][]float32{src})
	var rows []float32
	for i := 0; i < len(qkv); i += 4 {
		rows = append(rows, qkv[i])
	}
	if want := []float32{0, 1, 12, 13, 2, 3, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19}; !slices.Equal(rows, want) {
		t.Errorf("attn_qkv rows %v, want %v", rows, want)
	}
}

func TestQwen3NextHostile(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`"layer_types":["linear_attention"]`, "has 1 entries for 4 blocks"},
		{`"mtp_num_hidden_layers":-1`, "mtp_num_hidden_layers"},
		{`"linear_num_key_heads":"2"`, "linear_num_key_heads"},
	} {
		_, err := New(hp(t, `{`+qwen3NextBase+`,`+tc.cfg+`}`), "")
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	m, err := New(hp(t, `{`+strings.Replace(qwen3NextBase, `"linear_conv_kernel_dim":4,`, `"linear_conv_kernel_dim":null,`, 1)+`,"mtp_num_hidden_layers":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	// (An absent key gets Qwen3NextConfig's default, as AutoConfig gives.)
	if _, err := m.Params(gguf.FileTypeF16); err == nil || !strings.Contains(err.Error(), "conv_kernel") {
		t.Errorf("null linear_conv_kernel_dim: error %v", err)
	}
	// Qwen3.5: value heads not a multiple of the key heads.
	cfg := strings.NewReplacer(`Qwen3NextForCausalLM`, `Qwen3_5ForCausalLM`, `qwen3_next`, `qwen3_5_text`,
		`"linear_num_value_heads":4`, `"linear_num_value_heads":3`).Replace(qwen3NextBase)
	m, err = New(hp(t, `{`+cfg+`,"mtp_num_hidden_layers":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.linear_attn.in_proj_z.weight", Shape: []int64{6, 4}}, 0); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("3 value heads on 2 key heads: error %v", err)
	}
}

func TestVHeadOrder(t *testing.T) {
	// 2 key heads with 2 value heads each (G0v0 G0v1 G1v0 G1v1) become
	// tiled (G0v0 G1v0 G0v1 G1v1).
	if got := vHeadOrder(2, 2, 1); !slices.Equal(got, []int64{0, 2, 1, 3}) {
		t.Errorf("vHeadOrder(2,2,1) = %v", got)
	}
	if got := vHeadOrder(2, 2, 2); !slices.Equal(got, []int64{0, 1, 4, 5, 2, 3, 6, 7}) {
		t.Errorf("vHeadOrder(2,2,2) = %v", got)
	}
}
