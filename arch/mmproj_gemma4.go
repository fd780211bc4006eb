package arch

import (
	"fmt"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Gemma 4's projector (Gemma4VisionAudioModel, conversion/gemma.py): a
// ViT tower with clipped linears (their input/output clamp bounds are
// tensors), a patch embedder taking HWC patches and a 2-D position table,
// and, when the config has one, a conformer audio tower; each has its
// embedding projection into the text model.
var gemma4VisionAudio = &mmFamily{
	audio:         true,
	optionalAudio: true,
	suffixes:      []string{".input_max", ".input_min", ".output_max", ".output_min"},
	check: func(m *mmproj, _ string) error {
		m.v["image_size"] = int64(224) // unused by the tower, set for MmprojModel
		if len(m.a) > 0 {
			m.a["feat_in"] = m.a.get("input_feat_size", int64(128))
			if h, ok := m.a["hidden_size"]; ok {
				n, err := asInt(h)
				if err != nil {
					return &ConfigError{Key: "audio_config.hidden_size", Value: h, Msg: "is not an integer"}
				}
				m.a["intermediate_size"] = n * 4
			}
		}
		return nil
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set("clip.vision.projector_type", gguf.String("gemma4v"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v.get("layer_norm_eps", 1e-6)); err != nil {
			return err
		}
		if !m.audio {
			return nil
		}
		k.l.Set("clip.audio.projector_type", gguf.String("gemma4a"))
		if err := k.u32("audio.num_mel_bins", m.a["feat_in"]); err != nil {
			return err
		}
		return k.f32("audio.attention.layer_norm_epsilon", m.a.get("layer_norm_eps", 1e-6))
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		n := out.HFName
		if gemma4IsAudio(n) && (strings.Contains(n, ".conv") || strings.Contains(n, "_conv") && strings.Contains(n, ".weight")) {
			return gguf.F32, true
		}
		if strings.Contains(n, "position_embedding_table") {
			return gguf.F32, true
		}
		return 0, false
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		name, shape := in.Name, in.Shape
		if len(shape) == 0 {
			shape = []int64{1} // scalar clamp bounds become 1-D
		}
		var build func([][]float32) ([]float32, error)
		if gemma4IsAudio(name) {
			name = strings.ReplaceAll(strings.ReplaceAll(name, "model.audio_tower.", "conformer."), ".linear.", ".")
			if strings.HasSuffix(name, "per_dim_key_scale") || strings.HasSuffix(name, "per_dim_scale") {
				name += ".weight"
				build = softplus
			}
			if strings.Contains(name, "lconv1d.depthwise_conv1d") && strings.HasSuffix(name, ".weight") {
				if len(shape) != 3 || shape[1] != 1 {
					return nil, true, fmt.Errorf("%s: shape %v, want [channels 1 kernel]", in.Name, shape)
				}
				shape = []int64{shape[0], shape[2]}
			}
		} else {
			name = strings.ReplaceAll(name, "model.vision_tower.encoder.", "vision_model.model.")
			name = strings.ReplaceAll(name, ".linear.weight", ".weight")
			if strings.HasSuffix(name, "layer_scalar") || strings.HasSuffix(name, "position_embedding_table") {
				name += ".weight"
			}
			if strings.HasSuffix(name, "patch_embedder.input_proj.weight") {
				var err error
				if shape, build, err = hwcToCHW(in.Name, shape); err != nil {
					return nil, true, err
				}
			}
		}
		outs, err := m.mapped(in, name, bid, build)
		if err == nil {
			outs[0].Shape = shape
		}
		return outs, true, err
	},
}

// gemma4IsAudio is Gemma4VisionAudioModel.is_audio_tensor.
func gemma4IsAudio(name string) bool {
	return strings.Contains(name, "audio_tower") || strings.Contains(name, "embed_audio")
}

// softplus is torch.nn.functional.softplus (beta 1, threshold 20) on a
// float32 tensor: log1p(exp(x)), each step rounded to float32 as libm's
// expf and log1pf do. torch's vectorised kernel (SLEEF, within 1 ulp) may
// differ from it by an ulp on some values; the fixture's match.
func softplus(srcs [][]float32) ([]float32, error) {
	out := make([]float32, len(srcs[0]))
	for i, v := range srcs[0] {
		if v > 20 {
			out[i] = v
			continue
		}
		e := float32(math.Exp(float64(v)))
		out[i] = float32(math.Log1p(float64(e)))
	}
	return out, nil
}

// hwcToCHW reshapes a patch embedding [n_embd, p*p*3] whose columns are
// (row, column, channel) into [n_embd, 3, p, p], as the converter's
// reshape(n_embd, p, p, 3).permute(0, 3, 1, 2).
func hwcToCHW(name string, shape []int64) ([]int64, func([][]float32) ([]float32, error), error) {
	if len(shape) != 2 || shape[1]%3 != 0 {
		return nil, nil, fmt.Errorf("%s: shape %v, want [n_embd patch*patch*3]", name, shape)
	}
	p := int64(math.Sqrt(float64(shape[1] / 3)))
	if p*p*3 != shape[1] {
		return nil, nil, fmt.Errorf("%s: %d columns are not 3 square patches", name, shape[1])
	}
	n, row := shape[0], shape[1]
	build := func(srcs [][]float32) ([]float32, error) {
		src, out := srcs[0], make([]float32, len(srcs[0]))
		for e := int64(0); e < n; e++ {
			for c := int64(0); c < 3; c++ {
				for y := int64(0); y < p; y++ {
					for x := int64(0); x < p; x++ {
						out[e*row+(c*p+y)*p+x] = src[e*row+(y*p+x)*3+c]
					}
				}
			}
		}
		return out, nil
	}
	return []int64{n, 3, p, p}, build, nil
}

func init() {
	registerMM(gemma4VisionAudio, "Gemma4ForConditionalGeneration")
}
