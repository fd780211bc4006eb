package quantize

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Validate reports whether data, whole blocks of type t, passes
// ggml_validate_row_data (ggml/src/ggml-quants.c), the check llama-quantize
// runs on every quantized chunk and the loader runs on request. It returns
// nil or an error wrapping ErrInvalidData with ggml's diagnosis:
//   - the size must be a multiple of the type size;
//   - F32, F16, F64 elements and the float/fp16 scales of block types
//     (d, and m or dmin where the block has one) must be finite: "found nan
//     value at block N" names the first bad element or block (for F64, a
//     finite double that overflows float also fails, as ggml narrows it);
//   - BF16 counts the NaNs, then the infinities, of the whole buffer;
//   - IQ1_M checks the fp16 scale packed into the top nibbles of its scales;
//   - MXFP4 refuses the E8M0 exponent 0xFF; NVFP4 and the integer types
//     accept any bytes;
//   - Q8_1 and every removed or unknown id are an "invalid type", as in ggml.
func Validate(t gguf.Type, data []byte) error {
	if t >= gguf.TypeCount || t.TypeSize() == 0 {
		// ggml would divide by the zero type size of a removed id; refuse it.
		return fmt.Errorf("%w: invalid type %d", ErrInvalidData, uint32(t))
	}
	ts := t.TypeSize()
	if len(data)%ts != 0 {
		return fmt.Errorf("%w: invalid size %d for type %s (type size = %d)", ErrInvalidData, len(data), t, ts)
	}
	nb := len(data) / ts
	switch t {
	case gguf.BF16:
		if halvesFinite(data, 0x7F80) {
			return nil
		}
		return validateBF16(data, nb)
	case gguf.F16:
		if halvesFinite(data, 0x7C00) {
			return nil
		}
		for i := range nb {
			if err := validateHalf(t, binary.LittleEndian.Uint16(data[2*i:]), i); err != nil {
				return err
			}
		}
	case gguf.F32:
		for i := range nb {
			if err := validateFloat(t, math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])), i); err != nil {
				return err
			}
		}
	case gguf.F64:
		for i := range nb {
			// validate_float takes a float: the double is narrowed first.
			f := float32(math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:])))
			if err := validateFloat(t, f, i); err != nil {
				return err
			}
		}
	case gguf.Q8_K:
		for i := range nb {
			if err := validateFloat(t, math.Float32frombits(binary.LittleEndian.Uint32(data[i*ts:])), i); err != nil {
				return err
			}
		}
	case gguf.MXFP4:
		for i := range nb {
			if e := data[i*ts]; e == 0xFF {
				return fmt.Errorf("%w: %s: found invalid e value %d at block %d", ErrInvalidData, t, e, i)
			}
		}
	case gguf.IQ1_M:
		for i := range nb {
			sc := data[i*ts+48 : i*ts+56] // scales[8], read as four uint16
			w := func(k int) uint16 { return binary.LittleEndian.Uint16(sc[2*k:]) }
			h := w(0)>>12 | (w(1)>>8)&0x00F0 | (w(2)>>4)&0x0F00 | w(3)&0xF000
			if err := validateHalf(t, h, i); err != nil {
				return err
			}
		}
	case gguf.NVFP4, gguf.I8, gguf.I16, gguf.I32, gguf.I64:
		// UE4M3 scales are bytes: every value is accepted; integers too.
	default:
		offs := halfFieldOffsets[t]
		if len(offs) == 0 {
			return fmt.Errorf("%w: invalid type %d", ErrInvalidData, uint32(t))
		}
		for i := range nb {
			for _, off := range offs {
				if err := validateHalf(t, binary.LittleEndian.Uint16(data[i*ts+off:]), i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// halfFieldOffsets lists, per block type, the byte offsets of the fp16
// fields ggml_validate_row_data checks (d, then m or dmin), from the block
// structs of ggml-common.h. Types without an entry here or in Validate's
// switch (Q8_1) are invalid for ggml.
var halfFieldOffsets = [gguf.TypeCount][]int{
	gguf.Q1_0:    {0},
	gguf.Q2_0:    {0},
	gguf.Q4_0:    {0},
	gguf.Q4_1:    {0, 2},
	gguf.Q5_0:    {0},
	gguf.Q5_1:    {0, 2},
	gguf.Q8_0:    {0},
	gguf.Q2_K:    {80, 82}, // scales[16], qs[64], d, dmin
	gguf.Q3_K:    {108},    // hmask[32], qs[64], scales[12], d
	gguf.Q4_K:    {0, 2},
	gguf.Q5_K:    {0, 2},
	gguf.Q6_K:    {208}, // ql[128], qh[64], scales[16], d
	gguf.TQ1_0:   {52},  // qs[48], qh[4], d
	gguf.TQ2_0:   {64},  // qs[64], d
	gguf.IQ1_S:   {0},
	gguf.IQ2_XXS: {0},
	gguf.IQ2_XS:  {0},
	gguf.IQ2_S:   {0},
	gguf.IQ3_XXS: {0},
	gguf.IQ3_S:   {0},
	gguf.IQ4_XS:  {0},
	gguf.IQ4_NL:  {0},
}

// validateFloat is ggml's validate_float: infinity is reported before NaN.
func validateFloat(t gguf.Type, f float32, i int) error {
	if math.IsInf(float64(f), 0) {
		return fmt.Errorf("%w: %s: found inf value at block %d", ErrInvalidData, t, i)
	}
	if f != f {
		return fmt.Errorf("%w: %s: found nan value at block %d", ErrInvalidData, t, i)
	}
	return nil
}

// validateHalf is ggml's validate_fp16 on the raw bits.
func validateHalf(t gguf.Type, h uint16, i int) error {
	if h&0x7C00 != 0x7C00 {
		return nil
	}
	what := "inf"
	if h&0x03FF != 0 {
		what = "nan"
	}
	return fmt.Errorf("%w: %s: found %s value at block %d", ErrInvalidData, t, what, i)
}

func validateBF16(data []byte, nb int) error {
	var nans, infs int
	for i := range nb {
		h := binary.LittleEndian.Uint16(data[2*i:]) & 0x7FFF
		switch {
		case h > 0x7F80:
			nans++
		case h == 0x7F80:
			infs++
		}
	}
	if nans > 0 {
		return fmt.Errorf("%w: found %d NaNs in row of %d BF16 values", ErrInvalidData, nans, nb)
	}
	if infs > 0 {
		return fmt.Errorf("%w: found %d infinities in row of %d BF16 values", ErrInvalidData, infs, nb)
	}
	return nil
}
