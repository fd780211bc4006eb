package arch

import (
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Gemma 3's projector (Gemma3VisionModel, conversion/gemma.py): a SigLIP
// tower and the pooling projector, whose soft_emb_norm stores an offset
// from 1 like Gemma's text norms.
var gemma3Vision = &mmFamily{
	filter: func(name string) (string, bool) {
		if strings.Contains(name, "vision_model.head.") {
			return "", false
		}
		if !hasAnyPrefix(name, "multi_modal_projector.", "vision_tower.", "multimodal_projector.", "vision_model.") {
			return "", false
		}
		return strings.ReplaceAll(name, "_weight", ".weight"), true
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("gemma3"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v.get("layer_norm_eps", 1e-6)); err != nil {
			return err
		}
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		// proj_scale_factor: written when not the default 4 (test models).
		seq, err := m.preInt("image_seq_length", 256)
		if err != nil {
			return err
		}
		image, err := m.v.MustInt("image_size")
		if err != nil {
			return err
		}
		patch, err := m.v.MustInt("patch_size")
		if err != nil {
			return err
		}
		perSide := int64(math.Sqrt(float64(seq)))
		if patch <= 0 || perSide <= 0 {
			return &ConfigError{Key: "patch_size", Value: m.v["patch_size"], Msg: "and image_seq_length must be positive"}
		}
		if f := floorDiv(floorDiv(image, patch), perSide); f > 0 && f != 4 {
			return k.u32("vision.projector.scale_factor", f)
		}
		return nil
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		switch {
		case strings.Contains(out.HFName, "input_projection"):
			return gguf.F16, true
		case strings.Contains(out.HFName, ".embeddings."):
			return gguf.F32, true
		}
		return 0, false
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !strings.Contains(in.Name, "soft_emb_norm.weight") {
			return nil, false, nil
		}
		outs, err := m.mapped(in, in.Name, bid, addOne(in.DType))
		return outs, true, err
	},
}

func init() {
	registerMM(gemma3Vision, "Gemma3ForConditionalGeneration")
}
