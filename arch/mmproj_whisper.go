package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Qwen2-Audio's projector (WhisperEncoderModel, conversion/ultravox.py): a
// Whisper encoder, its two input convolutions, and a linear projector.
// Voxtral's (VoxtralWhisperEncoderModel) is the same with its own
// projector type and stack factor written over.
var qwen2Audio = &mmFamily{
	audio:    true,
	noVision: true,
	check: func(m *mmproj, _ string) error {
		if !m.a.Has("hidden_size") && !m.a.Has("intermediate_size") {
			m.a["hidden_size"] = m.a["d_model"]
			m.a["intermediate_size"] = m.a["encoder_ffn_dim"]
			m.a["num_attention_heads"] = m.a["encoder_attention_heads"]
		}
		return nil
	},
	filter: func(name string) (string, bool) {
		if strings.HasPrefix(name, "multi_modal_projector") {
			name = "audio." + name // apart from a vision projector's names
		}
		return name, true
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("qwen2a"))
		if err := k.u32("audio.num_mel_bins", m.a["num_mel_bins"]); err != nil {
			return err
		}
		return k.f32("audio.attention.layer_norm_epsilon", m.a.get("layer_norm_eps", 1e-5))
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		if strings.Contains(out.HFName, ".conv") && strings.Contains(out.HFName, ".weight") {
			return gguf.F16, true
		}
		return 0, false
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !strings.Contains(in.Name, "conv1.bias") && !strings.Contains(in.Name, "conv2.bias") {
			return nil, false, nil
		}
		// unsqueeze(-1): the same values as [n, 1].
		outs, err := m.mapped(in, in.Name, bid, func(srcs [][]float32) ([]float32, error) { return srcs[0], nil })
		if err == nil {
			outs[0].Shape = append(outs[0].Shape, 1)
		}
		return outs, true, err
	},
}

var voxtralAudio = func() *mmFamily {
	f := *qwen2Audio
	f.params = func(m *mmproj, k *kv) error {
		if err := qwen2Audio.params(m, k); err != nil {
			return err
		}
		k.l.Set(KeyProjectorType, gguf.String("voxtral"))
		k.l.Set("clip.audio.projector.stack_factor", gguf.Uint32(4)) // intermediate_size / hidden_size
		return nil
	}
	return &f
}()

func init() {
	registerMM(qwen2Audio, "Qwen2AudioForConditionalGeneration")
	registerMM(voxtralAudio, "VoxtralForConditionalGeneration")
}
