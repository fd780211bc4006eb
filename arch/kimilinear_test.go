package arch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func TestKimiLinearConfig(t *testing.T) {
	const base = `"architectures":["KimiLinearForCausalLM"],"model_type":"kimi_linear","num_hidden_layers":2,` +
		`"hidden_size":8,"num_attention_heads":2,"vocab_size":16,"kv_lora_rank":4,"qk_rope_head_dim":2,` +
		`"qk_nope_head_dim":2,"v_head_dim":2,"first_k_dense_replace":1`
	tests := []struct {
		name, config string
		want         error
	}{
		{"no linear_attn_config", `{` + base + `}`, ErrConfig},
		{"full_attn_layers not a list", `{` + base + `,"linear_attn_config":{"full_attn_layers":2}}`, ErrConfig},
		{"layer number not an integer", `{` + base + `,"linear_attn_config":{"full_attn_layers":["2"]}}`, ErrConfig},
		{"good", `{` + base + `,"linear_attn_config":{"full_attn_layers":[2],"head_dim":4,"short_conv_kernel_size":4}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(hp(t, tt.config), "")
			if err != nil {
				t.Fatal(err)
			}
			kvs, err := m.Params(gguf.FileTypeF16)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				return
			}
			// KimiLinearConfig's attribute_map: the field defaults under
			// the names to_dict writes (num_shared_experts 1).
			want := map[string]string{
				"kimi-linear.attention.head_count_kv": "[0 1]",
				"kimi-linear.expert_shared_count":     "1",
				"kimi-linear.attention.key_length":    "6",
				"kimi-linear.attention.value_length":  "2",
			}
			for _, kv := range kvs {
				if w, ok := want[kv.Key]; ok {
					if got := fmt.Sprint(kv.Value.Any()); got != w {
						t.Errorf("%s = %s, want %s", kv.Key, got, w)
					}
					delete(want, kv.Key)
				}
			}
			if len(want) > 0 {
				t.Errorf("keys missing: %v", want)
			}
		})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tiktoken.model"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var unsupported *UnsupportedError
	if _, err := New(hp(t, `{`+base+`}`), dir); !errors.As(err, &unsupported) || unsupported.Reason != kimiTiktoken {
		t.Errorf("tiktoken.model without tokenizer.json: error %v, want the Kimi tiktoken refusal", err)
	}
}
