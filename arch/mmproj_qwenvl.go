package arch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Qwen2-VL's and Qwen2.5-VL's projector (Qwen2VLVisionModel,
// conversion/qwenvl.py): a ViT with fused QKV (split here), a Conv3D patch
// embedding split into two Conv2D kernels (temporal patch size 2), the
// patch merger, and for 2.5 window attention (n_wa_pattern from
// fullatt_block_indexes).
var qwen2VLVision = &mmFamily{
	check: func(m *mmproj, _ string) error {
		if _, ok := m.v["image_size"]; !ok {
			m.v["image_size"] = json.Number("560")
		}
		m.v["num_attention_heads"] = m.v["num_heads"]
		m.v["num_hidden_layers"] = m.v["depth"]
		if _, ok := m.v["embed_dim"]; ok { // Qwen2-VL
			m.v["intermediate_size"] = m.v["hidden_size"]
			m.v["hidden_size"] = m.v["embed_dim"]
		}
		return nil
	},
	filter: func(name string) (string, bool) {
		return name, strings.HasPrefix(name, "visual.")
	},
	params: func(m *mmproj, k *kv) error {
		switch mt := m.g["model_type"]; mt {
		case "qwen2_vl":
			k.l.Set(KeyProjectorType, gguf.String("qwen2vl_merger"))
		case "qwen2_5_vl", "qwen2_5_omni":
			proj := "qwen2.5vl_merger"
			if mt == "qwen2_5_omni" {
				proj = "qwen2.5o"
			}
			k.l.Set(KeyProjectorType, gguf.String(proj))
			k.l.Set(KeyUseSILU, gguf.Bool(true))
			n, err := windowPattern(m.v["fullatt_block_indexes"])
			if err != nil {
				return err
			}
			k.l.Set("clip.vision.n_wa_pattern", gguf.Uint32(uint32(n)))
		default:
			return &ConfigError{Key: "model_type", Value: mt, Msg: "is not a Qwen-VL model type (qwen2_vl, qwen2_5_vl, qwen2_5_omni)"}
		}
		return k.f32("vision.attention.layer_norm_epsilon", m.g.get("rms_norm_eps", 1e-6))
	},
	force: func(m *mmproj, out *Output, _ int) (gguf.Type, bool) {
		if strings.Contains(out.Name, ".position_embd.") {
			return gguf.F32, true
		}
		return 0, false
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		switch {
		case strings.Contains(in.Name, ".qkv."):
			outs, err := m.splitQKV(in, bid, "qkv", "%s")
			return outs, true, err
		case strings.Contains(in.Name, "patch_embed.proj.weight"):
			outs, err := splitConv3D(in, bid)
			return outs, true, err
		}
		return nil, false, nil
	},
}

// windowPattern is n_wa_pattern: fullatt_block_indexes[0] + 1, the same
// step between every two indexes.
func windowPattern(v any) (int64, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return 0, &ConfigError{Key: "vision_config.fullatt_block_indexes", Value: v, Msg: "is required for qwen2_5_vl"}
	}
	idx := make([]int64, len(list))
	for i, e := range list {
		n, err := asInt(e)
		if err != nil {
			return 0, &ConfigError{Key: "vision_config.fullatt_block_indexes", Value: v, Msg: "is not a list of integers"}
		}
		idx[i] = n
	}
	n := idx[0] + 1
	for i := 1; i < len(idx); i++ {
		if idx[i]-idx[i-1] != n {
			return 0, &ConfigError{Key: "vision_config.fullatt_block_indexes", Value: v, Msg: "is not evenly spaced"}
		}
	}
	if n <= 0 || n > 1<<32-1 {
		return 0, &ConfigError{Key: "vision_config.fullatt_block_indexes", Value: v, Msg: "gives no window pattern"}
	}
	return n, nil
}

// splitQKV maps a fused QKV weight or bias as three tensors, the thirds of
// its rows, named with the first fused in the name replaced by part (a
// format of q, k and v in turn).
func (m *mmproj) splitQKV(in Input, bid int, fused, part string) ([]Output, error) {
	if len(in.Shape) == 0 || in.Shape[0]%3 != 0 {
		return nil, fmt.Errorf("fused QKV of shape %v: rows not a multiple of 3", in.Shape)
	}
	c := in.Shape[0] / 3
	var outs []Output
	for i, p := range []string{"q", "k", "v"} {
		order := make([]int64, c)
		for r := range order {
			order[r] = int64(i)*c + int64(r)
		}
		shape := append([]int64{c}, in.Shape[1:]...)
		o, err := m.mapped(in, strings.Replace(in.Name, fused, fmt.Sprintf(part, p), 1), bid, selectRows(in.Shape, order))
		if err != nil {
			return nil, err
		}
		o[0].Shape = shape
		outs = append(outs, o...)
	}
	return outs, nil
}

// splitConv3D splits a Conv3D patch embedding [out, in, 2, kh, kw] into
// the two Conv2D kernels of its temporal positions: v.patch_embd.weight
// and v.patch_embd.weight.1.
func splitConv3D(in Input, bid int) ([]Output, error) {
	s := in.Shape
	if len(s) != 5 || s[2] != 2 {
		return nil, fmt.Errorf("patch embedding of shape %v: a Conv3D with temporal patch size 2 is supported", s)
	}
	inner := s[3] * s[4]
	shape := []int64{s[0], s[1], s[3], s[4]}
	var outs []Output
	for t, name := range []string{"v.patch_embd.weight", "v.patch_embd.weight.1"} {
		o := identity(in, name, bid)
		o.Shape = shape
		o.Build = func(srcs [][]float32) ([]float32, error) {
			src := srcs[0]
			if int64(len(src)) != numel(s) {
				return nil, fmt.Errorf("patch embedding: %d values for shape %v", len(src), s)
			}
			dst := make([]float32, 0, numel(shape))
			for oc := int64(0); oc < s[0]*s[1]; oc++ {
				base := oc*2*inner + int64(t)*inner
				dst = append(dst, src[base:base+inner]...)
			}
			return dst, nil
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func init() {
	registerMM(qwen2VLVision, "Qwen2VLForConditionalGeneration", "Qwen2VLModel", "Qwen2_5_VLForConditionalGeneration")
}
