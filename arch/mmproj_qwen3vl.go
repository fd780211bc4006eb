package arch

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Qwen3-VL's and Qwen3.5's projector (Qwen3VLVisionModel,
// conversion/qwen3vl.py): a ViT with fused QKV kept fused, learned position
// embeddings, the Conv3D patch embedding split in two, the merger and the
// deepstack mergers, each stored under the vision block it taps.
var qwen3VLVision = &mmFamily{
	check: func(m *mmproj, _ string) error {
		if _, ok := m.v["image_size"]; !ok {
			// sqrt(num_position_embeddings) * patch_size
			pos, err := asFloat(m.v.get("num_position_embeddings", json.Number("2304")))
			if err != nil {
				return &ConfigError{Key: "vision_config.num_position_embeddings", Value: m.v["num_position_embeddings"], Msg: "is not a number"}
			}
			patch, err := asFloat(m.v.get("patch_size", json.Number("16")))
			if err != nil {
				return &ConfigError{Key: "vision_config.patch_size", Value: m.v["patch_size"], Msg: "is not a number"}
			}
			m.v["image_size"] = json.Number(strconv.FormatInt(int64(math.Sqrt(pos)*patch), 10))
		}
		m.v["num_attention_heads"] = m.v["num_heads"]
		m.v["num_hidden_layers"] = m.v["depth"]
		_, err := deepstackLayers(m.v)
		return err
	},
	filter: func(name string) (string, bool) {
		if hasAnyPrefix(name, "lm_head.", "mtp.") {
			return "", false
		}
		if rest, ok := strings.CutPrefix(name, "model.visual."); ok {
			name = "visual." + rest
		}
		return name, strings.HasPrefix(name, "visual.")
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("qwen3vl_merger"))
		k.l.Set(KeyUseGELU, gguf.Bool(true))
		if v := m.v["spatial_merge_size"]; v != nil {
			if err := k.u32("vision.spatial_merge_size", v); err != nil {
				return err
			}
		}
		tc, _ := m.g["text_config"].(map[string]any)
		if err := k.f32("vision.attention.layer_norm_epsilon", HParams(tc).get("rms_norm_eps", 1e-6)); err != nil {
			return err
		}
		ds, err := deepstackLayers(m.v)
		if err != nil {
			return err
		}
		if len(ds) > 0 {
			k.l.Set("clip.vision.is_deepstack_layers", gguf.Array(ds))
		}
		return nil
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		outs, err := m.qwen3VLTensor(in, bid)
		return outs, outs != nil || err != nil, err
	},
}

// deepstackLayers is is_deepstack_layers: one flag per vision block, set
// for the blocks deepstack_visual_indexes names.
func deepstackLayers(v HParams) ([]bool, error) {
	n, _, err := v.Int("num_hidden_layers")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > 1<<16 {
		return nil, &ConfigError{Key: "vision_config.depth", Value: v["depth"], Msg: "is out of range"}
	}
	flags := make([]bool, n)
	list, _ := v["deepstack_visual_indexes"].([]any)
	for _, e := range list {
		i, err := asInt(e)
		if err != nil || i < -n || i >= n {
			return nil, &ConfigError{Key: "vision_config.deepstack_visual_indexes", Value: v["deepstack_visual_indexes"], Msg: "names a block the tower does not have"}
		}
		flags[(i+n)%n] = true
	}
	return flags, nil
}

// qwen3VLTensor maps the tensors Qwen3VLVisionModel names itself (nil for
// the others).
func (m *mmproj) qwen3VLTensor(in Input, bid int) ([]Output, error) {
	name := in.Name
	switch {
	case strings.HasPrefix(name, "visual.deepstack_merger_list."):
		parts := strings.SplitN(name, ".", 4)
		if len(parts) < 4 {
			return nil, fmt.Errorf("unexpected deepstack tensor %q", name)
		}
		pos, err := strconv.Atoi(parts[2])
		list, _ := m.v["deepstack_visual_indexes"].([]any)
		if err != nil || pos < 0 || pos >= len(list) {
			return nil, fmt.Errorf("deepstack tensor %q: no such entry of deepstack_visual_indexes", name)
		}
		idx, err := asInt(list[pos])
		if err != nil {
			return nil, err
		}
		target, suffix, _ := strings.Cut(parts[3], ".")
		kind := map[string]Kind{"norm": "V_DS_NORM", "linear_fc1": "V_DS_FC1", "linear_fc2": "V_DS_FC2"}[target]
		if kind == "" {
			return nil, fmt.Errorf("unexpected deepstack tensor %q", name)
		}
		gname, err := m.names.Format(kind, int(idx), "."+suffix)
		if err != nil {
			return nil, err
		}
		return m.mapped(in, gname, bid, nil)
	case strings.HasPrefix(name, "visual.merger."):
		suffix := strings.SplitN(name, ".", 3)[2]
		part, tail, _ := strings.Cut(suffix, ".")
		var gname string
		var err error
		switch part {
		case "linear_fc1":
			gname, err = m.names.Format("V_MMPROJ", 0, "."+tail)
		case "linear_fc2":
			gname, err = m.names.Format("V_MMPROJ", 2, "."+tail)
		case "norm":
			gname, err = m.names.Format("V_POST_NORM", -1, "."+tail)
		default:
			return nil, fmt.Errorf("unexpected merger tensor %q", name)
		}
		if err != nil {
			return nil, err
		}
		return []Output{identity(in, gname, bid)}, nil
	case name == "visual.patch_embed.proj.weight":
		return splitConv3D(in, bid)
	case name == "visual.patch_embed.proj.bias":
		return []Output{identity(in, "v.patch_embd.bias", bid)}, nil
	}
	return nil, nil
}

func init() {
	registerMM(qwen3VLVision, "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
		"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
}
