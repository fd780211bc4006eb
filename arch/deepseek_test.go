package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestMLAKVB: kv_b_proj [heads·(nope+v), rank] splits into k_b [heads,
// rank, nope] (each head's first nope rows, transposed) and v_b [heads, v,
// rank] (its other rows), as DeepseekV2Model.modify_tensors' view, split
// and transpose(1, 2) do.
func TestMLAKVB(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["DeepseekV2ForCausalLM"],"model_type":"deepseek_v2","num_hidden_layers":1,
		"num_attention_heads":2,"num_key_value_heads":2,"qk_nope_head_dim":2,"qk_rope_head_dim":2,"v_head_dim":1,
		"kv_lora_rank":3,"hidden_size":4,"n_routed_experts":2,"vocab_size":8}`), "")
	if err != nil {
		t.Fatal(err)
	}
	// Rows (head, row): h0 n0, h0 n1, h0 v0, h1 n0, h1 n1, h1 v0; value
	// = 10·row + column.
	src := make([]float32, 6*3)
	for r := range 6 {
		for c := range 3 {
			src[r*3+c] = float32(10*r + c)
		}
	}
	in := Input{Name: "model.layers.0.self_attn.kv_b_proj.weight", Shape: []int64{6, 3}}
	outs, err := m.Modify(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 {
		t.Fatalf("%d outputs", len(outs))
	}
	for _, tc := range []struct {
		name  string
		shape []int64
		want  []float32
	}{
		// k_b[h][c][j] = src[h·3 + j][c].
		{"blk.0.attn_k_b.weight", []int64{2, 3, 2}, []float32{0, 10, 1, 11, 2, 12, 30, 40, 31, 41, 32, 42}},
		{"blk.0.attn_v_b.weight", []int64{2, 1, 3}, []float32{20, 21, 22, 50, 51, 52}},
	} {
		var o *Output
		for i := range outs {
			if outs[i].Name == tc.name {
				o = &outs[i]
			}
		}
		if o == nil {
			t.Fatalf("no %s among %v", tc.name, outs)
		}
		if !slices.Equal(o.Shape, tc.shape) {
			t.Errorf("%s: shape %v, want %v", tc.name, o.Shape, tc.shape)
		}
		got, err := o.Build([][]float32{src})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	in.Shape = []int64{5, 3}
	if _, err := m.Modify(in, 0); err == nil || !strings.Contains(err.Error(), "kv_b_proj split: shape [5 3]") {
		t.Errorf("5 rows: error %v", err)
	}
}

const dsv3Base = `"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","num_hidden_layers":2,` +
	`"hidden_size":4,"num_attention_heads":2,"vocab_size":16,"qk_nope_head_dim":4,"qk_rope_head_dim":2,"v_head_dim":4,` +
	`"kv_lora_rank":8,"q_lora_rank":8,"n_routed_experts":4,"rope_scaling":{"type":"yarn","factor":40,` +
	`"original_max_position_embeddings":4096,"mscale_all_dim":0.707}`

// TestDeepseek2Params: the MLA lengths, the head_count_kv of 1, the
// yarn_log_multiplier of 0.1·mscale_all_dim, the MTP layers dropped; and
// hostile values refused.
func TestDeepseek2Params(t *testing.T) {
	m, err := New(hp(t, `{`+dsv3Base+`}`), "")
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
	for k, want := range map[string]any{
		"deepseek2.attention.head_count_kv":          uint32(1),
		"deepseek2.attention.key_length":             uint32(10),
		"deepseek2.attention.value_length":           uint32(8),
		"deepseek2.attention.key_length_mla":         uint32(6),
		"deepseek2.attention.value_length_mla":       uint32(4),
		"deepseek2.attention.q_lora_rank":            uint32(8),
		"deepseek2.leading_dense_block_count":        uint32(3), // DeepseekV3Config's default
		"deepseek2.rope.dimension_count":             uint32(2),
		"deepseek2.rope.scaling.yarn_log_multiplier": float32(0.1 * 0.707),
		"deepseek2.expert_weights_norm":              true,
		"deepseek2.expert_weights_scale":             float32(2.5),
	} {
		if got[k] != want {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], want)
		}
	}
	// model.layers.2 is the MTP layer of a 2-layer model: dropped.
	outs, err := m.Modify(Input{Name: "model.layers.2.eh_proj.weight", Shape: []int64{4, 8}}, 2)
	if err != nil || len(outs) != 0 {
		t.Errorf("MTP tensor: %v, %v", outs, err)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`"qk_rope_head_dim":"2"`, `"2" is not a uint32`},
		{`"kv_lora_rank":-1`, `kv_lora_rank: -1 is not a uint32`},
		{`"norm_topk_prob":"yes"`, `norm_topk_prob: "yes" is not a boolean`},
	} {
		cfg := `{` + dsv3Base + `,` + tc.cfg + `}`
		m, err := New(hp(t, cfg), "")
		if err == nil {
			_, err = m.Params(gguf.FileTypeF16)
		}
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
