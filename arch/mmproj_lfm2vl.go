package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// LFM2-VL's projector (LFM2VLModel, conversion/lfm2.py): a SigLIP2 NaFlex
// tower whose Linear patch embedding becomes a 16×16 conv kernel, the
// blocks vision_feature_layer leaves out dropped from the block count, and
// a LayerNorm + two-layer projector.
var lfm2VLVision = &mmFamily{
	check: func(m *mmproj, _ string) error {
		m.v["image_size"] = int64(256) // dynamic resolution: a fixed value, as the converter writes
		return nil
	},
	filter: func(name string) (string, bool) {
		name = strings.Replace(name, "model.vision_tower.", "vision_tower.", 1)
		name = strings.Replace(name, "model.multi_modal_projector.", "multi_modal_projector.", 1)
		return name, true
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("lfm2"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v["layer_norm_eps"]); err != nil {
			return err
		}
		if err := k.u32("vision.projector.scale_factor", m.g.get("downsample_factor", int64(2))); err != nil {
			return err
		}
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		// vision_feature_layer -1 uses the last block; -2 drops one …
		layer, err := asInt(m.g.get("vision_feature_layer", int64(-1)))
		if err != nil {
			return &ConfigError{Key: "vision_feature_layer", Value: m.g["vision_feature_layer"], Msg: "is not an integer"}
		}
		blocks, err := m.v.MustInt(mmBlockKeys...)
		if err != nil {
			return err
		}
		return k.u32("vision.block_count", blocks+layer+1)
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !strings.Contains(in.Name, "patch_embedding.weight") {
			return nil, false, nil
		}
		const p = 16
		if len(in.Shape) != 2 || in.Shape[1] != p*p*3 {
			return nil, true, fmt.Errorf("patch embedding of shape %v: the converter views it as [n, 16, 16, 3]", in.Shape)
		}
		n := in.Shape[0]
		outs, err := m.mapped(in, in.Name, bid, func(srcs [][]float32) ([]float32, error) {
			src := srcs[0]
			if int64(len(src)) != n*p*p*3 {
				return nil, fmt.Errorf("patch embedding: %d values for shape %v", len(src), in.Shape)
			}
			dst := make([]float32, len(src))
			for o := range n {
				for c := range int64(3) {
					for hw := range int64(p * p) {
						dst[((o*3+c)*p*p)+hw] = src[o*p*p*3+hw*3+c]
					}
				}
			}
			return dst, nil
		})
		if err == nil {
			outs[0].Shape = []int64{n, 3, p, p}
		}
		return outs, true, err
	},
}

func init() {
	registerMM(lfm2VLVision, "Lfm2VlForConditionalGeneration")
}
