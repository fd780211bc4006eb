package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// legacyEncode stores float32 rows as convert_legacy_llama.py does: its
// own numpy Q8_0 (legacyQ8_0), every other type as ggml stores it.
func legacyEncode(typ gguf.Type, dst []byte, src []float32, ncols int) error {
	if typ == gguf.Q8_0 {
		return legacyQ8_0(dst, src, ncols)
	}
	return quantize.Encode(typ, dst, src, ncols, nil)
}

// q8Block is the byte size of one Q8_0 block: an f16 scale and 32 int8.
const q8Block = 2 + 32

// legacyQ8_0 is convert_legacy_llama.py's Q8_0QuantizedDataType.quantize,
// which is not ggml's quantize_row_q8_0: per block of 32 values, in
// float32, d = max|x| / 127 and q = round(x / d) with numpy's round half to
// even (ggml multiplies by 1/d and rounds half away from zero, so a few
// values land one step apart); d = 0 gives q = 0; d is stored as f16
// (numpy's round to nearest even, as ggml's FP32_TO_FP16). Rows must be
// whole blocks; non-finite values are refused, as for every other type.
func legacyQ8_0(dst []byte, src []float32, ncols int) error {
	if ncols <= 0 || ncols%32 != 0 || len(src)%ncols != 0 {
		return fmt.Errorf("convert: Q8_0 rows of %d values are not whole blocks of 32", ncols)
	}
	nb := len(src) / 32
	if len(dst) != nb*q8Block {
		return fmt.Errorf("convert: Q8_0 of %d values needs %d bytes, have %d", len(src), nb*q8Block, len(dst))
	}
	if err := quantize.CheckFinite(src, ncols, 0); err != nil {
		return err
	}
	for b := range nb {
		x := src[b*32 : b*32+32]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		out := dst[b*q8Block : (b+1)*q8Block]
		binary.LittleEndian.PutUint16(out, quantize.FP32ToFP16(d))
		for i, v := range x {
			var q int8
			if d != 0 {
				q = int8(math.RoundToEven(float64(v / d)))
			}
			out[2+i] = byte(q)
		}
	}
	return nil
}
