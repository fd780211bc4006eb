package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// GLM-4.1V's and GLM-4.5V's projector (Glm4VVisionModel,
// conversion/qwen3vl.py): Qwen3-VL's tower mapping (fused QKV, the Conv3D
// split in two) with GLM's own merger, mapped through the name table, and
// its own keys instead of Qwen3-VL's.
var glm4VVision = &mmFamily{
	check:  qwen3VLVision.check,
	filter: qwen3VLVision.filter,
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("glm4v"))
		switch strings.ToLower(fmt.Sprint(m.v.get("hidden_act", ""))) {
		case "gelu":
			k.l.Set(KeyUseGELU, gguf.Bool(true))
		case "silu":
			k.l.Set(KeyUseSILU, gguf.Bool(true))
		}
		return k.f32("vision.attention.layer_norm_epsilon", m.v.get("rms_norm_eps", 1e-5))
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if strings.HasPrefix(in.Name, "visual.merger.") {
			return nil, false, nil
		}
		return qwen3VLVision.modify(m, in, bid)
	},
}

func init() {
	registerMM(glm4VVision, "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration")
}
