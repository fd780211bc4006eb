package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const ernieBase = `"architectures":["Ernie4_5_ForCausalLM"],"model_type":"ernie4_5","num_hidden_layers":1,` +
	`"hidden_size":4,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":2,"vocab_size":16`

// TestErnieFusedSplit: the remote-code checkpoints' "ernie." prefix,
// fused qkv_proj (rows q | k | v) and up_gate_proj (rows gate | up).
func TestErnieFusedSplit(t *testing.T) {
	m, err := New(hp(t, `{`+ernieBase+`}`), "")
	if err != nil {
		t.Fatal(err)
	}
	name, ok := m.Filter("ernie.layers.0.self_attn.qkv_proj.weight")
	if !ok || name != "model.layers.0.self_attn.qkv_proj.weight" {
		t.Fatalf("Filter: %q %v", name, ok)
	}
	// (2 + 2·1)·2 = 8 rows of 4.
	src := make([]float32, 32)
	for i := range src {
		src[i] = float32(i)
	}
	outs, err := m.Modify(Input{Name: name, Shape: []int64{8, 4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		rows int64
		r0   int
	}{{"blk.0.attn_q.weight", 4, 0}, {"blk.0.attn_k.weight", 2, 4}, {"blk.0.attn_v.weight", 2, 6}}
	if len(outs) != len(want) {
		t.Fatalf("%d outputs, want %d", len(outs), len(want))
	}
	for i, w := range want {
		o := outs[i]
		got, err := o.Build([][]float32{src})
		if err != nil {
			t.Fatal(err)
		}
		if o.Name != w.name || !slices.Equal(o.Shape, []int64{w.rows, 4}) || !slices.Equal(got, src[w.r0*4:(w.r0+int(w.rows))*4]) {
			t.Errorf("output %d: %s %v %v, want %s rows %d from %d", i, o.Name, o.Shape, got, w.name, w.rows, w.r0)
		}
	}
	outs, err = m.Modify(Input{Name: "model.layers.0.mlp.up_gate_proj.weight", Shape: []int64{6, 4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Name != "blk.0.ffn_gate.weight" || outs[1].Name != "blk.0.ffn_up.weight" {
		t.Fatalf("up_gate_proj outputs %v", outs)
	}
	up, _ := outs[1].Build([][]float32{src[:24]})
	if !slices.Equal(up, src[12:24]) {
		t.Errorf("up half %v", up)
	}
	for _, in := range []Input{
		{Name: "model.layers.0.self_attn.qkv_proj.weight", Shape: []int64{7, 4}},
		{Name: "model.layers.0.mlp.up_gate_proj.weight", Shape: []int64{5, 4}},
		{Name: "model.layers.0.mlp.up_gate_proj.weight", Shape: []int64{}},
	} {
		if _, err := m.Modify(in, 0); err == nil {
			t.Errorf("%s %v: no error", in.Name, in.Shape)
		}
	}
}

func TestErnieMoeParams(t *testing.T) {
	base := `"architectures":["Ernie4_5_MoeForCausalLM"],"model_type":"ernie4_5_moe","num_hidden_layers":2,` +
		`"hidden_size":4,"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":16,"intermediate_size":12`
	m, err := New(hp(t, `{`+base+`}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Filter("model.mtp_block.0.self_attn.q_proj.weight"); ok {
		t.Error("MTP block tensor kept")
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	// Ernie4_5_MoeConfig's defaults: 64 experts, 6 used, 2 shared; 12 // 2.
	for k, v := range map[string]uint32{"expert_count": 64, "expert_used_count": 6, "expert_shared_count": 2,
		"expert_shared_feed_forward_length": 6, "leading_dense_block_count": 1} {
		if got["ernie4_5-moe."+k] != v {
			t.Errorf("%s = %v, want %d", k, got["ernie4_5-moe."+k], v)
		}
	}
	m, err = New(hp(t, `{`+strings.Replace(base, `"num_key_value_heads":2`, `"num_key_value_heads":0`, 1)+`}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); !errors.Is(err, ErrConfig) {
		t.Errorf("zero kv heads: error %v, want ErrConfig", err)
	}
}
