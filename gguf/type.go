package gguf

import (
	"fmt"
	"math/bits"
	"strings"
)

// Type is a ggml tensor type (enum ggml_type).
type Type uint32

// The ggml tensor types, numbered as in ggml.h. Ids 4, 5, 31–33 and 36–38
// were removed from ggml; they are known (to name them in errors) but refused.
const (
	F32      Type = 0
	F16      Type = 1
	Q4_0     Type = 2
	Q4_1     Type = 3
	Q4_2     Type = 4 // removed
	Q4_3     Type = 5 // removed
	Q5_0     Type = 6
	Q5_1     Type = 7
	Q8_0     Type = 8
	Q8_1     Type = 9
	Q2_K     Type = 10
	Q3_K     Type = 11
	Q4_K     Type = 12
	Q5_K     Type = 13
	Q6_K     Type = 14
	Q8_K     Type = 15
	IQ2_XXS  Type = 16
	IQ2_XS   Type = 17
	IQ3_XXS  Type = 18
	IQ1_S    Type = 19
	IQ4_NL   Type = 20
	IQ3_S    Type = 21
	IQ2_S    Type = 22
	IQ4_XS   Type = 23
	I8       Type = 24
	I16      Type = 25
	I32      Type = 26
	I64      Type = 27
	F64      Type = 28
	IQ1_M    Type = 29
	BF16     Type = 30
	Q4_0_4_4 Type = 31 // removed
	Q4_0_4_8 Type = 32 // removed
	Q4_0_8_8 Type = 33 // removed
	TQ1_0    Type = 34
	TQ2_0    Type = 35
	IQ4_NL44 Type = 36 // removed (IQ4_NL_4_4)
	IQ4_NL48 Type = 37 // removed (IQ4_NL_4_8)
	IQ4_NL88 Type = 38 // removed (IQ4_NL_8_8)
	MXFP4    Type = 39
	NVFP4    Type = 40
	Q1_0     Type = 41
	Q2_0     Type = 42

	// TypeCount is GGML_TYPE_COUNT: every id below it is known.
	TypeCount Type = 43
)

// TypeTraits describes the storage of one ggml type: BlockSize values are
// stored in TypeSize bytes.
type TypeTraits struct {
	Name      string
	BlockSize int
	TypeSize  int
	Quantized bool
	Removed   bool
}

// typeTable is ggml's type_traits (ggml/src/ggml.c) reduced to the storage
// facts; block and type sizes also in gguf-py's GGML_QUANT_SIZES.
var typeTable = [TypeCount]TypeTraits{
	F32:      {"F32", 1, 4, false, false},
	F16:      {"F16", 1, 2, false, false},
	Q4_0:     {"Q4_0", 32, 18, true, false},
	Q4_1:     {"Q4_1", 32, 20, true, false},
	Q4_2:     {"Q4_2", 0, 0, true, true},
	Q4_3:     {"Q4_3", 0, 0, true, true},
	Q5_0:     {"Q5_0", 32, 22, true, false},
	Q5_1:     {"Q5_1", 32, 24, true, false},
	Q8_0:     {"Q8_0", 32, 34, true, false},
	Q8_1:     {"Q8_1", 32, 36, true, false},
	Q2_K:     {"Q2_K", 256, 84, true, false},
	Q3_K:     {"Q3_K", 256, 110, true, false},
	Q4_K:     {"Q4_K", 256, 144, true, false},
	Q5_K:     {"Q5_K", 256, 176, true, false},
	Q6_K:     {"Q6_K", 256, 210, true, false},
	Q8_K:     {"Q8_K", 256, 292, true, false},
	IQ2_XXS:  {"IQ2_XXS", 256, 66, true, false},
	IQ2_XS:   {"IQ2_XS", 256, 74, true, false},
	IQ3_XXS:  {"IQ3_XXS", 256, 98, true, false},
	IQ1_S:    {"IQ1_S", 256, 50, true, false},
	IQ4_NL:   {"IQ4_NL", 32, 18, true, false},
	IQ3_S:    {"IQ3_S", 256, 110, true, false},
	IQ2_S:    {"IQ2_S", 256, 82, true, false},
	IQ4_XS:   {"IQ4_XS", 256, 136, true, false},
	I8:       {"I8", 1, 1, false, false},
	I16:      {"I16", 1, 2, false, false},
	I32:      {"I32", 1, 4, false, false},
	I64:      {"I64", 1, 8, false, false},
	F64:      {"F64", 1, 8, false, false},
	IQ1_M:    {"IQ1_M", 256, 56, true, false},
	BF16:     {"BF16", 1, 2, false, false},
	Q4_0_4_4: {"Q4_0_4_4", 0, 0, true, true},
	Q4_0_4_8: {"Q4_0_4_8", 0, 0, true, true},
	Q4_0_8_8: {"Q4_0_8_8", 0, 0, true, true},
	TQ1_0:    {"TQ1_0", 256, 54, true, false},
	TQ2_0:    {"TQ2_0", 256, 66, true, false},
	IQ4_NL44: {"IQ4_NL_4_4", 0, 0, true, true},
	IQ4_NL48: {"IQ4_NL_4_8", 0, 0, true, true},
	IQ4_NL88: {"IQ4_NL_8_8", 0, 0, true, true},
	MXFP4:    {"MXFP4", 32, 17, true, false},
	NVFP4:    {"NVFP4", 64, 36, true, false},
	Q1_0:     {"Q1_0", 128, 18, true, false},
	Q2_0:     {"Q2_0", 64, 18, true, false},
}

// Known reports whether t is an id below TypeCount (removed ids included).
func (t Type) Known() bool { return t < TypeCount }

// Valid reports whether t is a known type that ggml can still store.
func (t Type) Valid() bool { return t < TypeCount && !typeTable[t].Removed }

// Traits returns the storage facts of t; the zero TypeTraits for an unknown id.
func (t Type) Traits() TypeTraits {
	if t < TypeCount {
		return typeTable[t]
	}
	return TypeTraits{}
}

// String returns ggml's name of t ("Q4_K"), or "type(N)" for an unknown id.
func (t Type) String() string {
	if t < TypeCount {
		return typeTable[t].Name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of values per block (0 for removed or unknown ids).
func (t Type) BlockSize() int { return t.Traits().BlockSize }

// TypeSize is the number of bytes per block (0 for removed or unknown ids).
func (t Type) TypeSize() int { return t.Traits().TypeSize }

// Quantized reports whether t stores blocks of quantized values.
func (t Type) Quantized() bool { return t.Traits().Quantized }

// RowSize is the byte size of ne values of type t (ggml_row_size); ok is
// false when ne is not a whole number of blocks or the size overflows.
func (t Type) RowSize(ne uint64) (size uint64, ok bool) {
	tr := t.Traits()
	if tr.BlockSize == 0 || ne%uint64(tr.BlockSize) != 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(ne/uint64(tr.BlockSize), uint64(tr.TypeSize))
	return lo, hi == 0
}

// Types returns every valid (non-removed) type in id order.
func Types() []Type {
	var out []Type
	for t := Type(0); t < TypeCount; t++ {
		if t.Valid() {
			out = append(out, t)
		}
	}
	return out
}

// ParseType resolves a ggml type name, case-insensitively ("q4_k", "BF16").
// Removed types are refused.
func ParseType(name string) (Type, error) {
	for t := Type(0); t < TypeCount; t++ {
		if strings.EqualFold(typeTable[t].Name, name) {
			if typeTable[t].Removed {
				return 0, fmt.Errorf("%w: ggml type %s was removed from ggml", ErrUnsupported, typeTable[t].Name)
			}
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown ggml type %q", ErrUnsupported, name)
}
