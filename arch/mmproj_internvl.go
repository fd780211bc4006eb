package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// InternVL's projector (InternVisionModel, conversion/internvl.py), chosen
// by vision_config.architectures: InternViT with layer scales and a
// pixel-shuffle MLP projector (mlp1). Both checkpoint layouts map: the
// remote-code InternVLChatModel's (vision_model.*, fused attn.qkv, mlp1.*)
// and the HF-native InternVLForConditionalGeneration's (model.vision_tower.*,
// model.multi_modal_projector.*, whose image and patch sizes are lists).
var internVLVision = &mmFamily{
	check: func(m *mmproj, _ string) error {
		for _, key := range []string{"image_size", "patch_size"} {
			if list, ok := m.v[key].([]any); ok && len(list) > 0 {
				m.v[key] = list[0]
			}
		}
		return nil
	},
	filter: func(name string) (string, bool) {
		if !hasAnyPrefix(name, "vision_model", "mlp", "model.vision_tower", "model.multi_modal_projector") {
			return "", false
		}
		if n, ok := internVLProjector[name]; ok {
			name = n
		}
		if strings.HasPrefix(name, "vision_model") {
			name = "vision_tower." + name
		}
		if (strings.Contains(name, ".ls") || strings.Contains(name, ".lambda_") || strings.Contains(name, "position_embedding")) &&
			!strings.HasSuffix(name, ".weight") {
			name += ".weight"
		}
		return name, true
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("internvl"))
		eps, ok := m.v["layer_norm_eps"]
		if !ok {
			return &ConfigError{Key: "vision_config.layer_norm_eps", Msg: "is required"}
		}
		if err := k.f32("vision.attention.layer_norm_epsilon", eps); err != nil {
			return err
		}
		if err := m.visionAct(k); err != nil {
			return err
		}
		ratio, ok, err := m.g.Float("downsample_ratio")
		if err != nil {
			return err
		}
		if !ok || ratio <= 0 || 1/ratio > 1<<32-1 {
			return &ConfigError{Key: "downsample_ratio", Value: m.g["downsample_ratio"], Msg: "is required, a positive fraction"}
		}
		if err := k.u32("vision.projector.scale_factor", int64(1/ratio)); err != nil {
			return err
		}
		// Older checkpoints have no tile bounds: the key is then left out.
		for _, t := range []struct{ from, key string }{
			{"min_dynamic_patch", "vision.preproc_min_tiles"},
			{"max_dynamic_patch", "vision.preproc_max_tiles"},
		} {
			n, _, err := m.g.Int(t.from)
			if err != nil {
				return err
			}
			if n > 0 {
				if err := k.u32(t.key, n); err != nil {
					return err
				}
			}
		}
		return nil
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		if strings.Contains(out.Name, ".position_embd.") {
			return gguf.F32, true
		}
		return 0, false
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !strings.Contains(in.Name, ".qkv.") {
			return nil, false, nil
		}
		outs, err := m.splitQKV(in, bid, "attn.qkv", "self_attn.%s_proj")
		return outs, true, err
	},
}

// internVLProjector renames the HF-native projector to the remote-code
// layout's mlp1 (the converter's "intern-s1 special case").
var internVLProjector = map[string]string{
	"model.multi_modal_projector.layer_norm.bias":   "mlp1.0.bias",
	"model.multi_modal_projector.layer_norm.weight": "mlp1.0.weight",
	"model.multi_modal_projector.linear_1.bias":     "mlp1.1.bias",
	"model.multi_modal_projector.linear_1.weight":   "mlp1.1.weight",
	"model.multi_modal_projector.linear_2.bias":     "mlp1.3.bias",
	"model.multi_modal_projector.linear_2.weight":   "mlp1.3.weight",
}

func init() {
	registerMM(internVLVision, "InternVisionModel")
}
