package arch

import (
	"errors"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func TestMistral3Config(t *testing.T) {
	const base = `"architectures":["Ministral3ForCausalLM"],"num_hidden_layers":1,"hidden_size":8,` +
		`"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"vocab_size":16`
	if m, err := New(hp(t, `{`+base+`,"model_type":"mistral4"}`), ""); err != nil {
		t.Errorf("mistral4: %v", err)
	} else if _, ok := m.(*mistral4Model); !ok {
		t.Errorf("mistral4: %T, want Mistral4Model", m)
	}
	m, err := New(hp(t, `{`+base+`,"model_type":"ministral3","rope_parameters":{"rope_type":"default","rope_theta":10000}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "yarn") {
		t.Errorf("ministral3 without yarn: error %v", err)
	}
	m, err = New(hp(t, `{`+base+`,"model_type":"ministral3","rope_parameters":{"rope_type":"yarn","factor":4,`+
		`"original_max_position_embeddings":16,"rope_theta":10000,"mscale_all_dim":1,"llama_4_scaling_beta":0.1}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	n := len(kvs)
	if n < 2 || kvs[n-2].Key != "mistral3.rope.scaling.yarn_log_multiplier" || kvs[n-1].Key != "mistral3.attention.temperature_scale" {
		t.Errorf("last keys %v, %v", kvs[n-2].Key, kvs[n-1].Key)
	}
}
