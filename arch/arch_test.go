package arch

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func hp(t *testing.T, js string) HParams {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var h HParams
	if err := dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNameMap(t *testing.T) {
	nm, err := NewNameMap("llama", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ hf, kind, gguf string }{
		{"model.embed_tokens.weight", "TOKEN_EMBD", "token_embd.weight"},
		{"lm_head.weight", "OUTPUT", "output.weight"},
		{"model.norm.weight", "OUTPUT_NORM", "output_norm.weight"},
		{"model.layers.2.self_attn.q_proj.weight", "ATTN_Q", "blk.2.attn_q.weight"},
		{"model.layers.0.self_attn.o_proj.weight", "ATTN_OUT", "blk.0.attn_output.weight"},
		{"model.layers.1.mlp.down_proj.weight", "FFN_DOWN", "blk.1.ffn_down.weight"},
		{"model.layers.1.post_attention_layernorm.weight", "FFN_NORM", "blk.1.ffn_norm.weight"},
		{"model.layers.1.self_attn.q_proj.bias", "ATTN_Q", "blk.1.attn_q.bias"},
		{"blk.1.attn_q.weight", "ATTN_Q", "blk.1.attn_q.weight"},
	} {
		t.Run(tc.hf, func(t *testing.T) {
			k, name, ok := nm.Lookup(tc.hf)
			if !ok || string(k) != tc.kind || name != tc.gguf {
				t.Fatalf("Lookup = %s %q %v, want %s %q", k, name, ok, tc.kind, tc.gguf)
			}
		})
	}
	for _, bad := range []string{"model.layers.3.self_attn.q_proj.weight", "model.embed_tokens.scale", "nothing"} {
		if _, _, ok := nm.Lookup(bad); ok {
			t.Errorf("%q mapped", bad)
		}
	}
	if n, err := nm.Format(KindRopeFreqs, -1, ".weight"); err != nil || n != "rope_freqs.weight" {
		t.Errorf("Format rope_freqs = %q, %v", n, err)
	}
	if !nm.Matches("token_embd.weight", KindTokenEmbd, -1) || nm.Matches("token_embd.weight", KindTokenEmbd, 0) ||
		!nm.Matches("blk.1.ffn_gate_inp.weight", KindFFNGateInp, 1) || nm.Matches("blk.1.ffn_gate_inp.bias", KindFFNGateInp, 1) {
		t.Error("Matches disagrees with match_model_tensor_name")
	}
	if _, err := NewNameMap("no-such-arch", 1); err == nil {
		t.Error("unknown architecture accepted")
	}
}

func TestBlockID(t *testing.T) {
	for name, want := range map[string]int{
		"model.layers.12.mlp.up_proj.weight":      12,
		"model.embed_tokens.weight":               -1,
		"layers.0.feed_forward.experts.w1.weight": 0,
		"h.3.attn.c_attn.weight":                  3,
		"x.-1.y":                                  -1,
	} {
		if got := BlockID(name); got != want {
			t.Errorf("BlockID(%q) = %d, want %d", name, got, want)
		}
	}
}

// seq is 0, 1, 2 … as float32.
func seq(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

// TestPermuteQK checks the row permutation against the definition:
// reshape(heads, 2, rows/heads/2, cols).swapaxes(1, 2).
func TestPermuteQK(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, heads, kv int64
	}{{8, 3, 2, 2}, {16, 1, 4, 4}, {8, 2, 4, 2}, {4, 5, 1, 1}} {
		build, order, err := permuteQK([]int64{tc.rows, tc.cols}, tc.heads, tc.kv)
		if err != nil {
			t.Fatal(err)
		}
		src := seq(int(tc.rows * tc.cols))
		got, err := build([][]float32{src})
		if err != nil {
			t.Fatal(err)
		}
		heads := tc.heads
		if tc.kv != tc.heads {
			heads = tc.kv
		}
		half := tc.rows / heads / 2
		for h := range heads {
			for a := range int64(2) {
				for b := range half {
					// Element [h][a][b] of the input lands at [h][b][a].
					in := (h*2+a)*half + b
					out := (h*half+b)*2 + a
					if order[out] != in {
						t.Fatalf("%+v: row order says row %d comes from %d, not %d", tc, out, order[out], in)
					}
					for c := range tc.cols {
						if got[out*tc.cols+c] != src[in*tc.cols+c] {
							t.Fatalf("%+v: row %d should come from row %d", tc, out, in)
						}
					}
				}
			}
		}
	}
	if _, _, err := permuteQK([]int64{6, 2}, 2, 2); err == nil {
		t.Error("6 rows split into 2 heads of rotary pairs accepted")
	}
}

func TestQKVPerHeadToBlocks(t *testing.T) {
	// 2 heads of width 2, one column: rows q0 q0 k0 k0 v0 v0 q1 q1 k1 k1 v1 v1.
	src := []float32{10, 11, 20, 21, 30, 31, 12, 13, 22, 23, 32, 33}
	got, _ := qkvPerHeadToBlocks([]int64{12, 1}, 2, 2)([][]float32{src})
	want := []float32{10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTransposeAndHalves(t *testing.T) {
	got, _ := transpose([]int64{2, 3})([][]float32{seq(6)})
	if !slices.Equal(got, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("transpose: %v", got)
	}
	// [2 experts, 4 rows, 1 col]: gate is rows 0-1, up rows 2-3 of each expert.
	src := seq(8)
	gate, _ := halfDim2([]int64{2, 4, 1}, 0)([][]float32{src})
	up, _ := halfDim2([]int64{2, 4, 1}, 1)([][]float32{src})
	if !slices.Equal(gate, []float32{0, 1, 4, 5}) || !slices.Equal(up, []float32{2, 3, 6, 7}) {
		t.Fatalf("gate %v up %v", gate, up)
	}
}

func TestLlama3RopeFactors(t *testing.T) {
	// Llama 3.1's published parameters: high frequencies keep factor 1,
	// low ones get the full factor, the band between is interpolated.
	f := llama3RopeFactors(500000, 128, 8, 1, 4, 8192)
	if len(f) != 64 || f[0] != 1 || f[63] != 8 {
		t.Fatalf("factors %v", f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Fatalf("factors not monotonic at %d: %v", i, f)
		}
	}
}

func TestNewAndParams(t *testing.T) {
	h := hp(t, `{"architectures":["LlamaForCausalLM"],"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":8,
		"num_key_value_heads":2,"intermediate_size":128,"max_position_embeddings":256,"rms_norm_eps":1e-6,
		"rope_theta":10000,"vocab_size":100}`)
	m, err := New(h, "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	want := "llama.block_count llama.context_length llama.embedding_length llama.feed_forward_length llama.attention.head_count " +
		"llama.attention.head_count_kv llama.rope.freq_base llama.attention.layer_norm_rms_epsilon general.file_type llama.vocab_size llama.rope.dimension_count"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys\n%s\nwant\n%s", strings.Join(keys, " "), want)
	}
	if kvs[6].Value.Any() != float32(10000) || kvs[10].Value.Any() != uint32(8) {
		t.Fatalf("rope values %#v %#v", kvs[6].Value, kvs[10].Value)
	}

	_, err = New(hp(t, `{"architectures":["NoSuchForCausalLM"]}`), "")
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "LlamaForCausalLM") {
		t.Fatalf("unknown architecture: %v", err)
	}
	if _, err := New(hp(t, `{"num_hidden_layers":1}`), ""); err == nil {
		t.Fatal("config without architectures accepted")
	}
	if _, err := New(hp(t, `{"architectures":["LlamaForCausalLM"],"num_hidden_layers":1.5}`), ""); err == nil {
		t.Fatal("fractional layer count accepted")
	}
}

func TestExpertStacking(t *testing.T) {
	h := hp(t, `{"architectures":["MixtralForCausalLM"],"num_hidden_layers":1,"hidden_size":4,"num_attention_heads":2,
		"num_key_value_heads":2,"num_local_experts":2,"vocab_size":10}`)
	m, err := New(h, "")
	if err != nil {
		t.Fatal(err)
	}
	var outs []Output
	for _, w := range []string{"w1", "w2", "w3"} {
		for x := range 2 {
			name := "model.layers.0.block_sparse_moe.experts." + string(rune('0'+x)) + "." + w + ".weight"
			o, err := m.Modify(Input{Name: name, Source: name, Shape: []int64{3, 4}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, o...)
		}
	}
	if len(outs) != 3 || outs[0].Name != "blk.0.ffn_gate_exps.weight" || outs[1].Name != "blk.0.ffn_down_exps.weight" ||
		!slices.Equal(outs[0].Shape, []int64{2, 3, 4}) {
		t.Fatalf("outputs %+v", outs)
	}
	v, err := outs[0].Build([][]float32{seq(12), seq(12)})
	if err != nil || len(v) != 24 || v[12] != 0 {
		t.Fatalf("stacked %v %v", v, err)
	}
	if err := m.Finish(); err != nil {
		t.Fatal(err)
	}
	// An incomplete set is reported.
	m2, _ := New(h, "")
	if _, err := m2.Modify(Input{Name: "model.layers.0.block_sparse_moe.experts.0.w1.weight", Shape: []int64{3, 4}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := m2.Finish(); err == nil {
		t.Fatal("incomplete experts not reported")
	}
}

// TestAutoConfig checks the keys transformers' config classes derive, as
// the converter's hparams (AutoConfig(...).to_dict()) have them.
func TestAutoConfig(t *testing.T) {
	const base = `"num_hidden_layers":1,"hidden_size":64,"num_attention_heads":8,"intermediate_size":128,` +
		`"max_position_embeddings":256,"rms_norm_eps":1e-6,"vocab_size":100`
	for _, tc := range []struct {
		name, config string
		want         map[string]any // key → value; nil: key absent
	}{
		{"mistral without head_dim", `"architectures":["MistralForCausalLM"],"model_type":"mistral","num_key_value_heads":2`,
			map[string]any{"llama.attention.key_length": uint32(8), "llama.attention.value_length": uint32(8), "llama.attention.head_count_kv": uint32(2)}},
		{"llama without head_dim or kv heads", `"architectures":["LlamaForCausalLM"],"model_type":"llama","head_dim":null`,
			map[string]any{"llama.attention.key_length": uint32(8), "llama.attention.head_count_kv": uint32(8)}},
		{"llama with head_dim", `"architectures":["LlamaForCausalLM"],"model_type":"llama","head_dim":16`,
			map[string]any{"llama.attention.key_length": uint32(16)}},
		{"mixtral keeps head_dim unset", `"architectures":["MixtralForCausalLM"],"model_type":"mixtral"`,
			map[string]any{"llama.attention.key_length": nil, "llama.attention.head_count_kv": uint32(8)}},
		{"qwen2 without kv heads: the field default", `"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2"`,
			map[string]any{"qwen2.attention.key_length": nil, "qwen2.attention.head_count_kv": uint32(32)}},
		{"qwen2 with null kv heads: derived", `"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","num_key_value_heads":null`,
			map[string]any{"qwen2.attention.head_count_kv": uint32(8)}},
		{"llama without rope_theta", `"architectures":["LlamaForCausalLM"],"model_type":"llama"`,
			map[string]any{"llama.rope.freq_base": float32(10000)}},
		{"llama rope_theta in rope_parameters", `"architectures":["LlamaForCausalLM"],"model_type":"llama","rope_parameters":{"rope_theta":500000.0,"rope_type":"default"}`,
			map[string]any{"llama.rope.freq_base": float32(500000)}},
		{"mixtral without rope_theta", `"architectures":["MixtralForCausalLM"],"model_type":"mixtral"`,
			map[string]any{"llama.rope.freq_base": float32(1e6), "llama.expert_count": uint32(8), "llama.expert_used_count": uint32(2)}},
		{"gemma3 without rope bases", `"architectures":["Gemma3ForCausalLM"],"model_type":"gemma3_text","sliding_window":512`,
			map[string]any{"gemma3.rope.freq_base": float32(1e6), "gemma3.rope.freq_base_swa": float32(10000), "gemma3.attention.head_count_kv": uint32(4)}},
		{"gpt2 gets no rope base", `"architectures":["GPT2LMHeadModel"],"model_type":"gpt2","n_ctx":64,"n_embd":8,"n_head":2,"n_layer":1`,
			map[string]any{"gpt2.rope.freq_base": nil, "gpt2.attention.layer_norm_epsilon": float32(1e-5)}},
		{"no model_type: config.json as it is", `"architectures":["LlamaForCausalLM"]`,
			map[string]any{"llama.attention.key_length": nil, "llama.attention.head_count_kv": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hp(t, "{"+base+","+tc.config+"}")
			m, err := New(h, "")
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
			for k, w := range tc.want {
				g, ok := got[k]
				if w == nil && ok {
					t.Errorf("%s = %v, want absent", k, g)
				} else if w != nil && g != w {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
				}
			}
			if _, ok := h["head_dim"].(json.Number); ok && strings.Contains(tc.config, `"head_dim":null`) {
				t.Error("New changed the caller's hparams")
			}
		})
	}
}
