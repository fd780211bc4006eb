//go:build !purego

package quantize

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDecodeHalvesAsm compares the vector F16 and BF16 decoders with the Go
// forms on every 16-bit pattern (NaNs of both kinds, infinities,
// subnormals, zeros of both signs), at every offset of a row and with
// tails that the vectors leave to Go.
func TestDecodeHalvesAsm(t *testing.T) {
	src := make([]byte, 2<<16)
	for h := range 1 << 16 {
		binary.LittleEndian.PutUint16(src[2*h:], uint16(h))
	}
	for _, c := range []struct {
		name      string
		got, want func([]float32, []byte)
	}{
		{"F16", decodeRowF16, decodeRowF16Generic},
		{"BF16", decodeRowBF16, decodeRowBF16Generic},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []int{1 << 16, 1<<16 - 1, 33, 32, 31, 1} {
				for _, off := range []int{0, 1, 7} {
					s := src[2*off : 2*(off+min(n, 1<<16-off))]
					got := make([]float32, len(s)/2)
					want := make([]float32, len(s)/2)
					c.got(got, s)
					c.want(want, s)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("n %d off %d: value %#04x: %#08x, want %#08x", n, off, binary.LittleEndian.Uint16(s[2*i:]),
								math.Float32bits(got[i]), math.Float32bits(want[i]))
						}
					}
				}
			}
		})
	}
}

// TestFiniteScansAsm compares the vector finiteness scans with the Go forms
// on rows of every length up to 300 with no, one or two non-finite values
// (infinities, quiet and signalling NaNs of both signs, and near misses
// such as the largest finite values) at random places.
func TestFiniteScansAsm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	halfBad := map[uint16][]uint16{
		0x7C00: {0x7C00, 0xFC00, 0x7C01, 0xFE00, 0x7FFF},
		0x7F80: {0x7F80, 0xFF80, 0x7F81, 0xFFC0, 0x7FFF},
	}
	halfNear := map[uint16][]uint16{0x7C00: {0x7BFF, 0xFBFF, 0x3C00}, 0x7F80: {0x7F7F, 0xFF7F, 0x3F80}}
	floatBad := []uint32{0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF}
	floatNear := []uint32{0x7F7FFFFF, 0xFF7FFFFF, 0x00000001}
	for it := range 20000 {
		n := r.IntN(301)
		nbad := r.IntN(3)
		for _, exp := range []uint16{0x7C00, 0x7F80} {
			data := make([]byte, 2*n)
			for i := range n {
				h := uint16(r.Uint32())
				if h&exp == exp {
					h = halfNear[exp][r.IntN(3)]
				}
				binary.LittleEndian.PutUint16(data[2*i:], h)
			}
			for range nbad {
				if n > 0 {
					binary.LittleEndian.PutUint16(data[2*r.IntN(n):], halfBad[exp][r.IntN(5)])
				}
			}
			if got, want := halvesFinite(data, exp), halvesFiniteGeneric(data, exp); got != want {
				t.Fatalf("iter %d exp %#x n %d: halvesFinite %v, want %v", it, exp, n, got, want)
			}
		}
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64())
			if r.IntN(20) == 0 {
				src[i] = math.Float32frombits(floatNear[r.IntN(3)])
			}
		}
		for range nbad {
			if n > 0 {
				src[r.IntN(n)] = math.Float32frombits(floatBad[r.IntN(5)])
			}
		}
		if got, want := firstNonFinite(src), firstNonFiniteGeneric(src); got != want {
			t.Fatalf("iter %d n %d: firstNonFinite %d, want %d", it, n, got, want)
		}
	}
}

// TestEncodeHalvesAsm compares the vector F32, F16 and BF16 encoders with
// the Go forms: every sign, exponent and top mantissa bits (the upper 16 bits of
// the float32) with low bits at and around the rounding ties of normal and
// subnormal halves and of bfloat16, and random ones; then rows with a NaN
// or an infinity, which both must refuse.
func TestEncodeHalvesAsm(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 44))
	lows := []uint32{0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2FFF, 0x3000, 0x3001, 0x4000, 0x7FFF, 0x8000, 0x8001, 0xBFFF, 0xC000, 0xFFFF}
	var src []float32
	for hi := range uint32(1 << 16) {
		if hi&0x7F80 == 0x7F80 {
			continue // NaN and infinity: below
		}
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
		src = append(src, math.Float32frombits(hi<<16|uint32(r.IntN(1<<16))))
	}
	src = src[:len(src)-5] // a tail for the Go form
	for _, c := range []struct {
		name      string
		got, want func([]byte, []float32, []float32) bool
	}{
		{"F32", encodeFiniteF32, encodeFiniteF32Generic},
		{"F16", encodeFiniteF16, encodeFiniteF16Generic},
		{"BF16", encodeFiniteBF16, encodeFiniteBF16Generic},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, want := make([]byte, 4*len(src)), make([]byte, 4*len(src))
			okGot, okWant := c.got(got, src, nil), c.want(want, src, nil)
			if !okGot || !okWant {
				t.Fatalf("finite input refused: %v %v", okGot, okWant)
			}
			if i := slices.Compare(got, want); i != 0 {
				for i := range src {
					if g, w := got[4*i:4*i+4], want[4*i:4*i+4]; !slices.Equal(g, w) {
						t.Fatalf("around %#08x: % x, want % x", math.Float32bits(src[i]), g, w)
					}
				}
			}
			for _, bad := range []uint32{0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF} {
				for _, n := range []int{16, 47, 64, 200} {
					for _, at := range []int{0, n - 1, r.IntN(n)} {
						row := slices.Clone(src[:n])
						row[at] = math.Float32frombits(bad)
						if c.got(make([]byte, 4*n), row, nil) {
							t.Fatalf("n %d: %#08x at %d accepted", n, bad, at)
						}
					}
				}
			}
		})
	}
}
