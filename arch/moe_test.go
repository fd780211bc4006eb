package arch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// kvValue is the Go value of key in kvs, or nil.
func kvValue(kvs []gguf.KV, key string) any {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.Any()
		}
	}
	return nil
}

// feedExperts passes every per-expert MLP tensor of one block to m and
// returns the outputs.
func feedExperts(t *testing.T, m Model, bid, n int, shape []int64) []Output {
	t.Helper()
	var outs []Output
	for xid := range n {
		for _, wid := range []string{"down_proj", "gate_proj", "up_proj"} {
			name := fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", bid, xid, wid)
			o, err := m.Modify(Input{Name: name, Shape: shape}, bid)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			outs = append(outs, o...)
		}
	}
	return outs
}

const olmoeCfg = `{"architectures":["OlmoeForCausalLM"],"model_type":"olmoe","num_hidden_layers":2,` +
	`"hidden_size":8,"num_attention_heads":2,"num_experts":%s,"num_experts_per_tok":2,"rms_norm_eps":1e-6}`

func TestOlmoe(t *testing.T) {
	m, err := New(hp(t, strings.Replace(olmoeCfg, "%s", "2", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	// The converter's fixed epsilon replaces rms_norm_eps; the KV head
	// count is OlmoeConfig's derived one.
	if v := kvValue(kvs, "olmoe.attention.layer_norm_rms_epsilon"); v != float32(1e-5) {
		t.Errorf("rms epsilon %v, want 1e-5", v)
	}
	if v := kvValue(kvs, "olmoe.attention.head_count_kv"); v != uint32(2) {
		t.Errorf("head_count_kv %v, want 2 (num_attention_heads)", v)
	}
	if v := kvValue(kvs, "olmoe.expert_count"); v != uint32(2) {
		t.Errorf("expert_count %v", v)
	}
	outs := feedExperts(t, m, 1, 2, []int64{4, 8})
	if len(outs) != 3 || outs[0].Name != "blk.1.ffn_down_exps.weight" || outs[1].Name != "blk.1.ffn_gate_exps.weight" ||
		outs[2].Name != "blk.1.ffn_up_exps.weight" {
		t.Fatalf("stacked outputs %+v", outs)
	}
	if s := outs[0].Shape; len(s) != 3 || s[0] != 2 || s[1] != 4 || s[2] != 8 {
		t.Errorf("stacked shape %v", s)
	}
	if err := m.Finish(); err != nil {
		t.Errorf("finish after complete blocks: %v", err)
	}

	// An expert past the count fills the block without one of its experts.
	m, _ = New(hp(t, strings.Replace(olmoeCfg, "%s", "1", 1)), "")
	for _, name := range []string{"model.layers.0.mlp.experts.0.down_proj.weight", "model.layers.0.mlp.experts.0.gate_proj.weight"} {
		if _, err := m.Modify(Input{Name: name, Shape: []int64{4, 8}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.5.up_proj.weight", Shape: []int64{4, 8}}, 0); err == nil {
		t.Error("expert 5 of 1 accepted")
	}
	// A block left incomplete is an error at the end.
	m, _ = New(hp(t, strings.Replace(olmoeCfg, "%s", "2", 1)), "")
	if _, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.0.down_proj.weight", Shape: []int64{4, 8}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(); err == nil || !strings.Contains(err.Error(), "incomplete expert sets") {
		t.Errorf("incomplete block: %v", err)
	}
	// Expert tensors of a block past the block count.
	if _, err := m.Modify(Input{Name: "model.layers.7.mlp.experts.0.down_proj.weight", Shape: []int64{4, 8}}, 7); err == nil {
		t.Error("expert tensor of block 7 of 2 accepted")
	}
	// Hostile or missing expert counts are refused before anything is sized.
	for _, n := range []string{"0", "-3", "1e9", `"4"`, "null"} {
		m, err := New(hp(t, strings.Replace(olmoeCfg, "%s", n, 1)), "")
		if err != nil {
			continue
		}
		if _, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.0.down_proj.weight", Shape: []int64{4, 8}}, 0); err == nil {
			t.Errorf("num_experts %s accepted", n)
		}
	}
}

const graniteMoeCfg = `{"architectures":["GraniteMoeSharedForCausalLM"],"model_type":"granitemoeshared",` +
	`"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"intermediate_size":4,"vocab_size":16,` +
	`"num_local_experts":%s,"shared_intermediate_size":6,"embedding_multiplier":12.0}`

func TestGraniteMoe(t *testing.T) {
	m, err := New(hp(t, strings.Replace(graniteMoeCfg, "%s", "2", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	if v := kvValue(kvs, "granitemoe.expert_shared_feed_forward_length"); v != uint32(6) {
		t.Errorf("expert_shared_feed_forward_length %v, want 6", v)
	}
	if v := kvValue(kvs, "granitemoe.embedding_scale"); v != float32(12) {
		t.Errorf("embedding_scale %v", v)
	}
	outs, err := m.Modify(Input{Name: "model.layers.0.block_sparse_moe.input_linear.weight", Shape: []int64{2, 8, 8}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Name != "blk.0.ffn_gate_exps.weight" || outs[1].Name != "blk.0.ffn_up_exps.weight" {
		t.Fatalf("outputs %+v", outs)
	}
	// The up half is the second 4 rows of each expert.
	got, _ := outs[1].Build([][]float32{seq(2 * 8 * 8)})
	if outs[1].Shape[1] != 4 || got[0] != 32 || got[32] != 96 {
		t.Errorf("up half shape %v starts %v, %v", outs[1].Shape, got[0], got[32])
	}
	outs, err = m.Modify(Input{Name: "model.layers.0.shared_mlp.input_linear.weight", Shape: []int64{12, 8}}, 0)
	if err != nil || len(outs) != 2 || outs[0].Name != "blk.0.ffn_gate_shexp.weight" || outs[1].Shape[0] != 6 {
		t.Fatalf("shared expert outputs %+v, %v", outs, err)
	}
	// Rows that are not twice the FFN length are refused, as the
	// converter's assert does.
	for _, bad := range []Input{
		{Name: "model.layers.0.block_sparse_moe.input_linear.weight", Shape: []int64{2, 7, 8}},
		{Name: "model.layers.0.block_sparse_moe.input_linear.weight", Shape: []int64{8}},
		{Name: "model.layers.0.shared_mlp.input_linear.weight", Shape: []int64{8, 8}},
	} {
		if _, err := m.Modify(bad, 0); err == nil {
			t.Errorf("%s of shape %v accepted", bad.Name, bad.Shape)
		}
	}
	// Without routed experts the shared MLP is the dense FFN, which the
	// granitemoe architecture has no tensor names for: refused, as
	// format_tensor_name refuses it.
	m, err = New(hp(t, strings.Replace(graniteMoeCfg, "%s", "0", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.shared_mlp.input_linear.weight", Shape: []int64{12, 8}}, 0); err == nil {
		t.Error("dense shared_mlp accepted under granitemoe")
	}
	// A missing intermediate_size is a config error.
	m, _ = New(hp(t, strings.Replace(strings.Replace(graniteMoeCfg, "%s", "2", 1), `"intermediate_size":4,`, "", 1)), "")
	if _, err := m.Modify(Input{Name: "model.layers.0.block_sparse_moe.input_linear.weight", Shape: []int64{2, 8, 8}}, 0); err == nil {
		t.Error("input_linear without intermediate_size accepted")
	}
}
