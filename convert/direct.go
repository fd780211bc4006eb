package convert

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
)

// A direct conversion turns a source tensor's stored bytes into the output
// type's bytes in one pass, for the pairs where the float32 route (widen,
// then encode) is a fixed function of each 16- or 32-bit value: a copy, a
// widening, or a 65536-entry table. It gives the float32 route's bytes,
// rejects the same non-finite values (TestDirectMatchesFloat32 checks every
// 16-bit pattern), and is several times faster.
type directFunc func(dst, src []byte)

// direct is one direct conversion; copy marks the plain copy (same stored
// and output type), which may be done by the kernel.
type direct struct {
	conv directFunc
	copy bool
}

// directKey is a (source dtype, output type) pair.
type directKey struct {
	from readers.DType
	to   gguf.Type
}

// directConversions are the pairs with a direct conversion.
var directConversions = map[directKey]direct{
	{readers.F32, gguf.F32}:   {copyBytes, true},
	{readers.F16, gguf.F16}:   {copyBytes, true},
	{readers.BF16, gguf.BF16}: {copyBytes, true},
	{readers.BF16, gguf.F32}:  {conv: bf16ToF32},
	{readers.F16, gguf.F32}:   {conv: f16ToF32},
	{readers.BF16, gguf.F16}:  {conv: func(dst, src []byte) { lookup16(dst, src, bf16ToF16Table()) }},
	{readers.F16, gguf.BF16}:  {conv: func(dst, src []byte) { lookup16(dst, src, f16ToBF16Table()) }},
}

// directFor returns the direct conversion from a source dtype to an output
// type, if there is one.
func directFor(from readers.DType, to gguf.Type) (direct, bool) {
	d, ok := directConversions[directKey{from, to}]
	return d, ok
}

func copyBytes(dst, src []byte) { copy(dst, src) }

func bf16ToF32(dst, src []byte) {
	for i := 0; i+1 < len(src); i += 2 {
		binary.LittleEndian.PutUint32(dst[2*i:], uint32(binary.LittleEndian.Uint16(src[i:]))<<16)
	}
}

func f16ToF32(dst, src []byte) {
	for i := 0; i+1 < len(src); i += 2 {
		binary.LittleEndian.PutUint32(dst[2*i:], math.Float32bits(quantize.FP16ToFP32(binary.LittleEndian.Uint16(src[i:]))))
	}
}

// lookup16 maps each 16-bit value of src through table into dst, four
// values per 64-bit load and store (2.6x the one-at-a-time loop).
func lookup16(dst, src []byte, table *[1 << 16]uint16) {
	dst = dst[:len(src)]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		v := binary.LittleEndian.Uint64(src[i:])
		o := uint64(table[uint16(v)]) | uint64(table[uint16(v>>16)])<<16 |
			uint64(table[uint16(v>>32)])<<32 | uint64(table[uint16(v>>48)])<<48
		binary.LittleEndian.PutUint64(dst[i:], o)
	}
	for ; i+1 < len(src); i += 2 {
		binary.LittleEndian.PutUint16(dst[i:], table[binary.LittleEndian.Uint16(src[i:])])
	}
}

// bf16ToF16Table maps each BF16 pattern to the F16 the float32 route gives
// (exact widening, then ggml's rounding to half).
var bf16ToF16Table = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for b := range t {
		t[b] = quantize.FP32ToFP16(math.Float32frombits(uint32(b) << 16))
	}
	return &t
})

// f16ToBF16Table maps each F16 pattern to the BF16 the float32 route gives.
var f16ToBF16Table = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for h := range t {
		t[h] = quantize.FP32ToBF16(quantize.FP16ToFP32(uint16(h)))
	}
	return &t
})

// firstNonFiniteStored returns the index of the first NaN or infinity among
// the stored values of src (dtype F32, F16 or BF16), or -1. A value is
// non-finite when its exponent bits are all ones. Eight bytes at a time
// hold two or four values; masking each lane to its exponent and adding
// one unit of exponent sets the lane's top bit exactly when the exponent
// was all ones, and cannot carry into the next lane (the sum is at most
// the lane's top bit). OR-ing that over 64 bytes tells without a branch per
// value whether they hold one; only such a group is scanned value by value.
func firstNonFiniteStored(src []byte, dt readers.DType) int {
	size := dt.Size()
	var mask, one, top uint64
	switch dt {
	case readers.F32:
		mask, one, top = 0x7F8000007F800000, 0x0080000000800000, 0x8000000080000000
	case readers.F16:
		mask, one, top = 0x7C007C007C007C00, 0x0400040004000400, 0x8000800080008000
	default: // BF16
		mask, one, top = 0x7F807F807F807F80, 0x0080008000800080, 0x8000800080008000
	}
	const group = 64
	i := 0
	for ; i+group <= len(src); i += group {
		var acc uint64
		for j := i; j < i+group; j += 8 {
			acc |= binary.LittleEndian.Uint64(src[j:])&mask + one
		}
		if acc&top != 0 {
			break
		}
	}
	lane := mask & (1<<(8*size) - 1)
	for ; i+size <= len(src); i += size {
		var v uint64
		if size == 4 {
			v = uint64(binary.LittleEndian.Uint32(src[i:]))
		} else {
			v = uint64(binary.LittleEndian.Uint16(src[i:]))
		}
		if v&lane == lane {
			return i / size
		}
	}
	return -1
}

// nonFiniteError is the error the float32 route gives for a non-finite
// stored value at index i of a piece whose first value is element first of
// the tensor.
func nonFiniteError(src []byte, dt readers.DType, i int, cols, first int64) error {
	v := make([]float32, 1)
	size := dt.Size()
	_ = readers.ToFloat32(v, src[i*size:(i+1)*size], dt)
	at := first + int64(i)
	return fmt.Errorf("%w: %v at row %d, column %d", quantize.ErrNonFinite, v[0], at/cols, at%cols)
}
