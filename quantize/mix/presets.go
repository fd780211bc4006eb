// Package mix holds llama-quantize's per-tensor type decisions: the presets
// (file types such as Q4_K_M), each preset's default ggml type, which tensors
// may be quantized at all, the mix rules that give some tensors more bits,
// the fallbacks when a row is not a whole number of blocks, and which tensors
// need an importance matrix. It is shared by `ggufkit quantize` and
// `ggufkit convert --outtype PRESET`.
//
// The truth is src/llama-quant.cpp and tools/quantize/quantize.cpp of
// llama.cpp commit 0c1e570; docs/compat.md lists any deliberate difference.
package mix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// ErrUnknownPreset is returned for a name that is neither a preset nor a
// ggml type.
var ErrUnknownPreset = errors.New("mix: unknown quantization type")

// Preset is one of llama-quantize's file-type options.
type Preset struct {
	Name        string
	FileType    gguf.FileType
	Description string
}

// Presets are llama-quantize's QUANT_OPTIONS, in its order (aliases Q3_K,
// Q4_K, Q5_K and COPY included; COPY comes after F32 so that ftype 0 resolves
// to F32).
var Presets = []Preset{
	{"Q1_0", gguf.FileTypeQ1_0, " 1.125 bpw quantization"},
	{"Q2_0", gguf.FileTypeQ2_0, " 2.25 bpw quantization (group 64)"},
	{"Q4_0", gguf.FileTypeQ4_0, " 4.34G, +0.4685 ppl @ Llama-3-8B"},
	{"Q4_1", gguf.FileTypeQ4_1, " 4.78G, +0.4511 ppl @ Llama-3-8B"},
	{"MXFP4_MOE", gguf.FileTypeMXFP4_MOE, " MXFP4 MoE"},
	{"Q5_0", gguf.FileTypeQ5_0, " 5.21G, +0.1316 ppl @ Llama-3-8B"},
	{"Q5_1", gguf.FileTypeQ5_1, " 5.65G, +0.1062 ppl @ Llama-3-8B"},
	{"IQ2_XXS", gguf.FileTypeIQ2_XXS, " 2.06 bpw quantization"},
	{"IQ2_XS", gguf.FileTypeIQ2_XS, " 2.31 bpw quantization"},
	{"IQ2_S", gguf.FileTypeIQ2_S, " 2.5  bpw quantization"},
	{"IQ2_M", gguf.FileTypeIQ2_M, " 2.7  bpw quantization"},
	{"IQ1_S", gguf.FileTypeIQ1_S, " 1.56 bpw quantization"},
	{"IQ1_M", gguf.FileTypeIQ1_M, " 1.75 bpw quantization"},
	{"TQ1_0", gguf.FileTypeTQ1_0, " 1.69 bpw ternarization"},
	{"TQ2_0", gguf.FileTypeTQ2_0, " 2.06 bpw ternarization"},
	{"Q2_K", gguf.FileTypeQ2_K, " 2.96G, +3.5199 ppl @ Llama-3-8B"},
	{"Q2_K_S", gguf.FileTypeQ2_K_S, " 2.96G, +3.1836 ppl @ Llama-3-8B"},
	{"IQ3_XXS", gguf.FileTypeIQ3_XXS, " 3.06 bpw quantization"},
	{"IQ3_S", gguf.FileTypeIQ3_S, " 3.44 bpw quantization"},
	{"IQ3_M", gguf.FileTypeIQ3_M, " 3.66 bpw quantization mix"},
	{"Q3_K", gguf.FileTypeQ3_K_M, "alias for Q3_K_M"},
	{"IQ3_XS", gguf.FileTypeIQ3_XS, " 3.3 bpw quantization"},
	{"Q3_K_S", gguf.FileTypeQ3_K_S, " 3.41G, +1.6321 ppl @ Llama-3-8B"},
	{"Q3_K_M", gguf.FileTypeQ3_K_M, " 3.74G, +0.6569 ppl @ Llama-3-8B"},
	{"Q3_K_L", gguf.FileTypeQ3_K_L, " 4.03G, +0.5562 ppl @ Llama-3-8B"},
	{"IQ4_NL", gguf.FileTypeIQ4_NL, " 4.50 bpw non-linear quantization"},
	{"IQ4_XS", gguf.FileTypeIQ4_XS, " 4.25 bpw non-linear quantization"},
	{"Q4_K", gguf.FileTypeQ4_K_M, "alias for Q4_K_M"},
	{"Q4_K_S", gguf.FileTypeQ4_K_S, " 4.37G, +0.2689 ppl @ Llama-3-8B"},
	{"Q4_K_M", gguf.FileTypeQ4_K_M, " 4.58G, +0.1754 ppl @ Llama-3-8B"},
	{"Q5_K", gguf.FileTypeQ5_K_M, "alias for Q5_K_M"},
	{"Q5_K_S", gguf.FileTypeQ5_K_S, " 5.21G, +0.1049 ppl @ Llama-3-8B"},
	{"Q5_K_M", gguf.FileTypeQ5_K_M, " 5.33G, +0.0569 ppl @ Llama-3-8B"},
	{"Q6_K", gguf.FileTypeQ6_K, " 6.14G, +0.0217 ppl @ Llama-3-8B"},
	{"Q8_0", gguf.FileTypeQ8_0, " 7.96G, +0.0026 ppl @ Llama-3-8B"},
	{"F16", gguf.FileTypeF16, "14.00G, +0.0020 ppl @ Mistral-7B"},
	{"BF16", gguf.FileTypeBF16, "14.00G, -0.0050 ppl @ Mistral-7B"},
	{"F32", gguf.FileTypeAllF32, "26.00G              @ 7B"},
	{"COPY", gguf.FileTypeAllF32, "only copy tensors, no quantizing"},
}

// Target is what a quantization type argument resolves to: a preset (a
// file type with its mix rules) or one ggml type applied to every tensor
// that may be quantized.
type Target struct {
	// Preset is set when the argument named a llama-quantize file type.
	Preset *Preset
	// Type is set when the argument named a ggml type (or ggml:NAME).
	Type gguf.Type
	// Copy is llama-quantize's COPY: tensors are copied, none quantized.
	Copy bool
}

// Name is the argument's canonical spelling ("Q4_K_M", "ggml:IQ2_S").
func (t Target) Name() string {
	if t.Preset != nil {
		return t.Preset.Name
	}
	return "ggml:" + t.Type.String()
}

// ParseTarget resolves a type argument as llama-quantize does first — a
// preset name (case-insensitive, aliases included) or its file-type number
// — and otherwise as a ggml type name (MXFP4, NVFP4, Q1_0 …). "ggml:NAME"
// always means the ggml type itself (ggml:IQ2_S, whose preset namesake is a
// mix based on IQ2_XS).
func ParseTarget(arg string) (Target, error) {
	if name, ok := strings.CutPrefix(arg, "ggml:"); ok {
		t, err := gguf.ParseType(name)
		if err != nil {
			return Target{}, fmt.Errorf("%w: %q: %v", ErrUnknownPreset, arg, err)
		}
		return Target{Type: t}, nil
	}
	if p, ok := findPreset(arg); ok {
		return Target{Preset: p, Copy: p.Name == "COPY"}, nil
	}
	if t, err := gguf.ParseType(arg); err == nil {
		return Target{Type: t}, nil
	}
	return Target{}, fmt.Errorf("%w: %q is neither a llama-quantize type (%s) nor a ggml type", ErrUnknownPreset, arg, presetNames())
}

// findPreset mirrors try_parse_ftype: a case-insensitive name, else a
// number matching a preset's file type (the first in table order).
func findPreset(arg string) (*Preset, bool) {
	for i := range Presets {
		if strings.EqualFold(Presets[i].Name, arg) {
			return &Presets[i], true
		}
	}
	if n, err := strconv.Atoi(arg); err == nil {
		for i := range Presets {
			if int(Presets[i].FileType) == n {
				return &Presets[i], true
			}
		}
	}
	return nil, false
}

func presetNames() string {
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return strings.Join(names, " ")
}

// DefaultType is llama_ftype_get_default_type: the ggml type most tensors
// of a file type get. ok is false for file types llama-quantize cannot
// produce (NVFP4 among them).
func DefaultType(ft gguf.FileType) (t gguf.Type, ok bool) {
	t, ok = defaultTypes[ft]
	return t, ok
}

var defaultTypes = map[gguf.FileType]gguf.Type{
	gguf.FileTypeQ4_0:      gguf.Q4_0,
	gguf.FileTypeQ4_1:      gguf.Q4_1,
	gguf.FileTypeQ5_0:      gguf.Q5_0,
	gguf.FileTypeQ5_1:      gguf.Q5_1,
	gguf.FileTypeQ8_0:      gguf.Q8_0,
	gguf.FileTypeF16:       gguf.F16,
	gguf.FileTypeBF16:      gguf.BF16,
	gguf.FileTypeAllF32:    gguf.F32,
	gguf.FileTypeQ1_0:      gguf.Q1_0,
	gguf.FileTypeQ2_0:      gguf.Q2_0,
	gguf.FileTypeMXFP4_MOE: gguf.MXFP4,
	gguf.FileTypeQ2_K_S:    gguf.Q2_K,
	gguf.FileTypeQ2_K:      gguf.Q2_K,
	gguf.FileTypeIQ3_XS:    gguf.IQ3_S,
	gguf.FileTypeQ3_K_S:    gguf.Q3_K,
	gguf.FileTypeQ3_K_M:    gguf.Q3_K,
	gguf.FileTypeQ3_K_L:    gguf.Q3_K,
	gguf.FileTypeQ4_K_S:    gguf.Q4_K,
	gguf.FileTypeQ4_K_M:    gguf.Q4_K,
	gguf.FileTypeQ5_K_S:    gguf.Q5_K,
	gguf.FileTypeQ5_K_M:    gguf.Q5_K,
	gguf.FileTypeQ6_K:      gguf.Q6_K,
	gguf.FileTypeTQ1_0:     gguf.TQ1_0,
	gguf.FileTypeTQ2_0:     gguf.TQ2_0,
	gguf.FileTypeIQ2_XXS:   gguf.IQ2_XXS,
	gguf.FileTypeIQ2_XS:    gguf.IQ2_XS,
	gguf.FileTypeIQ2_S:     gguf.IQ2_XS,
	gguf.FileTypeIQ2_M:     gguf.IQ2_S,
	gguf.FileTypeIQ3_XXS:   gguf.IQ3_XXS,
	gguf.FileTypeIQ1_S:     gguf.IQ1_S,
	gguf.FileTypeIQ1_M:     gguf.IQ1_M,
	gguf.FileTypeIQ4_NL:    gguf.IQ4_NL,
	gguf.FileTypeIQ4_XS:    gguf.IQ4_XS,
	gguf.FileTypeIQ3_S:     gguf.IQ3_S,
	gguf.FileTypeIQ3_M:     gguf.IQ3_S,
}
