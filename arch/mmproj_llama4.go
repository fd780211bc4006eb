package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Llama 4's projector (Llama4VisionModel, conversion/llama4.py): a ViT with
// a class embedding, a pixel-shuffle vision adapter (mm.model.mlp.*) and a
// single fully connected projector.
var llama4Vision = &mmFamily{
	filter: func(name string) (string, bool) {
		if !strings.Contains(name, "multi_modal_projector") && !strings.Contains(name, "vision_model") {
			return "", false
		}
		if strings.Contains(name, "positional_embedding_vlm") && !strings.Contains(name, ".weight") {
			name += ".weight"
		}
		return name, true
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("llama4"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v["norm_eps"]); err != nil {
			return err
		}
		ratio, err := asFloat(m.v["pixel_shuffle_ratio"])
		if err != nil || ratio <= 0 {
			return &ConfigError{Key: "vision_config.pixel_shuffle_ratio", Value: m.v["pixel_shuffle_ratio"], Msg: "is not a positive number"}
		}
		if err := k.u32("vision.projector.scale_factor", int64(1.0/ratio)); err != nil {
			return err
		}
		if act := m.v["hidden_act"]; act != "gelu" {
			return &ConfigError{Key: "vision_config.hidden_act", Value: act, Msg: "is not gelu"}
		}
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		return nil
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !strings.Contains(in.Name, "multi_modal_projector.linear_1") {
			return nil, false, nil
		}
		// A single fully connected layer despite its name.
		return []Output{identity(in, "mm.model.fc.weight", bid)}, true, nil
	},
}

func init() {
	registerMM(llama4Vision, "Llama4ForConditionalGeneration")
}
