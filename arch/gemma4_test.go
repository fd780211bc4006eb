package arch

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestGemma4Derivations: Gemma4TextConfig's defaults as the converter sees
// them through to_dict (layer types with the last one made full, default
// rope parameters, per_layer_config from global_head_dim), and the keys and
// rope factors the plugin derives from them.
func TestGemma4Derivations(t *testing.T) {
	const cfg = `{"architectures":["Gemma4ForCausalLM"],"model_type":"gemma4_text","num_hidden_layers":7,` +
		`"hidden_size":8,"head_dim":4,"global_head_dim":16,"vocab_size":16,"intermediate_size":8,` +
		`"num_kv_shared_layers":2,"use_double_wide_mlp":true,"num_attention_heads":2,"num_key_value_heads":1}`
	h := hp(t, cfg)
	m, err := New(h, "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.Key] = fmt.Sprint(kv.Value.Any())
	}
	for key, want := range map[string]string{
		"gemma4.attention.key_length":             "16",
		"gemma4.attention.key_length_swa":         "4",
		"gemma4.rope.dimension_count":             "16",
		"gemma4.rope.dimension_count_swa":         "4",
		"gemma4.rope.freq_base":                   "1e+06",
		"gemma4.rope.freq_base_swa":               "10000",
		"gemma4.feed_forward_length":              "[8 8 8 8 8 16 16]",
		"gemma4.attention.sliding_window_pattern": "[true true true true true false false]",
	} {
		if got[key] != want {
			t.Errorf("%s = %s, want %s", key, got[key], want)
		}
	}
	extra, err := m.Extra()
	if err != nil {
		t.Fatal(err)
	}
	// 16 dims, partial 0.25: 2 of 8 pairs rotated.
	if len(extra) != 1 || extra[0].Name != "rope_freqs.weight" || len(extra[0].Data) != 8 ||
		extra[0].Data[1] != 1 || extra[0].Data[2] != 1e30 {
		t.Errorf("rope_freqs %+v", extra)
	}
}

// TestGemma4Refusals: configurations the plugin refuses with an error that
// names the reason instead of converting them wrongly.
func TestGemma4Refusals(t *testing.T) {
	base := `"model_type":"gemma4_text","num_hidden_layers":2,"hidden_size":8,"head_dim":4,"vocab_size":16,` +
		`"intermediate_size":8,"num_kv_shared_layers":0`
	for _, c := range []struct{ name, cfg, want string }{
		{"bidirectional", `{"architectures":["Gemma4ForCausalLM"],` + base + `,"use_bidirectional_attention":"all"}`, "use_bidirectional_attention"},
		{"3n altup width", `{"architectures":["Gemma3nForCausalLM"],"model_type":"gemma3n_text","num_hidden_layers":2,"altup_num_inputs":2}`, "altup_num_inputs"},
	} {
		_, err := New(hp(t, c.cfg), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
	// A null head dim of the full layers fails at Params, not with a panic.
	m, err := New(hp(t, `{"architectures":["Gemma4ForCausalLM"],`+base+`,"global_head_dim":null}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); err == nil || !errors.As(err, new(*ConfigError)) {
		t.Errorf("null global_head_dim: %v", err)
	}
}

// TestGemma3nAltUpAndSparsity: the AltUp projections are stacked only once
// the three are there (an incomplete set is an error at Finish), the
// default activation sparsity (10 sparse layers) becomes normal quantiles
// as torch computes them, and the per-layer embedding is padded to
// vocab_size.
func TestGemma3nAltUpAndSparsity(t *testing.T) {
	const cfg = `{"architectures":["Gemma3nForCausalLM"],"model_type":"gemma3n_text","num_hidden_layers":12,` +
		`"hidden_size":8,"head_dim":4,"vocab_size":20,"vocab_size_per_layer_input":16,"intermediate_size":8}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if kv.Key == "gemma3n.activation_sparsity_scale" {
			xs := kv.Value.Any().([]float32)
			// torch.distributions.Normal(0, 1).icdf(0.95) in float32.
			if len(xs) != 12 || xs[0] != 1.6448535919189453 || xs[9] != 1.6448535919189453 || xs[10] > -1e38 {
				t.Errorf("activation_sparsity_scale %v", xs)
			}
		}
		if kv.Key == "gemma3n.feed_forward_length" && fmt.Sprint(kv.Value.Any()) != "[8 8 8 8 8 8 8 8 8 8 8 8]" {
			t.Errorf("feed_forward_length %v", kv.Value.Any())
		}
	}
	var outs []Output
	for _, i := range []string{"0", "2"} {
		o, err := m.Modify(Input{Name: "model.altup_projections." + i + ".weight", Shape: []int64{8, 8}}, -1)
		if err != nil || len(o) != 0 {
			t.Fatalf("projection %s: %v %v", i, o, err)
		}
	}
	if err := m.Finish(); err == nil {
		t.Error("incomplete AltUp projections accepted")
	}
	if outs, err = m.Modify(Input{Name: "model.altup_projections.1.weight", Shape: []int64{8, 8}}, -1); err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Name != "altup_proj.weight" || len(outs[0].Sources) != 3 ||
		outs[0].Sources[1].Name != "model.altup_projections.1.weight" || len(outs[0].Shape) != 3 {
		t.Errorf("stacked %+v", outs)
	}
	if err := m.Finish(); err != nil {
		t.Error(err)
	}
	if _, err := m.Modify(Input{Name: "model.altup_projections.3.weight", Shape: []int64{8, 8}}, -1); err == nil {
		t.Error("a fourth AltUp projection accepted")
	}
	outs, err = m.Modify(Input{Name: "model.embed_tokens_per_layer.weight", Shape: []int64{16, 24}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Name != "per_layer_token_embd.weight" || outs[0].Shape[0] != 20 {
		t.Fatalf("padded %+v", outs)
	}
	v, err := outs[0].Build([][]float32{make([]float32, 16*24)})
	if err != nil || len(v) != 20*24 {
		t.Errorf("padded values: %d, %v", len(v), err)
	}
}
