package arch

import (
	"slices"
	"testing"
)

func TestInternLM2WQKV(t *testing.T) {
	// 2 heads, 1 KV head, head_dim 2: rows q0 q0 q1 q1 k k v v.
	m, err := New(hp(t, `{"architectures":["InternLM2ForCausalLM"],"model_type":"internlm2","num_hidden_layers":1,`+
		`"hidden_size":4,"num_attention_heads":2,"num_key_value_heads":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Modify(Input{Name: "model.layers.0.attention.wqkv.weight", Shape: []int64{8, 4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]float32, 32)
	for i := range src {
		src[i] = float32(i / 4) // every value is its row number
	}
	var names []string
	wantRows := [][]float32{{0, 1, 2, 3}, {4, 5}, {6, 7}} // Q/K permuted with head_dim 2 stay in place
	for i, o := range outs {
		names = append(names, o.Name)
		v, err := o.Build([][]float32{src})
		if err != nil {
			t.Fatal(err)
		}
		var rows []float32
		for r := 0; r < len(v); r += 4 {
			rows = append(rows, v[r])
		}
		if !slices.Equal(rows, wantRows[i]) {
			t.Errorf("%s rows %v, want %v", o.Name, rows, wantRows[i])
		}
	}
	if want := []string{"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.attention.wqkv.weight", Shape: []int64{6, 4}}, 0); err == nil {
		t.Error("wqkv of the wrong shape accepted")
	}
}
