package verify

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestBrokenSSM breaks the F32 conversions of the state-space, RWKV and
// hybrid fixtures (mamba, mamba2, rwkv6, rwkv6qwen2, rwkv7, arwkv7, lfm2, qwen35,
// granitehybrid, jamba, falconh1, kimilinear,
// nemotronhmoe) the way a converter could and shows
// verify fails each against
// the correct file, with a problem naming what differs.
func TestBrokenSSM(t *testing.T) {
	tests := []struct {
		fixture, name string
		break_        func(t *testing.T, m *model)
		check         Check
		subject, msg  string
	}{
		{"mamba", "SSM tensors of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.0.ssm_x.weight"), m.tensor(t, "blk.1.ssm_x.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.0.ssm_x.weight", ""},
		{"mamba2", "A and D swapped", func(t *testing.T, m *model) {
			a, d := m.tensor(t, "blk.1.ssm_a"), m.tensor(t, "blk.1.ssm_d")
			a.data, d.data = d.data, a.data
		}, CheckReference, "blk.1.ssm_a", ""},
		{"mamba", "conv kernel reversed", reverseKernel("blk.0.ssm_conv1d.weight"), CheckReference, "blk.0.ssm_conv1d.weight", ""},
		{"mamba", "wrong conv kernel size", func(t *testing.T, m *model) {
			m.setKV("mamba.ssm.conv_kernel", gguf.Uint32(3))
		}, CheckTensors, "blk.0.ssm_conv1d.weight", "mamba expects [3 16]"},
		{"rwkv7", "time-mix key and value swapped", func(t *testing.T, m *model) {
			k, v := m.tensor(t, "blk.1.time_mix_key.weight"), m.tensor(t, "blk.1.time_mix_value.weight")
			k.data, v.data = v.data, k.data
		}, CheckReference, "blk.1.time_mix_key.weight", ""},
		{"rwkv6", "decay of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.0.time_mix_decay.weight"), m.tensor(t, "blk.1.time_mix_decay.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.0.time_mix_decay.weight", ""},
		{"rwkv6", "wrong rescaling", func(t *testing.T, m *model) {
			m.setKV("rwkv6.rescale_every_n_layers", gguf.Uint32(2))
		}, CheckReference, "rwkv6.rescale_every_n_layers", "uint32(2), reference uint32(1)"},
		{"rwkv6qwen2", "wrong key/value head count", func(t *testing.T, m *model) {
			m.setKV("rwkv6qwen2.attention.head_count_kv", gguf.Uint32(1))
		}, CheckTensors, "blk.0.time_mix_key.weight", "rwkv6qwen2 expects [32 8]"},
		{"rwkv7", "wrong head size", func(t *testing.T, m *model) {
			m.setKV("rwkv7.wkv.head_size", gguf.Uint32(32))
		}, CheckReference, "rwkv7.wkv.head_size", "uint32(32), reference uint32(16)"},
		{"arwkv7", "token-shift lerps of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.0.time_mix_lerp_fused.weight"), m.tensor(t, "blk.1.time_mix_lerp_fused.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.0.time_mix_lerp_fused.weight", ""},
		{"arwkv7", "wrong decay LoRA rank", func(t *testing.T, m *model) {
			m.setKV("arwkv7.attention.decay_lora_rank", gguf.Uint32(32))
		}, CheckTensors, "blk.0.time_mix_w1.weight", "arwkv7 expects [64 32]"},
		{"mamba2", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("mamba2.ssm.state_size", gguf.Uint32(16))
		}, CheckReference, "mamba2.ssm.state_size", "uint32(16), reference uint32(8)"},
		{"lfm2", "short-convolution kernel reversed", reverseKernel("blk.0.shortconv.conv.weight"), CheckReference, "blk.0.shortconv.conv.weight", ""},
		{"qwen35", "delta-net conv kernel reversed", reverseKernel("blk.1.ssm_conv1d.weight"), CheckReference, "blk.1.ssm_conv1d.weight", ""},
		{"qwen35", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("qwen35.ssm.state_size", gguf.Uint32(4))
			m.setKV("qwen35.ssm.inner_size", gguf.Uint32(8))
		}, CheckTensors, "blk.0.ssm_conv1d.weight", "qwen35 expects [4 24]"},
		{"granitehybrid", "A and D swapped", func(t *testing.T, m *model) {
			a, d := m.tensor(t, "blk.1.ssm_a"), m.tensor(t, "blk.1.ssm_d")
			a.data, d.data = d.data, a.data
		}, CheckReference, "blk.1.ssm_a", ""},
		{"granitehybrid", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("granitehybrid.ssm.state_size", gguf.Uint32(4))
		}, CheckTensors, "blk.0.ssm_in.weight", "granitehybrid expects [8 44]"},
		{"jamba", "B and C norms swapped", func(t *testing.T, m *model) {
			b, c := m.tensor(t, "blk.0.ssm_b_norm.weight"), m.tensor(t, "blk.0.ssm_c_norm.weight")
			b.data, c.data = c.data, b.data
		}, CheckReference, "blk.0.ssm_b_norm.weight", ""},
		{"jamba", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("jamba.ssm.state_size", gguf.Uint32(8))
		}, CheckTensors, "blk.0.ssm_x.weight", "jamba expects [32 18]"},
		{"falconh1", "Mamba-2 output projections of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.0.ssm_out.weight"), m.tensor(t, "blk.1.ssm_out.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.0.ssm_out.weight", ""},
		{"falconh1", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("falcon-h1.ssm.state_size", gguf.Uint32(4))
		}, CheckTensors, "blk.0.ssm_in.weight", "falcon-h1 expects [8 44]"},
		{"nemotronhmoe", "wrong ssm_d_state", func(t *testing.T, m *model) {
			m.setKV("nemotron_h_moe.ssm.state_size", gguf.Uint32(4))
		}, CheckTensors, "blk.0.ssm_in.weight", "nemotron_h_moe expects [8 148]"},
		{"nemotronhmoe", "routers of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.1.ffn_gate_inp.weight"), m.tensor(t, "blk.4.ffn_gate_inp.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.1.ffn_gate_inp.weight", ""},
		{"nemotronhmoe", "selection bias dropped to zero", func(t *testing.T, m *model) {
			clear(m.tensor(t, "blk.4.exp_probs_b.bias").data)
		}, CheckReference, "blk.4.exp_probs_b.bias", ""},
		{"lfm2", "wrong l_cache", func(t *testing.T, m *model) {
			m.setKV("lfm2.shortconv.l_cache", gguf.Uint32(4))
		}, CheckTensors, "blk.0.shortconv.conv.weight", "lfm2 expects [4 8]"},
		{"kimilinear", "KDA q and k convolutions of two blocks swapped", func(t *testing.T, m *model) {
			a, b := m.tensor(t, "blk.0.ssm_conv1d_q.weight"), m.tensor(t, "blk.2.ssm_conv1d_k.weight")
			a.data, b.data = b.data, a.data
		}, CheckReference, "blk.0.ssm_conv1d_q.weight", ""},
		{"kimilinear", "wrong conv kernel size", func(t *testing.T, m *model) {
			m.setKV("kimi-linear.ssm.conv_kernel", gguf.Uint32(3))
		}, CheckTensors, "blk.0.ssm_conv1d_q.weight", "kimi-linear expects [3 1 8]"},
		{"kimilinear", "wrong KDA head size", func(t *testing.T, m *model) {
			m.setKV("kimi-linear.kda.head_dim", gguf.Uint32(2))
		}, CheckTensors, "blk.0.ssm_f_a.weight", "kimi-linear expects [4 2]"},
	}
	for _, tc := range tests {
		t.Run(tc.fixture+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			path := convertTo(t, assembleFixture(t, tc.fixture), "f32")
			m := loadModel(t, path)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), GGUFReference(open(t, path)), Options{NPredict: 8})
			if rep.OK {
				t.Fatalf("verify passes a broken file (forward %+v)", rep.Forward)
			}
			found := slices.ContainsFunc(rep.Problems, func(p Problem) bool {
				return p.Check == tc.check && (tc.subject == "" || p.Subject == tc.subject) && strings.Contains(p.Msg, tc.msg)
			})
			if !found {
				t.Errorf("no %s problem on %q containing %q; problems: %v", tc.check, tc.subject, tc.msg, rep.Problems)
			}
			msg := fmt.Sprint(rep.Problems)
			if fw := rep.Forward; fw != nil {
				msg = fmt.Sprintf("KL mean %.3g (limit %.3g), top-1 %.3f; %s", fw.KLMean, fw.KLLimit, fw.Top1, msg)
			}
			t.Log(msg)
		})
	}
}

// reverseKernel reverses each channel's taps of a convolution kernel.
func reverseKernel(name string) func(t *testing.T, m *model) {
	return func(t *testing.T, m *model) {
		ts := m.tensor(t, name)
		k := int(ts.shape[0])
		xs := f32s(ts)
		for r := 0; r < len(xs); r += k {
			slices.Reverse(xs[r : r+k])
		}
		setF32s(ts, xs)
	}
}
