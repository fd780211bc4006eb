package convert

import (
	"fmt"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/hf"
)

// dequantSource is ModelBase.dequant_model for the quantized checkpoints
// ggufkit reads: config.json's quantization_config with quant_method
// "fp8" (DeepSeek-V3's block-scaled F8_E4M3 weights) makes the model's
// source dequantize its weights as the converter does (see
// readers.NewScaled). Another quant_method is refused: the converter
// either has a dequantizer ggufkit does not (bitnet, gptq,
// compressed-tensors, modelopt) or fails on it, and converting the stored
// integers as they are would write a wrong model.
func dequantSource(m *hf.Model, h arch.HParams) error {
	qc, ok := h["quantization_config"].(map[string]any)
	if !ok {
		// The converter only looks at a dict.
		return nil
	}
	method := qc["quant_method"]
	if method == nil {
		return nil
	}
	if method != "fp8" {
		return fmt.Errorf("quantization_config: quant_method %v is not supported (only \"fp8\")", describeJSON(method))
	}
	var block []int64
	if v := qc["weight_block_size"]; v != nil {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("quantization_config: weight_block_size %v is not a list of two sizes", describeJSON(v))
		}
		for _, e := range list {
			n, ok, err := arch.HParams{"n": e}.Int("n")
			if err != nil || !ok {
				return fmt.Errorf("quantization_config: weight_block_size %v is not a list of two sizes", describeJSON(v))
			}
			block = append(block, n)
		}
	}
	src, err := readers.NewScaled(m.Source, block)
	if err != nil {
		return err
	}
	m.Source = src
	return nil
}

func describeJSON(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
