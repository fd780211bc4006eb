package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const lfm2Base = `"architectures":["Lfm2ForCausalLM"],"model_type":"lfm2","num_hidden_layers":3,` +
	`"hidden_size":8,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":16`

func TestLFM2Config(t *testing.T) {
	// full_attn_idxs → layer_types → per-layer kv heads; block_ff_dim
	// 48 → int(2*48/3) = 32 → multiple of 16: 32.
	m, err := New(hp(t, `{`+lfm2Base+`,"full_attn_idxs":[1],"block_ff_dim":48,"block_multiple_of":16}`), "")
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
	if v, _ := got["lfm2.attention.head_count_kv"].([]int32); !slices.Equal(v, []int32{0, 1, 0}) {
		t.Errorf("head_count_kv %v, want [0 1 0]", got["lfm2.attention.head_count_kv"])
	}
	if v := got["lfm2.feed_forward_length"]; v != uint32(32) {
		t.Errorf("feed_forward_length %v (%T), want 32", v, v)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`"layer_types":["conv"]`, "has 1 entries for 3 blocks"},
		{`"layer_types":"conv"`, "is not a list"},
		{`"layer_types":["conv",1,"conv"]`, "layer_types[1]"},
	} {
		_, err := New(hp(t, `{`+lfm2Base+`,`+tc.cfg+`}`), "")
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, tc := range []struct{ cfg, want string }{
		{`"block_multiple_of":0`, "block_multiple_of"},
		{`"block_ff_dim":-3`, "feed_forward_length"},
		{`"block_ffn_dim_multiplier":1e300`, "block_ffn_dim_multiplier"},
		{`"block_auto_adjust_ff_dim":"yes"`, "block_auto_adjust_ff_dim"},
	} {
		m, err := New(hp(t, `{`+lfm2Base+`,`+tc.cfg+`}`), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		if _, err := m.Params(gguf.FileTypeF16); err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Params error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestLFM2Tensors(t *testing.T) {
	m, err := New(hp(t, `{`+lfm2Base+`,"full_attn_idxs":[1]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Modify(Input{Name: "model.layers.0.conv.conv.weight", Shape: []int64{24, 1, 3}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Name != "blk.0.shortconv.conv.weight" || !slices.Equal(outs[0].Shape, []int64{24, 3}) {
		t.Fatalf("conv weight: %+v", outs)
	}
	// A conv bias (conv_bias true) is 1-D: squeeze(1) raises in the converter.
	if _, err := m.Modify(Input{Name: "model.layers.0.conv.conv.bias", Shape: []int64{24}}, 0); err == nil {
		t.Error("1-D conv.conv tensor accepted")
	}
	for _, name := range []string{"model.audio_tower.x.weight", "model.layers.0.depthformer.w"} {
		if _, ok := m.Filter(name); ok {
			t.Errorf("%s not dropped", name)
		}
	}
	if name, ok := m.Filter("lfm.layers.0.conv.in_proj.weight"); !ok || name != "model.layers.0.conv.in_proj.weight" {
		t.Errorf("lfm. prefix: %q %v", name, ok)
	}
}

func TestLFM2Moe(t *testing.T) {
	const cfg = `{"architectures":["Lfm2MoeForCausalLM"],"model_type":"lfm2_moe","num_hidden_layers":2,` +
		`"hidden_size":8,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":16,` +
		`"layer_types":["full_attention","conv"],"num_experts":2,"num_dense_layers":1,"moe_intermediate_size":4}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := m.Filter("model.layers.1.feed_forward.expert_bias"); !ok || name != "model.layers.1.feed_forward.expert_bias.bias" {
		t.Errorf("expert_bias: %q", name)
	}
	var outs []Output
	for xid := range 2 {
		for _, w := range []string{"w1", "w2", "w3"} {
			o, err := m.Modify(Input{Name: "model.layers.1.feed_forward.experts." + string(rune('0'+xid)) + "." + w + ".weight", Shape: []int64{4, 8}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, o...)
		}
	}
	if len(outs) != 3 || outs[0].Name != "blk.1.ffn_gate_exps.weight" || !slices.Equal(outs[0].Shape, []int64{2, 4, 8}) {
		t.Fatalf("stacked experts: %+v", outs)
	}
	if err := m.Finish(); err != nil {
		t.Fatal(err)
	}
	// An expert number past the count never completes its block.
	if _, err := m.Modify(Input{Name: "model.layers.1.feed_forward.experts.7.w1.weight", Shape: []int64{4, 8}}, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(); err == nil {
		t.Error("incomplete expert set not reported")
	}
	bad := strings.Replace(cfg, `"num_experts":2`, `"num_experts":0`, 1)
	if _, err := New(hp(t, bad), ""); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("0 experts: %v", err)
	}
}
