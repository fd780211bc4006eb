package arch

import (
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const llama4Base = `"architectures":["Llama4ForCausalLM"],"model_type":"llama4_text","num_hidden_layers":4,` +
	`"hidden_size":4,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"vocab_size":16,` +
	`"intermediate_size":6,"intermediate_size_mlp":10`

func paramsOf(t *testing.T, m Model) map[string]any {
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

func TestLlama4Config(t *testing.T) {
	// intermediate_size is the experts' length, intermediate_size_mlp the
	// dense FFN's; chunked attention (the default chunk size) keeps the
	// sliding window key out.
	m, err := New(hp(t, `{`+llama4Base+`}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got := paramsOf(t, m)
	if got["llama4.feed_forward_length"] != uint32(10) || got["llama4.expert_feed_forward_length"] != uint32(6) {
		t.Errorf("feed_forward_length %v, expert_feed_forward_length %v, want 10 and 6",
			got["llama4.feed_forward_length"], got["llama4.expert_feed_forward_length"])
	}
	if got["llama4.interleave_moe_layer_step"] != uint32(1) {
		t.Errorf("interleave_moe_layer_step %v, want Llama4TextConfig's 1", got["llama4.interleave_moe_layer_step"])
	}
	if _, ok := got["llama4.attention.sliding_window"]; ok {
		t.Error("sliding_window written for a chunked-attention model")
	}
	// Without attention_chunk_size every layer is full attention
	// (MobileLLM): sliding window 0.
	m, err = New(hp(t, `{`+llama4Base+`,"attention_chunk_size":null}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if v := paramsOf(t, m)["llama4.attention.sliding_window"]; v != uint32(0) {
		t.Errorf("sliding_window %v, want 0", v)
	}
	if _, err := New(hp(t, `{"architectures":["Llama4ForCausalLM"],"model_type":"x","num_hidden_layers":1,"intermediate_size":4}`), ""); err == nil || !strings.Contains(err.Error(), "intermediate_size_mlp") {
		t.Errorf("no intermediate_size_mlp: error %v", err)
	}
}

func TestLlama4LayerTypes(t *testing.T) {
	h := HParams{"num_hidden_layers": 5, "no_rope_layer_interval": 4, "attention_chunk_size": 8192}
	deriveLlama4LayerTypes(h)
	want := []any{"chunked_attention", "chunked_attention", "chunked_attention", "full_attention", "chunked_attention"}
	if !slices.Equal(h["layer_types"].([]any), want) {
		t.Errorf("layer_types %v, want %v", h["layer_types"], want)
	}
	h = HParams{"num_hidden_layers": 2, "no_rope_layers": []any{0, 1}, "attention_chunk_size": 8192, "no_rope_layer_interval": 0}
	deriveLlama4LayerTypes(h)
	if want := []any{"full_attention", "chunked_attention"}; !slices.Equal(h["layer_types"].([]any), want) {
		t.Errorf("layer_types %v, want %v", h["layer_types"], want)
	}
}

func TestTransposeHalf(t *testing.T) {
	// One expert, [n_embd 2, 2·n_ff 4]: gate_up.transpose(-1,-2).split(2, -2).
	src := []float32{0, 1, 2, 3, 10, 11, 12, 13}
	shape := []int64{1, 2, 4}
	for half, want := range [][]float32{{0, 10, 1, 11}, {2, 12, 3, 13}} {
		got, err := transposeHalf(shape, half)([][]float32{src})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("half %d: %v %v, want %v", half, got, err, want)
		}
	}
	got, _ := transposeHalf(shape, -1)([][]float32{src})
	if want := []float32{0, 10, 1, 11, 2, 12, 3, 13}; !slices.Equal(got, want) {
		t.Errorf("transpose: %v, want %v", got, want)
	}
}
