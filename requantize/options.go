// Package requantize rewrites a GGUF with other tensor types, as
// llama-quantize does (src/llama-quant.cpp, tools/quantize/quantize.cpp of
// llama.cpp 0c1e570): same per-tensor decisions (quantize/mix), same
// metadata changes, same tensor order and layout, so that the output is
// byte-identical to llama-quantize's for the same input, type and imatrix.
package requantize

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/quantize/mix"
)

// Options configure a run; the zero value of each field is llama-quantize's
// default.
type Options struct {
	// Target is the file type (preset) or ggml type to produce.
	Target mix.Target
	// Pure: no mix rules, every quantizable tensor gets the default type.
	Pure bool
	// LeaveOutput keeps output.weight unquantized (--leave-output-tensor).
	LeaveOutput bool
	// AllowRequantize permits quantizing already-quantized tensors.
	AllowRequantize bool
	// OutputType and TokenEmbdType force those tensors' types.
	OutputType, TokenEmbdType *gguf.Type
	// TensorTypes are --tensor-type rules (first match wins).
	TensorTypes []mix.TypeOverride
	// IMatrix holds importance weights (already filtered by
	// --include-weights / --exclude-weights); IMatrixFile is its path as
	// the user gave it, recorded in quantize.imatrix.file.
	IMatrix     *imatrix.Matrix
	IMatrixFile string
	// KVOverrides are applied to the output metadata (--override-kv).
	KVOverrides []KVOverride
	// PruneLayers removes these blocks and renumbers the rest.
	PruneLayers []int
	// KeepSplit writes one output shard per input shard.
	KeepSplit bool
	// DryRun decides and sizes every tensor but writes nothing.
	DryRun bool
	// Overwrite replaces an existing output file.
	Overwrite bool
	// Workers quantize each tensor's rows in parallel (0: all CPUs).
	Workers int
	// SlabBytes bounds the float32 data a tensor is converted through at a
	// time, rounded down to whole rows (at least one); 0 means
	// DefaultSlabBytes. The output does not depend on it.
	SlabBytes int
	// OnTensor, when set, is called after each tensor is decided (dry run)
	// or written.
	OnTensor func(TensorReport)
}

// KVOverride is one --override-kv KEY=TYPE:VALUE.
type KVOverride struct {
	Key   string
	Value gguf.Value
}

// ParseKVOverride parses KEY=TYPE:VALUE with TYPE one of int, float, bool,
// str, as llama.cpp's string_parse_kv_override does, and stores the value
// as llama-quantize writes it: int as uint32 of its absolute value, float as
// float32, str at most 127 bytes. Unlike atol/atof, a malformed number is an
// error.
func ParseKVOverride(s string) (KVOverride, error) {
	key, rest, ok := strings.Cut(s, "=")
	if !ok || key == "" || len(key) >= 128 {
		return KVOverride{}, fmt.Errorf("malformed KV override %q, want KEY=TYPE:VALUE", s)
	}
	typ, val, ok := strings.Cut(rest, ":")
	if !ok {
		return KVOverride{}, fmt.Errorf("KV override %q: missing TYPE: (int, float, bool or str)", s)
	}
	switch typ {
	case "int":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return KVOverride{}, fmt.Errorf("KV override %q: %w", s, err)
		}
		if n < 0 {
			n = -n
		}
		return KVOverride{key, gguf.Uint32(uint32(n))}, nil
	case "float":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return KVOverride{}, fmt.Errorf("KV override %q: %w", s, err)
		}
		return KVOverride{key, gguf.Float32(float32(f))}, nil
	case "bool":
		switch val {
		case "true":
			return KVOverride{key, gguf.Bool(true)}, nil
		case "false":
			return KVOverride{key, gguf.Bool(false)}, nil
		}
		return KVOverride{}, fmt.Errorf("KV override %q: bool must be true or false", s)
	case "str":
		if len(val) > 127 {
			return KVOverride{}, fmt.Errorf("KV override %q: value cannot exceed 127 bytes", s)
		}
		return KVOverride{key, gguf.String(val)}, nil
	}
	return KVOverride{}, fmt.Errorf("KV override %q: type %q is not int, float, bool or str", s, typ)
}

// ParsePruneLayers parses a comma-separated list of block numbers, sorted
// and without duplicates.
func ParsePruneLayers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid layer id %q", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	uniq := out[:0]
	for i, n := range out {
		if i == 0 || n != out[i-1] {
			uniq = append(uniq, n)
		}
	}
	return uniq, nil
}

// FileTypeFor is the general.file_type recorded when the target is a plain
// ggml type rather than a preset: the file type whose default is that type
// (for the K-quants, the _S file types, whose tensors are mostly that type;
// for IQ2_S, IQ2_M). See docs/compat.md.
func FileTypeFor(t gguf.Type) gguf.FileType {
	if ft, ok := plainFileType[t]; ok {
		return ft
	}
	return gguf.FileTypeGuessed
}

var plainFileType = map[gguf.Type]gguf.FileType{
	gguf.F32: gguf.FileTypeAllF32, gguf.F16: gguf.FileTypeF16, gguf.BF16: gguf.FileTypeBF16,
	gguf.Q4_0: gguf.FileTypeQ4_0, gguf.Q4_1: gguf.FileTypeQ4_1, gguf.Q5_0: gguf.FileTypeQ5_0,
	gguf.Q5_1: gguf.FileTypeQ5_1, gguf.Q8_0: gguf.FileTypeQ8_0, gguf.Q2_K: gguf.FileTypeQ2_K_S,
	gguf.Q3_K: gguf.FileTypeQ3_K_S, gguf.Q4_K: gguf.FileTypeQ4_K_S, gguf.Q5_K: gguf.FileTypeQ5_K_S,
	gguf.Q6_K: gguf.FileTypeQ6_K, gguf.IQ2_XXS: gguf.FileTypeIQ2_XXS, gguf.IQ2_XS: gguf.FileTypeIQ2_XS,
	gguf.IQ2_S: gguf.FileTypeIQ2_M, gguf.IQ3_XXS: gguf.FileTypeIQ3_XXS, gguf.IQ3_S: gguf.FileTypeIQ3_S,
	gguf.IQ1_S: gguf.FileTypeIQ1_S, gguf.IQ1_M: gguf.FileTypeIQ1_M, gguf.IQ4_NL: gguf.FileTypeIQ4_NL,
	gguf.IQ4_XS: gguf.FileTypeIQ4_XS, gguf.TQ1_0: gguf.FileTypeTQ1_0, gguf.TQ2_0: gguf.FileTypeTQ2_0,
	gguf.MXFP4: gguf.FileTypeMXFP4_MOE, gguf.NVFP4: gguf.FileTypeNVFP4, gguf.Q1_0: gguf.FileTypeQ1_0,
	gguf.Q2_0: gguf.FileTypeQ2_0,
}

// TensorReport describes what happened to one tensor.
type TensorReport struct {
	Index, Count     int
	Name             string
	Shape            []uint64
	OldType, NewType gguf.Type
	OldSize, NewSize uint64
	// Fallback is set when the row length forced a fallback type.
	Fallback bool
	// Warning holds llama-quantize's warnings for this tensor (a missing
	// or mismatched imatrix entry).
	Warning string
}

// Report summarises a run.
type Report struct {
	Tensors    []TensorReport
	SizeBefore uint64
	SizeAfter  uint64
	Elements   uint64
	Fallbacks  int
	// NeedsImatrix is set by a dry run that found tensors which will need
	// importance weights.
	NeedsImatrix bool
	// Outputs are the files written.
	Outputs []string
}

// BitsPerWeight returns the bits per weight before and after.
func (r *Report) BitsPerWeight() (before, after float64) {
	if r.Elements == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(r.SizeBefore) * 8 / float64(r.Elements), float64(r.SizeAfter) * 8 / float64(r.Elements)
}
