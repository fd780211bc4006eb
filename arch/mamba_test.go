package arch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// ssmDir is a model folder with only a tokenizer.json (the state-space
// constructors pick their tokenizer routine from the files present).
func ssmDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func parseHParams(t *testing.T, s string) HParams {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var h HParams
	if err := dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestMambaConfigs: the converter's defaults and padding, the ssm_cfg
// fallback for a mamba_ssm config.json without architectures, and the
// configurations it refuses.
func TestMambaConfigs(t *testing.T) {
	tests := []struct {
		name, config string
		vocab        int64
		kv           map[string]gguf.Value
		err          string
	}{
		{"mamba_ssm defaults", `{"d_model": 32, "n_layer": 2, "vocab_size": 50277, "ssm_cfg": {}, "pad_vocab_size_multiple": 8}`, 50280,
			map[string]gguf.Value{"mamba.ssm.state_size": gguf.Uint32(16), "mamba.ssm.time_step_rank": gguf.Uint32(2),
				"mamba.ssm.inner_size": gguf.Uint32(64), "mamba.ssm.conv_kernel": gguf.Uint32(4), "mamba.ssm.dt_b_c_rms": gguf.Bool(false)}, ""},
		{"falcon-mamba", `{"architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "vocab_size": 9}`, 16,
			map[string]gguf.Value{"mamba.ssm.dt_b_c_rms": gguf.Bool(true)}, ""},
		{"mamba2 default padding", `{"architectures": ["Mamba2ForCausalLM"], "hidden_size": 16, "head_dim": 8, "n_groups": 2, "num_hidden_layers": 1, "vocab_size": 17}`, 32,
			map[string]gguf.Value{"mamba2.ssm.time_step_rank": gguf.Uint32(4), "mamba2.ssm.group_count": gguf.Uint32(2), "mamba2.ssm.state_size": gguf.Uint32(128)}, ""},
		{"expansion not 2", `{"architectures": ["MambaForCausalLM"], "hidden_size": 8, "intermediate_size": 24, "num_hidden_layers": 1, "vocab_size": 8}`, 8, nil,
			"is not 2 x d_model"},
		{"mamba2 head_dim not dividing d_inner", `{"architectures": ["Mamba2ForCausalLM"], "hidden_size": 16, "head_dim": 5, "num_hidden_layers": 1, "vocab_size": 16}`, 16, nil,
			"a multiple of head_dim 5"},
		{"ssm_cfg layer not a string", `{"d_model": 8, "n_layer": 1, "vocab_size": 8, "ssm_cfg": {"layer": 2}}`, 0, nil, "ssm_cfg.layer"},
		{"bad pad multiple", `{"architectures": ["MambaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 8, "pad_vocab_size_multiple": 0}`, 0, nil,
			"pad_vocab_size_multiple"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, got, err := configParams(t, tc.config, ssmDir(t))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := m.(VocabSizer).VocabSize(); n != tc.vocab {
				t.Errorf("vocabulary size %d, want %d", n, tc.vocab)
			}
			for k, v := range tc.kv {
				if g, ok := got[k]; !ok || !g.Equal(v) {
					t.Errorf("%s = %v, want %v", k, g, v)
				}
			}
		})
	}
}

// TestMambaOutputEqualToEmbedding: the output is marked to be left out
// when it equals the token embedding seen before it.
func TestMambaOutputEqualToEmbedding(t *testing.T) {
	m, err := New(parseHParams(t, `{"d_model": 8, "n_layer": 1, "vocab_size": 8, "ssm_cfg": {}}`), ssmDir(t))
	if err != nil {
		t.Fatal(err)
	}
	emb := Input{Name: "backbone.embedding.weight", Source: "backbone.embedding.weight", Shape: []int64{8, 8}}
	if _, err := m.Modify(emb, -1); err != nil {
		t.Fatal(err)
	}
	out, err := m.Modify(Input{Name: "lm_head.weight", Source: "lm_head.weight", Shape: []int64{8, 8}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].DropIfEqual == nil || out[0].DropIfEqual.Source != emb.Source {
		t.Fatalf("outputs %+v: want output.weight dropped if equal to %s", out, emb.Source)
	}
}

// TestNemotronHRefused: a dense Nemotron-H (MLP blocks, or no expert
// blocks — also NemotronHConfig's default layers), an MTP head and latent
// experts are refused, saying why.
func TestNemotronHRefused(t *testing.T) {
	for _, c := range []struct{ name, config, want string }{
		{"dense pattern", `"hybrid_override_pattern": "M-M*-"`, "num_experts_per_tok"},
		{"dense list", `"layers_block_type": ["mamba", "mlp", "attention"]`, "num_experts_per_tok"},
		{"default layers", ``, "num_experts_per_tok"},
		{"no experts", `"hybrid_override_pattern": "MM*"`, "num_experts_per_tok"},
		{"mtp", `"hybrid_override_pattern": "ME*", "num_nextn_predict_layers": 1`, "MTP"},
		{"latent", `"hybrid_override_pattern": "ME*", "moe_latent_size": 4`, "moe_latent_size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := `{"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h"`
			if c.config != "" {
				cfg += ", " + c.config
			}
			_, err := New(parseHParams(t, cfg+"}"), t.TempDir())
			var u *UnsupportedError
			if !errors.As(err, &u) || !strings.Contains(u.Reason, c.want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
