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

// directKey is a (source dtype, output type) pair.
type directKey struct {
	from readers.DType
	to   gguf.Type
}

// directConversions are the pairs with a direct conversion, and the size of
// one source value.
var directConversions = map[directKey]directFunc{
	{readers.F32, gguf.F32}:   copyBytes,
	{readers.F16, gguf.F16}:   copyBytes,
	{readers.BF16, gguf.BF16}: copyBytes,
	{readers.BF16, gguf.F32}:  bf16ToF32,
	{readers.F16, gguf.F32}:   f16ToF32,
	{readers.BF16, gguf.F16}:  func(dst, src []byte) { lookup16(dst, src, bf16ToF16Table()) },
	{readers.F16, gguf.BF16}:  func(dst, src []byte) { lookup16(dst, src, f16ToBF16Table()) },
}

// directFor returns the direct conversion from a source dtype to an output
// type, if there is one.
func directFor(from readers.DType, to gguf.Type) (directFunc, bool) {
	f, ok := directConversions[directKey{from, to}]
	return f, ok
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

func lookup16(dst, src []byte, table *[1 << 16]uint16) {
	dst = dst[:len(src)]
	for i := 0; i+1 < len(src); i += 2 {
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
// the stored values of src (dtype F32, F16 or BF16), or -1. As
// quantize.CheckFinite does for float32, it ORs exponent+1 over groups so
// that only a group holding one is scanned value by value.
func firstNonFiniteStored(src []byte, dt readers.DType) int {
	if dt == readers.F32 {
		n := len(src) / 4
		i := 0
		for ; i+16 <= n; i += 16 {
			var acc uint32
			for j := i; j < i+16; j++ {
				acc |= binary.LittleEndian.Uint32(src[4*j:])&0x7F800000 + 0x00800000
			}
			if acc&0x80000000 != 0 {
				break
			}
		}
		for ; i < n; i++ {
			if binary.LittleEndian.Uint32(src[4*i:])&0x7F800000 == 0x7F800000 {
				return i
			}
		}
		return -1
	}
	var mask, one uint16 = 0x7F80, 0x0080 // BF16: 8 exponent bits
	if dt == readers.F16 {
		mask, one = 0x7C00, 0x0400 // F16: 5 exponent bits
	}
	n := len(src) / 2
	i := 0
	for ; i+16 <= n; i += 16 {
		var acc uint16
		for j := i; j < i+16; j++ {
			acc |= binary.LittleEndian.Uint16(src[2*j:])&mask + one
		}
		if acc&0x8000 != 0 {
			break
		}
	}
	for ; i < n; i++ {
		if binary.LittleEndian.Uint16(src[2*i:])&mask == mask {
			return i
		}
	}
	return -1
}

// nonFiniteError is the error the float32 route gives for a non-finite
// stored value at index i of rows starting at row0.
func nonFiniteError(src []byte, dt readers.DType, i int, cols int64, row0 int64) error {
	v := make([]float32, 1)
	size := dt.Size()
	_ = readers.ToFloat32(v, src[i*size:(i+1)*size], dt)
	return fmt.Errorf("%w: %v at row %d, column %d", quantize.ErrNonFinite, v[0], row0+int64(i)/cols, int64(i)%cols)
}
