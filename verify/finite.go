package verify

import (
	"encoding/binary"

	"github.com/ggufkit/ggufkit/gguf"
)

// storedScales tells, for the types whose decoded values are non-finite
// only through a non-finite stored float, where those floats sit in a
// block: bytes per block, the offsets of its fp16 fields, and whether the
// block is a single value (F16, BF16, F32). Integer levels times finite fp16
// scales stay far inside float32's range (|d·sc·q| < 65504·64·32), so such a
// tensor decodes to finite values exactly when these fields are finite
// (a non-finite scale meets a zero level as NaN, still non-finite).
var storedScales = map[gguf.Type]struct {
	bytes int
	f16   []int // offsets of fp16 fields
}{
	gguf.F16:  {2, []int{0}},
	gguf.Q4_0: {18, []int{0}},
	gguf.Q4_1: {20, []int{0, 2}},
	gguf.Q5_0: {22, []int{0}},
	gguf.Q5_1: {24, []int{0, 2}},
	gguf.Q8_0: {34, []int{0}},
	gguf.Q2_K: {84, []int{80, 82}},
	gguf.Q3_K: {110, []int{108}},
	gguf.Q4_K: {144, []int{0, 2}},
	gguf.Q5_K: {176, []int{0, 2}},
	gguf.Q6_K: {210, []int{208}},
}

// storedFinite reports, without decoding, whether data (whole blocks of
// type t) decodes to finite values; known is false for the types it cannot
// judge that way (scanTensor then decodes). F32 and BF16 values are read
// as stored.
func storedFinite(t gguf.Type, data []byte) (finite, known bool) {
	switch t {
	case gguf.F32:
		var acc uint32
		for i := 0; i+4 <= len(data); i += 4 {
			acc |= binary.LittleEndian.Uint32(data[i:])&0x7F800000 + 0x00800000
		}
		return acc&0x80000000 == 0, true
	case gguf.BF16:
		var acc uint16
		for i := 0; i+2 <= len(data); i += 2 {
			acc |= binary.LittleEndian.Uint16(data[i:])&0x7F80 + 0x0080
		}
		return acc&0x8000 == 0, true
	}
	s, ok := storedScales[t]
	if !ok || len(data)%s.bytes != 0 {
		return false, false
	}
	// An fp16 is non-finite when its exponent bits are all ones: adding 1
	// to the exponent field then carries into bit 15.
	var acc uint16
	for b := 0; b < len(data); b += s.bytes {
		blk := data[b : b+s.bytes : b+s.bytes]
		for _, o := range s.f16 {
			acc |= binary.LittleEndian.Uint16(blk[o:])&0x7C00 + 0x0400
		}
	}
	return acc&0x8000 == 0, true
}
