package arch

import (
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Qwen2.5-Omni's projector (Qwen25OmniModel, conversion/qwenvl.py): the
// Qwen2.5-VL vision tower and the Qwen2.5-Omni audio encoder (Whisper-like,
// Qwen25AudioModel) in one file, both configs and all tensors under the
// thinker. The audio encoder's sinusoidal position table is a buffer the
// checkpoint does not hold: the converter computes it.
var qwen25Omni = &mmFamily{
	audio:  true,
	towers: thinkerTowers,
	check: func(m *mmproj, dir string) error {
		if err := qwen2VLVision.check(m, dir); err != nil {
			return err
		}
		qwen25AudioCheck(m)
		return nil
	},
	filter: func(name string) (string, bool) {
		if strings.HasPrefix(name, "thinker.") {
			name = strings.ReplaceAll(name, "thinker.", "")
		}
		if !hasAnyPrefix(name, "visual.", "audio_tower.") || strings.Contains(name, "audio_bos_eos_token") {
			return "", false // the text model, and a token pair transformers leaves unused
		}
		return name, true
	},
	params: func(m *mmproj, k *kv) error {
		if err := qwen25AudioParams(m, k); err != nil {
			return err
		}
		return qwen2VLVision.params(m, k)
	},
	force: func(m *mmproj, out *Output, nDims int) (gguf.Type, bool) {
		if t, ok := qwen2VLVision.force(m, out, nDims); ok {
			return t, true
		}
		return qwen2Audio.force(m, out, nDims)
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if strings.Contains(in.Name, "visual.") {
			return qwen2VLVision.modify(m, in, bid)
		}
		return qwen2Audio.modify(m, in, bid)
	},
	extra: audioPositions,
}

// thinkerTowers are an Omni model's towers: thinker_config's vision_config
// and audio_config.
func thinkerTowers(g HParams) (vision, audio map[string]any) {
	t, _ := g["thinker_config"].(map[string]any)
	vision, _ = t["vision_config"].(map[string]any)
	audio, _ = t["audio_config"].(map[string]any)
	return vision, audio
}

// qwen25AudioCheck is Qwen25AudioModel.__init__: the Whisper names stand
// for the widths and heads.
func qwen25AudioCheck(m *mmproj) {
	m.a["hidden_size"] = m.a["d_model"]
	m.a["intermediate_size"] = m.a["encoder_ffn_dim"]
	m.a["num_attention_heads"] = m.a["encoder_attention_heads"]
}

// qwen25AudioParams is Qwen25AudioModel.set_gguf_parameters' own keys.
func qwen25AudioParams(m *mmproj, k *kv) error {
	if err := k.u32("audio.num_mel_bins", m.a["num_mel_bins"]); err != nil {
		return err
	}
	return k.f32("audio.attention.layer_norm_epsilon", m.a.get("layer_norm_eps", 1e-5))
}

// audioPositionLength is the number of positions of the table
// (Qwen25AudioModel.generate_extra_tensors: 1500, Whisper's 30 s).
const audioPositionLength = 1500

// audioPositions is the audio encoder's SinusoidsPositionEmbedding as
// Qwen25AudioModel.generate_extra_tensors computes it in float32: row t is
// sin(t·f_i) then cos(t·f_i) for the frequencies f_i =
// exp(-i·ln(10000)/(channels/2 - 1)). torch computes exp, sin and cos
// with its vectorised kernels (MKL's, in the builds that have it), whose
// float32 results are not always the correctly rounded ones that these
// are; docs/compat.md says so.
func audioPositions(m *mmproj) ([]Output, error) {
	channels, err := m.a.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	half := channels / 2
	if half < 2 || channels > 1<<16 {
		return nil, &ConfigError{Key: "audio_config.d_model", Value: channels, Msg: "gives no sinusoid table (needs 4 to 65536 channels)"}
	}
	step := float32(-math.Log(10000) / float64(half-1))
	freq := make([]float32, half)
	for i := range freq {
		freq[i] = float32(math.Exp(float64(step * float32(i))))
	}
	data := make([]float32, 0, audioPositionLength*2*half)
	for t := range audioPositionLength {
		row := len(data)
		data = append(data, make([]float32, 2*half)...)
		for i, f := range freq {
			x := float64(float32(t) * f)
			data[row+i] = float32(math.Sin(x))
			data[row+int(half)+i] = float32(math.Cos(x))
		}
	}
	const hf = "audio_tower.embed_positions.weight"
	_, name, ok := m.names.Lookup(hf)
	if !ok {
		return nil, &UnsupportedError{Arch: MMProjArch, Reason: "no clip tensor name for " + hf}
	}
	return []Output{{Name: name, Shape: []int64{audioPositionLength, 2 * half}, Data: data, HFName: hf, Bid: -1}}, nil
}

func init() {
	registerMM(qwen25Omni, "Qwen2_5OmniModel")
}
