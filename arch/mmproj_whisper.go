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

// whisperAs is Qwen2-Audio's family with its projector type, and the
// stack factor stack gives, written over (the converter's subclasses of
// WhisperEncoderModel).
func whisperAs(projector string, stack func(m *mmproj) (any, error)) *mmFamily {
	f := *qwen2Audio
	f.params = func(m *mmproj, k *kv) error {
		if err := qwen2Audio.params(m, k); err != nil {
			return err
		}
		k.l.Set(KeyProjectorType, gguf.String(projector))
		n, err := stack(m)
		if err != nil {
			return err
		}
		return k.u32("audio.projector.stack_factor", n)
	}
	return &f
}

// Voxtral's (VoxtralWhisperEncoderModel): a stack factor of 4, its
// intermediate_size over hidden_size.
var voxtralAudio = whisperAs("voxtral", func(*mmproj) (any, error) { return 4, nil })

// Ultravox's (UltravoxWhisperEncoderModel): the config's stack_factor, and
// its stacking projector (ln_pre, linear_1, ln_mid, linear_2) through the
// name table.
var ultravoxAudio = whisperAs("ultravox", func(m *mmproj) (any, error) {
	n, ok := m.g["stack_factor"]
	if !ok {
		return nil, &ConfigError{Key: "stack_factor", Msg: "is required for Ultravox's projector"}
	}
	return n, nil
})

func init() {
	registerMM(qwen2Audio, "Qwen2AudioForConditionalGeneration")
	registerMM(voxtralAudio, "VoxtralForConditionalGeneration")
	registerMM(ultravoxAudio, "UltravoxModel")
}
