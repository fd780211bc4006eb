package arch

import (
	"encoding/json"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// SmolVLM's and Idefics3's projector (SmolVLMModel, conversion/smolvlm.py):
// a SigLIP-style tower and the pixel-shuffle connector.
var smolVLMVision = &mmFamily{
	filter: func(name string) (string, bool) {
		return name, strings.Contains(name, "vision_tower") || strings.Contains(name, "vision_model") ||
			strings.Contains(name, "model.connector")
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("idefics3"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v.get("layer_norm_eps", 1e-5)); err != nil {
			return err
		}
		if err := k.u32("vision.projector.scale_factor", m.g.get("scale_factor", json.Number("2"))); err != nil {
			return err
		}
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		// The preprocessor's longest edge, else the tower's image size.
		edge := m.v["image_size"]
		if size, ok := m.pre["size"].(map[string]any); ok {
			if v, ok := size["longest_edge"]; ok {
				edge = v
			}
		}
		return k.u32("vision.preproc_image_size", edge)
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		if strings.Contains(out.HFName, ".embeddings.") {
			return gguf.F32, true
		}
		return 0, false
	},
}

func init() {
	registerMM(smolVLMVision, "Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration")
}
