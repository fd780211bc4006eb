package arch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Kimi-VL's projector (KimiVLModel, conversion/kimivl.py): MoonViT with a
// fused wqkv (split here) and a learned 2-D position table, and a
// pixel-shuffle projector. It needs neither the text tower nor its
// tiktoken vocabulary.
var kimiVLVision = &mmFamily{
	check: func(m *mmproj, _ string) error {
		m.v["image_size"] = json.Number("896") // 64 × 14, fixed by the converter "for compatibility"
		return nil
	},
	filter: func(name string) (string, bool) {
		return name, strings.Contains(name, "vision_tower") || strings.Contains(name, "multi_modal_projector")
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("kimivl"))
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		k.l.Set(KeyVisionScaleFactor, gguf.Uint32(2))
		return k.f32("vision.attention.layer_norm_epsilon", m.v.get("layer_norm_eps", 1e-5))
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		switch {
		case strings.Contains(in.Name, "wqkv"):
			outs, err := m.splitQKV(in, bid, "wqkv", "w%s")
			return outs, true, err
		case strings.Contains(in.Name, "pos_emb.weight"):
			if len(in.Shape) != 3 {
				return nil, true, fmt.Errorf("position table of shape %v, want [height, width, channels]", in.Shape)
			}
			outs, err := m.mapped(in, in.Name, bid, nil)
			if err == nil {
				outs[0].Shape = []int64{in.Shape[0] * in.Shape[1], in.Shape[2]}
			}
			return outs, true, err
		}
		return nil, false, nil
	},
}

func init() {
	registerMM(kimiVLVision, "KimiVLForConditionalGeneration")
}
