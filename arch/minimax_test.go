package arch

import (
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const miniMaxM2Base = `"architectures":["MiniMaxM2ForCausalLM"],"model_type":"minimax_m2","num_hidden_layers":2,` +
	`"hidden_size":4,"intermediate_size":16,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,` +
	`"num_local_experts":4,"num_experts_per_tok":2,"vocab_size":64`

func TestMiniMaxM2HostileConfig(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`"scoring_func":"sigmoid"`, "rotary_dim"}, // find_hparam(["rotary_dim"]) raises without it
		{`"rotary_dim":-4`, "rope.dimension_count"},
		{`"rotary_dim":4,"scoring_func":"relu"`, "gating function"},
	} {
		m, err := New(hp(t, `{`+miniMaxM2Base+`,`+tc.cfg+`}`), "")
		if err == nil {
			_, err = m.Params(gguf.FileTypeF16)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	// An expert past num_local_experts fills the block without one of its
	// experts: an error naming the stray tensor.
	m, err := New(hp(t, `{`+miniMaxM2Base+`,"rotary_dim":4,"num_local_experts":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for _, w := range []string{"w1", "w2", "w3"} {
		name := "model.layers.0.block_sparse_moe.experts.1." + w + ".weight"
		_, last = m.Modify(Input{Name: name, Source: name, Shape: []int64{16, 4}, DType: "BF16"}, 0)
	}
	if last == nil || !strings.Contains(last.Error(), "experts.1.w1") {
		t.Errorf("stray expert: %v", last)
	}
}
