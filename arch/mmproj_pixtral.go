package arch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ggufkit/ggufkit/gguf"
)

// Pixtral's projector (LlavaVisionModel, conversion/llava.py), used by
// LlavaForConditionalGeneration (Pixtral 12B) and
// Mistral3ForConditionalGeneration (Mistral Small 3.1): a Pixtral tower
// (2-D rope, SwiGLU), Q/K permuted like Llama's, and a patch-merger
// projector. Only a pixtral vision_config is converted.
var pixtralVision = &mmFamily{
	check: func(m *mmproj, dir string) error {
		if mt, _ := m.v["model_type"].(string); mt != "pixtral" {
			return fmt.Errorf("%w: vision_config model_type %s: llama.cpp's LlavaVisionModel converts a pixtral tower only",
				ErrConfig, describe(m.v["model_type"]))
		}
		if _, ok := m.v["layer_norm_eps"]; !ok {
			m.v["layer_norm_eps"] = json.Number("1e-05") // hard-coded in modeling_pixtral.py
		}
		// The converter looks [IMG_BREAK] up (its embedding row is only
		// taken from Mistral's own layout) and fails without it.
		return findAddedToken(dir, "[IMG_BREAK]")
	},
	params: func(m *mmproj, k *kv) error {
		k.l.Set(KeyProjectorType, gguf.String("pixtral"))
		if err := k.f32("vision.attention.layer_norm_epsilon", m.v["layer_norm_eps"]); err != nil {
			return err
		}
		if err := m.visionAct(k); err != nil {
			return err
		}
		if v, ok := m.g["spatial_merge_size"]; ok {
			return k.u32("vision.spatial_merge_size", v)
		}
		return nil
	},
	modify: func(m *mmproj, in Input, bid int) ([]Output, bool, error) {
		if !hasAnyPrefix(in.Name, "multi_modal_projector.", "vision_tower.", "vision_encoder.", "vision_language_adapter.",
			"patch_merger.", "pre_mm_projector_norm") {
			return nil, true, nil // the text model's tensors
		}
		if !hasAnySuffix(in.Name, "q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias") {
			return nil, false, nil
		}
		heads, err := m.v.MustInt("num_attention_heads")
		if err != nil {
			return nil, true, err
		}
		build, order, err := permuteQK(in.Shape, heads, heads)
		if err != nil {
			return nil, true, err
		}
		outs, err := m.mapped(in, in.Name, bid, build)
		if err == nil {
			outs[0].RowOrder = order
		}
		return outs, true, err
	},
}

// findAddedToken is LlavaVisionModel.get_token_id: the token among
// tokenizer_config.json's added_tokens_decoder, else tokenizer.json's
// added_tokens; an error when neither has it.
func findAddedToken(dir, token string) error {
	var cfg struct {
		Decoder map[string]struct {
			Content string `json:"content"`
		} `json:"added_tokens_decoder"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return fmt.Errorf("arch: looking up %s: %w", token, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("arch: tokenizer_config.json: %w", err)
	}
	for id, t := range cfg.Decoder {
		if _, err := strconv.Atoi(id); err == nil && t.Content == token {
			return nil
		}
	}
	var tj struct {
		Added []struct {
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if b, err = os.ReadFile(filepath.Join(dir, "tokenizer.json")); err != nil {
		return fmt.Errorf("arch: looking up %s: %w", token, err)
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return fmt.Errorf("arch: tokenizer.json: %w", err)
	}
	for _, t := range tj.Added {
		if t.Content == token {
			return nil
		}
	}
	return fmt.Errorf("%w: token %q not found in tokenizer_config.json nor tokenizer.json", ErrConfig, token)
}

func init() {
	registerMM(pixtralVision, "LlavaForConditionalGeneration", "Mistral3ForConditionalGeneration")
}
