package arch

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

// TestRWKVConfigs: the RWKV classes' derived hyperparameters (RWKV-7's
// calc_lora_rank for null ranks, RWKV-6's 3.5 × hidden feed-forward and
// extra dims, ARWKV-7's fixed ranks) and the configurations llama.cpp's
// converter fails on.
func TestRWKVConfigs(t *testing.T) {
	rwkv7 := func(hidden int) string {
		return `{"architectures": ["Rwkv7ForCausalLM"], "hidden_size": ` + strconv.Itoa(hidden) + `, "head_size": 64, "layer_norm_epsilon": 1e-5, ` +
			`"num_hidden_layers": 1, "intermediate_size": null, "lora_rank_decay": null, "lora_rank_iclr": null, ` +
			`"lora_rank_value_residual_mix": null, "lora_rank_gate": null}`
	}
	arwkv7 := func(extra string) string {
		return `{"architectures": ["RwkvHybridForCausalLM"], "hidden_size": 3584, "head_size": 64, "rms_norm_eps": 1e-6, ` +
			`"intermediate_size": 18944, "num_hidden_layers": 1, ` + extra + `}`
	}
	ranks := func(arch string, d, i, v, g uint32) map[string]gguf.Value {
		return map[string]gguf.Value{arch + ".attention.decay_lora_rank": gguf.Uint32(d), arch + ".attention.iclr_lora_rank": gguf.Uint32(i),
			arch + ".attention.value_residual_mix_lora_rank": gguf.Uint32(v), arch + ".attention.gate_lora_rank": gguf.Uint32(g)}
	}
	tests := []struct {
		name, config string
		kv           map[string]gguf.Value
		err          string
	}{
		// RWKV-7 0.1B / 1.5B / 7B's ranks.
		{"rwkv7 768", rwkv7(768), ranks("rwkv7", 64, 64, 32, 128), ""},
		{"rwkv7 2048", rwkv7(2048), ranks("rwkv7", 96, 96, 64, 256), ""},
		{"rwkv7 4096", rwkv7(4096), ranks("rwkv7", 128, 128, 96, 480), ""},
		{"rwkv7 feed-forward 4 x hidden", rwkv7(64), map[string]gguf.Value{"rwkv7.feed_forward_length": gguf.Uint32(256)}, ""},
		{"rwkv7 fla keys", `{"architectures": ["RWKV7ForCausalLM"], "hidden_size": 64, "head_dim": 16, "norm_eps": 1e-5, "num_hidden_layers": 1, ` +
			`"intermediate_size": 224, "decay_low_rank_dim": 16, "a_low_rank_dim": 8, "v_low_rank_dim": null, "gate_low_rank_dim": 32}`,
			ranks("rwkv7", 16, 8, 32, 32), ""},
		{"rwkv7 without head size", `{"architectures": ["Rwkv7ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": null}`, nil,
			"head_dim"},
		{"rwkv7 without intermediate_size", `{"architectures": ["Rwkv7ForCausalLM"], "hidden_size": 64, "head_size": 64, ` +
			`"layer_norm_epsilon": 1e-5, "num_hidden_layers": 1}`, nil, "intermediate_size"},
		{"rwkv6 feed-forward 3.5 x hidden", `{"architectures": ["Rwkv6ForCausalLM"], "hidden_size": 2048, "head_size": 64, "layer_norm_epsilon": 1e-5, ` +
			`"rescale_every": 6, "num_hidden_layers": 1, "intermediate_size": null}`,
			map[string]gguf.Value{"rwkv6.feed_forward_length": gguf.Uint32(7168), "rwkv6.time_mix_extra_dim": gguf.Uint32(32),
				"rwkv6.time_decay_extra_dim": gguf.Uint32(64), "rwkv6.rescale_every_n_layers": gguf.Uint32(6)}, ""},
		{"rwkv6 4096", `{"architectures": ["Rwkv6ForCausalLM"], "hidden_size": 4096, "head_size": 64, "layer_norm_epsilon": 1e-5, ` +
			`"rescale_every": 0, "num_hidden_layers": 1, "intermediate_size": 14336}`,
			map[string]gguf.Value{"rwkv6.time_mix_extra_dim": gguf.Uint32(64), "rwkv6.time_decay_extra_dim": gguf.Uint32(128)}, ""},
		{"rwkv6 without rescale_every", `{"architectures": ["Rwkv6ForCausalLM"], "hidden_size": 64, "head_size": 16, "layer_norm_epsilon": 1e-5, ` +
			`"num_hidden_layers": 1, "intermediate_size": null}`, nil, "rescale_every"},
		{"qrwkv6 heads", `{"architectures": ["RWKV6Qwen2ForCausalLM"], "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8, ` +
			`"rms_norm_eps": 1e-6, "intermediate_size": 27648, "num_hidden_layers": 1}`,
			map[string]gguf.Value{"rwkv6qwen2.wkv.head_size": gguf.Uint32(128), "rwkv6qwen2.time_mix_extra_dim": gguf.Uint32(64),
				"rwkv6qwen2.time_decay_extra_dim": gguf.Uint32(128), "rwkv6qwen2.attention.head_count_kv": gguf.Uint32(8)}, ""},
		{"qrwkv6 null LoRA rank", `{"architectures": ["RWKV6Qwen2ForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, ` +
			`"rms_norm_eps": 1e-6, "intermediate_size": 128, "num_hidden_layers": 1, "lora_rank_tokenshift": null}`, nil, "time_mix_extra_dim"},
		{"qrwkv6 no heads", `{"architectures": ["RWKV6Qwen2ForCausalLM"], "hidden_size": 64, "num_attention_heads": 0, "num_key_value_heads": 2, ` +
			`"rms_norm_eps": 1e-6, "intermediate_size": 128, "num_hidden_layers": 1}`, nil, "num_attention_heads"},
		// ARWKV-7's fixed ranks, whatever the hidden size.
		{"arwkv7 gated", arwkv7(`"wkv_has_gate": true, "wkv_version": 7`), ranks("arwkv7", 64, 64, 32, 128), ""},
		{"arwkv7 without gate", arwkv7(`"wkv_has_gate": false, "wkv_version": 7.0`), ranks("arwkv7", 64, 64, 32, 0), ""},
		{"arwkv7 without wkv_has_gate", arwkv7(`"wkv_version": 7`), nil, "wkv_has_gate"},
		{"arwkv7 RWKV-6 time mix", arwkv7(`"wkv_has_gate": false, "wkv_version": 6`), nil, "wkv_version"},
		{"arwkv7 version true", arwkv7(`"wkv_has_gate": false, "wkv_version": true`), nil, "wkv_version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := configParams(t, tc.config, t.TempDir())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.kv {
				if g, ok := got[k]; !ok || !g.Equal(v) {
					t.Errorf("%s = %v, want %v", k, g, v)
				}
			}
		})
	}
}

// configParams builds the plugin of a config.json in dir and returns it and its
// metadata (at F32) by key.
func configParams(t *testing.T, config, dir string) (Model, map[string]gguf.Value, error) {
	t.Helper()
	m, err := New(parseHParams(t, config), dir)
	if err != nil {
		return nil, nil, err
	}
	kvs, err := m.Params(gguf.FileTypeAllF32)
	got := map[string]gguf.Value{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value
	}
	return m, got, err
}

// TestRWKV6RescaleF16: the output of block 2 (rescale_every 1) is divided
// by 4 in the source's F16, as the converter divides it (an F16 run
// against llama.cpp's conversion at f32 is byte-identical only so), and in
// float32 for a BF16 source.
func TestRWKV6RescaleF16(t *testing.T) {
	m, _, err := configParams(t, `{"architectures": ["Rwkv6ForCausalLM"], "hidden_size": 4, "head_size": 4, `+
		`"layer_norm_epsilon": 1e-5, "rescale_every": 1, "num_hidden_layers": 3, "intermediate_size": 8}`, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v := float32(0x1.004p-13) // 2^-15 after the division: an F16 subnormal, whose last bit is lost
	for _, tc := range []struct {
		dt   readers.DType
		want float32
	}{{readers.F16, 0x1p-15}, {readers.BF16, 0x1.004p-15}} {
		in := Input{Name: "rwkv.blocks.2.attention.output.weight", Source: "rwkv.blocks.2.attention.output.weight", Shape: []int64{1, 1}, DType: tc.dt}
		outs, err := m.Modify(in, 2)
		if err != nil || len(outs) != 1 || outs[0].Build == nil {
			t.Fatalf("%v: outputs %+v, err %v", tc.dt, outs, err)
		}
		got, err := outs[0].Build([][]float32{{v}})
		if err != nil || got[0] != tc.want {
			t.Errorf("%v: %x (err %v), want %x", tc.dt, got, err, tc.want)
		}
	}
}
