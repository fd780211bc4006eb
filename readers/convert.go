package readers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// ErrDType is returned for an element type a conversion does not know.
var ErrDType = errors.New("readers: unsupported dtype")

// Size returns the size in bytes of one element of d, or 0 when d is not
// one of the known element types.
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16, I16, U16:
		return 2
	case F8E4M3, F8E5M2, F8E8M0, I8, U8, Bool:
		return 1
	}
	return 0
}

// Valid reports whether d is one of the known element types.
func (d DType) Valid() bool { return d.Size() != 0 }

// ParseDType returns the DType named s (the safetensors spelling: "F32",
// "BF16", "F8_E4M3", "BOOL" …), or ErrDType.
func ParseDType(s string) (DType, error) {
	d := DType(s)
	if !d.Valid() {
		return Unknown, fmt.Errorf("%w %q", ErrDType, s)
	}
	return d, nil
}

// ToFloat32 converts the little-endian elements in src, of type dt, to
// float32 values in dst. len(src) must be len(dst) × dt.Size().
//
// Every conversion is exact where float32 can hold the value (F16, BF16,
// F8_E4M3, F8_E5M2, integers up to 2^24, BOOL as 0/1). F64 and wider
// integers round to the nearest float32, ties to even — what numpy's
// astype(float32) does. F8_E4M3 is the "fn" variant (torch.float8_e4m3fn):
// no infinities, S.1111.111 is NaN, largest finite value 448. NaN bits
// follow torch's conversions, so digests of converted values match
// torch's: BF16 NaNs pass unchanged, F16 and F8_E5M2 NaNs keep sign and
// payload and are made quiet, F8_E4M3 NaN becomes sign|0x7FF00000.
func ToFloat32(dst []float32, src []byte, dt DType) error {
	size := dt.Size()
	if size == 0 {
		return fmt.Errorf("%w %q", ErrDType, string(dt))
	}
	if len(src) != len(dst)*size {
		return fmt.Errorf("%w: converting %s: %d bytes for %d values (want %d)", ErrShape, dt, len(src), len(dst), len(dst)*size)
	}
	le := binary.LittleEndian
	switch dt {
	case F32:
		convertF32(dst, src)
	case F64:
		for i := range dst {
			// Go's float64→float32 conversion is IEEE round-to-nearest-even.
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case BF16:
		convertBF16(dst, src)
	case F16:
		convertF16(dst, src, f16Table())
	case F8E4M3:
		for i, b := range src {
			dst[i] = f8e4m3Table[b]
		}
	case F8E5M2:
		for i, b := range src {
			dst[i] = f8e5m2Table[b]
		}
	case F8E8M0:
		for i, b := range src {
			dst[i] = F8E8M0ToFloat32(b)
		}
	case I64:
		for i := range dst {
			dst[i] = float32(int64(le.Uint64(src[8*i:])))
		}
	case U64:
		for i := range dst {
			dst[i] = float32(le.Uint64(src[8*i:]))
		}
	case I32:
		for i := range dst {
			dst[i] = float32(int32(le.Uint32(src[4*i:])))
		}
	case U32:
		for i := range dst {
			dst[i] = float32(le.Uint32(src[4*i:]))
		}
	case I16:
		for i := range dst {
			dst[i] = float32(int16(le.Uint16(src[2*i:])))
		}
	case U16:
		for i := range dst {
			dst[i] = float32(le.Uint16(src[2*i:]))
		}
	case I8:
		for i, b := range src {
			dst[i] = float32(int8(b))
		}
	case U8:
		for i, b := range src {
			dst[i] = float32(b)
		}
	case Bool:
		// numpy and torch read any non-zero byte as True.
		for i, b := range src {
			if b != 0 {
				dst[i] = 1
			} else {
				dst[i] = 0
			}
		}
	}
	return nil
}

// F16ToFloat32 returns the float32 value of the IEEE half-precision bits h
// (exact: every half is a float32).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f && mant == 0:
		return math.Float32frombits(sign | 0xff<<23)
	case exp == 0x1f:
		// NaN: the payload moves to the top of float32's mantissa and the
		// NaN is made quiet, as x86's F16C conversion and torch's
		// fp16_ieee_to_fp32_value (a float multiply) both do.
		return math.Float32frombits(sign | 0xff<<23 | 1<<22 | mant<<13)
	case exp != 0: // normal: rebias 15 → 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: mant × 2^-24, exact in float32.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// F8E4M3ToFloat32 returns the float32 value of a float8_e4m3fn byte: 1 sign,
// 4 exponent (bias 7) and 3 mantissa bits, no infinities, S.1111.111 = NaN.
// The NaN is sign|0x7FF00000, the bits torch's fp8e4m3fn_to_fp32_value
// produces, so checksums of converted values match torch's.
func F8E4M3ToFloat32(b uint8) float32 {
	exp := int(b>>3) & 0xf
	mant := int(b & 7)
	if exp == 0xf && mant == 7 {
		return math.Float32frombits(uint32(b&0x80)<<24 | 0x7ff00000)
	}
	var v float32
	switch {
	case exp == 0: // subnormal: mant/8 × 2^-6
		v = float32(mant) * (1.0 / 512)
	default:
		v = float32(8+mant) * float32(math.Ldexp(1, exp-7-3))
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}

// F8E5M2ToFloat32 returns the float32 value of a float8_e5m2 byte: the top
// byte of an IEEE half (1 sign, 5 exponent, 2 mantissa bits, with Inf/NaN).
func F8E5M2ToFloat32(b uint8) float32 { return F16ToFloat32(uint16(b) << 8) }

// F8E8M0ToFloat32 returns the float32 value of a float8_e8m0fnu byte: an
// unsigned, biased (127) exponent alone, 2^(b-127); 0xFF is NaN. The bits
// are torch's: 0 is 2^-127 (a float32 subnormal), NaN the bits
// 0x7F800001 (c10::Float8_e8m0fnu).
func F8E8M0ToFloat32(b uint8) float32 {
	switch b {
	case 0xff:
		return math.Float32frombits(0x7f800001)
	case 0:
		return math.Float32frombits(0x00400000)
	}
	return math.Float32frombits(uint32(b) << 23)
}

// littleEndian is true on hosts whose float32 memory layout is the
// little-endian byte order of safetensors data.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

var (
	f16Once sync.Once
	f16Tab  *[1 << 16]float32

	f8e4m3Table, f8e5m2Table [256]float32
)

func init() {
	for i := range 256 {
		f8e4m3Table[i] = F8E4M3ToFloat32(uint8(i))
		f8e5m2Table[i] = F8E5M2ToFloat32(uint8(i))
	}
}

// f16Table returns the 64K-entry half → float32 table, built on first use
// so that programs never reading F16 do not pay its 256 KiB.
func f16Table() *[1 << 16]float32 {
	f16Once.Do(func() {
		t := new([1 << 16]float32)
		for i := range t {
			t[i] = F16ToFloat32(uint16(i))
		}
		f16Tab = t
	})
	return f16Tab
}

// The hot conversions work on blocks of 8 values through array pointers, so
// that the compiler checks bounds once per block instead of once per value.

func convertF32(dst []float32, src []byte) {
	if littleEndian && len(dst) > 0 {
		// Same bits, same byte order: a plain copy.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), src)
		return
	}
	f32Loop(dst, src)
}

// f32Loop decodes little-endian float32 values on a big-endian host.
func f32Loop(dst []float32, src []byte) {
	n := len(dst) &^ 7
	for i := 0; i < n; i += 8 {
		s := (*[32]byte)(src[4*i:])
		d := (*[8]float32)(dst[i:])
		for j := range d {
			d[j] = math.Float32frombits(binary.LittleEndian.Uint32(s[4*j:]))
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func convertBF16(dst []float32, src []byte) {
	k := bf16Fast(dst, src)
	dst, src = dst[k:], src[2*k:]
	n := len(dst) &^ 7
	for i := 0; i < n; i += 8 {
		s := (*[16]byte)(src[2*i:])
		d := (*[8]float32)(dst[i:])
		for j := 0; j < 8; j += 4 {
			// Four bfloat16 at once: each is the top half of a float32.
			v := binary.LittleEndian.Uint64(s[2*j:])
			d[j] = math.Float32frombits(uint32(v) << 16)
			d[j+1] = math.Float32frombits(uint32(v) & 0xffff0000)
			d[j+2] = math.Float32frombits(uint32(v>>32) << 16)
			d[j+3] = math.Float32frombits(uint32(v>>32) & 0xffff0000)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

func convertF16(dst []float32, src []byte, t *[1 << 16]float32) {
	k := f16Fast(dst, src)
	dst, src = dst[k:], src[2*k:]
	n := len(dst) &^ 7
	for i := 0; i < n; i += 8 {
		s := (*[16]byte)(src[2*i:])
		d := (*[8]float32)(dst[i:])
		for j := range d {
			d[j] = t[uint16(s[2*j])|uint16(s[2*j+1])<<8]
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = t[binary.LittleEndian.Uint16(src[2*i:])]
	}
}
