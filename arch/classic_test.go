package arch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestJaisRefused: Jais 1 is refused with the converter's failure as the
// reason.
func TestJaisRefused(t *testing.T) {
	var u *UnsupportedError
	_, err := New(hp(t, `{"architectures":["JAISLMHeadModel"],"n_layer":2}`), "")
	if !errors.As(err, &u) || u.Reason != jaisMetaItem {
		t.Fatalf("New: %v, want the Jais refusal", err)
	}
}

// TestBaichuanRefused: both Baichuan class names are refused with the
// converter's failure as the reason.
func TestBaichuanRefused(t *testing.T) {
	for _, name := range []string{"BaichuanForCausalLM", "BaiChuanForCausalLM"} {
		t.Run(name, func(t *testing.T) {
			var u *UnsupportedError
			_, err := New(hp(t, `{"architectures":["`+name+`"],"num_hidden_layers":2}`), "")
			if !errors.As(err, &u) || u.Reason != baichuanRecursion {
				t.Fatalf("New: %v, want the Baichuan refusal", err)
			}
		})
	}
}

// TestClassicConfigErrors: configs the converter fails on are errors
// (never a panic or a file), per class and stage.
func TestClassicConfigErrors(t *testing.T) {
	minicpm := `"architectures":["MiniCPMForCausalLM"],"num_hidden_layers":2,"hidden_size":8,` +
		`"num_attention_heads":2,"scale_emb":12,"scale_depth":1.4,"dim_model_base":256`
	minicpm3 := `"architectures":["MiniCPM3ForCausalLM"],"model_type":"minicpm3","num_hidden_layers":2,` +
		`"hidden_size":8,"num_attention_heads":2,"qk_rope_head_dim":4`
	tests := []struct {
		name, cfg string
		stage     string // "params" or "extra"
	}{
		{"minicpm without scale_emb", `"architectures":["MiniCPMForCausalLM"],"num_hidden_layers":2,"hidden_size":8,"scale_depth":1,"dim_model_base":8`, "params"},
		{"minicpm dim_model_base 0", minicpm + `,"dim_model_base":0`, "params"},
		{"minicpm long factors only", minicpm + `,"rope_scaling":{"long_factor":[1,1]}`, "extra"},
		{"minicpm factors of the wrong length", minicpm + `,"rope_scaling":{"long_factor":[1],"short_factor":[1]}`, "extra"},
		{"minicpm3 factors of the wrong length", minicpm3 + `,"rope_scaling":{"long_factor":[1,1,1],"short_factor":[1,1,1]}`, "extra"},
		{"orion without a context length", `"architectures":["OrionForCausalLM"],"num_hidden_layers":2,"hidden_size":8,"num_attention_heads":2,"rms_norm_eps":1e-5,"intermediate_size":8`, "params"},
		{"plm without kv_lora_rank", `"architectures":["PLMForCausalLM"],"num_hidden_layers":2,"vocab_size":8,"qk_nope_head_dim":2,"qk_rope_head_dim":2,"v_head_dim":2`, "params"},
		{"nemotron without a norm epsilon", `"architectures":["NemotronForCausalLM"],"model_type":"other","num_hidden_layers":2,"hidden_size":8,"num_attention_heads":2,"vocab_size":8,"partial_rotary_factor":0.5`, "params"},
		{"xverse without heads", `"architectures":["XverseForCausalLM"],"num_hidden_layers":2,"hidden_size":8`, "params"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, `{`+tc.cfg+`}`), "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.stage == "params" {
				_, err = m.Params(gguf.FileTypeF16)
			} else {
				_, err = m.Extra()
			}
			if err == nil {
				t.Errorf("%s: no error", tc.stage)
			}
		})
	}
}

// TestXverseGQAPermutation: XverseModel's _reverse_hf_permute divides the
// head count by the KV head count where LlamaModel.permute replaces it, so
// a GQA K projection is permuted in head_count // head_count_kv groups.
func TestXverseGQAPermutation(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["XverseForCausalLM"],"num_hidden_layers":1,"hidden_size":32,`+
		`"num_attention_heads":8,"num_key_value_heads":2}`), "")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Name: "model.layers.0.self_attn.k_proj.weight", Shape: []int64{8, 32}}
	outs, err := m.Modify(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 8 heads // 2 = 4 groups of 2 rows, one row a half: rows unchanged
	// (LlamaModel.permute's 2 groups of 4 rows would give 0 2 1 3 4 6 5 7).
	want := []int64{0, 1, 2, 3, 4, 5, 6, 7}
	if got := outs[0].RowOrder; !slices.Equal(got, want) {
		t.Errorf("row order %v, want %v", got, want)
	}
}

// TestNemotronRopeScaling: a factor makes linear scaling; none writes the
// type none; Nemotron adds pad 0 and unk 1 to the vocabulary.
func TestNemotronRopeScaling(t *testing.T) {
	base := `"architectures":["NemotronForCausalLM"],"model_type":"nemotron","num_hidden_layers":1,"hidden_size":8,` +
		`"num_attention_heads":2,"vocab_size":8,"norm_eps":1e-5`
	for _, tc := range []struct {
		extra, typ string
	}{{``, "none"}, {`,"rope_scaling":{"rope_type":"linear","factor":2.0}`, "linear"}} {
		m, err := New(hp(t, `{`+base+tc.extra+`}`), "")
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
		if got["nemotron.rope.scaling.type"] != tc.typ || got["nemotron.rope.dimension_count"] != uint32(2) {
			t.Errorf("%q: scaling %v, rope dims %v", tc.extra, got["nemotron.rope.scaling.type"], got["nemotron.rope.dimension_count"])
		}
	}
}

// TestExaoneRefused: EXAONE 3 / 3.5 is refused with the converter's
// failure as the reason.
func TestExaoneRefused(t *testing.T) {
	var u *UnsupportedError
	_, err := New(hp(t, `{"architectures":["ExaoneForCausalLM"],"model_type":"exaone","num_layers":2}`), "")
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "activation_function") {
		t.Fatalf("New: %v, want the EXAONE refusal", err)
	}
}

// TestQwen1Refused: Qwen (1) is refused for its remote-code tiktoken
// vocabulary.
func TestQwen1Refused(t *testing.T) {
	var u *UnsupportedError
	_, err := New(hp(t, `{"architectures":["QWenLMHeadModel"],"num_hidden_layers":2}`), "")
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "qwen.tiktoken") {
		t.Fatalf("New: %v, want the Qwen (1) refusal", err)
	}
}
