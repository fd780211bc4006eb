package quantize

import (
	"encoding/binary"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// The legacy block types Q4_0, Q4_1, Q5_0 and Q5_1 (32 values per block),
// ported from ggml-quants.c. Without importance weights ggml_quantize_chunk
// runs quantize_row_qX_Y_ref (a direct max/min scale, truncating casts);
// with weights it runs quantize_row_qX_Y_impl, a weighted scale search whose
// weights are qw·√(σ²+x²) with σ² the mean square of the whole row.
//
// Block layouts (ggml-common.h): Q4_0 d·qs[16]; Q4_1 d·m·qs[16];
// Q5_0 d·qh[4]·qs[16]; Q5_1 d·m·qh[4]·qs[16]; d and m are fp16. Value j of
// a block sits in the low nibble of qs[j] for j < 16 and in the high nibble
// of qs[j-16] otherwise; for the 5-bit types bit j of the little-endian
// uint32 qh holds its fifth bit.

const qkLegacy = 32

func init() {
	register(gguf.Q4_0, legacyCodec(encodeQ4_0, encodeQ4_0Ref, decodeQ4_0))
	register(gguf.Q4_1, legacyCodec(encodeQ4_1, encodeQ4_1Ref, decodeQ4_1))
	register(gguf.Q5_0, legacyCodec(encodeQ5_0, encodeQ5_0Ref, decodeQ5_0))
	register(gguf.Q5_1, legacyCodec(encodeQ5_1, encodeQ5_1Ref, decodeQ5_1))
}

// legacyCodec is the codec of a legacy type whose encoder is enc and whose
// quantize_row_qX_Y_ref is ref. ref stops at the first block holding a NaN
// or an infinity and reports whether it met none, which it learns from the
// block maximum or minimum it computes anyway: that is the fused
// encodeFinite without weights.
func legacyCodec(enc func(dst []byte, src, imatrix []float32), ref func(dst []byte, src []float32) bool, dec func(dst []float32, src []byte)) *codec {
	return &codec{
		encodeRow: enc,
		encodeFinite: func(dst []byte, src, imatrix []float32) bool {
			if imatrix == nil {
				return ref(dst, src)
			}
			return finiteThen(enc, dst, src, imatrix)
		},
		decodeRow:   dec,
		usesImatrix: true,
	}
}

// rowSigma2 is σ² of the legacy _impl encoders: Σx²/n over the whole row,
// accumulated in float in column order.
func rowSigma2(x []float32) float32 {
	var sum float32
	for _, v := range x {
		sum += float32(v * v)
	}
	return float32(sum / float32(len(x)))
}

// legacyWeights fills w with ggml's qw[j]·sqrtf(σ²+x[j]²).
func legacyWeights(w *[qkLegacy]float32, x, qw []float32, sigma2 float32) {
	x, qw = x[:qkLegacy], qw[:qkLegacy]
	for j := range w {
		w[j] = float32(qw[j] * sqrt32(sigma2+float32(x[j]*x[j])))
	}
}

// legacyRuns calls fn on the runs of up to eight consecutive blocks of 32
// of src (i0 the index of the first, x their values) with their weights w
// (legacyWeights, σ² of the whole row): the unit of the vector searches.
func legacyRuns(src, imatrix []float32, fn func(i0 int, x, w []float32)) {
	sigma2 := rowSigma2(src)
	var w [qkK]float32
	nb := len(src) / qkLegacy
	for i0 := 0; i0 < nb; i0 += 8 {
		k := min(8, nb-i0)
		x := src[i0*qkLegacy : (i0+k)*qkLegacy]
		for b := range k {
			legacyWeights((*[qkLegacy]float32)(w[qkLegacy*b:]), x[qkLegacy*b:], imatrix[(i0+b)*qkLegacy:], sigma2)
		}
		fn(i0, x, w[:k*qkLegacy])
	}
}

// qxSearchBlocks is makeQXQuants on the len(d) ≤ 8 consecutive blocks of
// 32 of x with weights w in the same layout: block b's levels go to L[32b:],
// its scale to d[b]. A run of eight goes through qxSearch8.
func qxSearchBlocks(nmax int, x []float32, L []int8, w []float32, d []float32) {
	if len(d) == 8 {
		qxSearch8(nmax, x, qkLegacy, L, w, d)
		return
	}
	for b := range d {
		d[b] = makeQXQuants(nmax, x[qkLegacy*b:qkLegacy*(b+1)], L[qkLegacy*b:], w[qkLegacy*b:qkLegacy*(b+1)])
	}
}

// qkxSearchBlocks is makeQKXQuants with the parameters of the weighted
// Q4_1 and Q5_1 on the len(d) ≤ 8 consecutive blocks of 32 of x with
// weights w in the same layout: block b's levels go to L[32b:], its scale
// and -min to d[b] and negMin[b]. A run of eight goes through qkxSearch8.
func qkxSearchBlocks(nmax int, x, w []float32, L []uint8, d, negMin []float32) {
	p := qkxParams{-0.9, 0.05, 36, false}
	if len(d) == 8 {
		qkxSearch8(nmax, x, qkLegacy, w, L, p, d, negMin)
		return
	}
	var Laux [qkLegacy]uint8
	for b := range d {
		g := x[qkLegacy*b : qkLegacy*(b+1)]
		d[b], negMin[b] = makeQKXQuants(nmax, g, w[qkLegacy*b:qkLegacy*(b+1)], L[qkLegacy*b:], Laux[:], p.rmin, p.rdelta, p.nstep, p.useMAD)
	}
}

// minMax returns the minimum and maximum of x starting from ±FLT_MAX, as
// quantize_row_q4_1_ref and quantize_row_q5_1_ref do, and whether x is
// finite: a value is not when its exponent bits are all ones, and then
// adding 1 to the exponent field carries into bit 31 (firstNonFinite's
// trick), so the check costs no branch.
func minMax(x []float32) (lo, hi float32, finite bool) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	var acc uint32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
		acc |= math.Float32bits(v)&0x7F800000 + 0x00800000
	}
	return lo, hi, acc&0x80000000 == 0
}

// The truncating casts below go through cTruncInt32 because a subnormal
// block maximum makes the inverse scale infinite and x·id ±Inf or NaN, which
// x86-64 converts to INT32_MIN (low byte 0).

// encodeQ4_0 is quantize_q4_0: quantize_row_q4_0_ref without weights,
// quantize_row_q4_0_impl with them.
func encodeQ4_0(dst []byte, src, imatrix []float32) {
	if imatrix == nil {
		encodeQ4_0Ref(dst, src)
		return
	}
	const bs = 18
	var Ls [qkK]int8
	var ds [8]float32
	legacyRuns(src, imatrix, func(i0 int, x, w []float32) {
		k := len(x) / qkLegacy
		qxSearchBlocks(8, x, Ls[:], w, ds[:k])
		for b, d := range ds[:k] {
			y := (*[bs]byte)(dst[(i0+b)*bs:])
			L := (*[qkLegacy]int8)(Ls[qkLegacy*b:])
			putHalf(y[0:], d)
			for j := range 16 {
				y[2+j] = uint8(L[j]) | uint8(L[j+16])<<4
			}
		}
	})
}

// encodeQ4_0RefGeneric is encodeQ4_0Ref in plain Go.
func encodeQ4_0RefGeneric(dst []byte, src []float32) bool {
	const bs = 18
	for i := range len(src) / qkLegacy {
		x := (*[qkLegacy]float32)(src[i*qkLegacy:])
		y := (*[bs]byte)(dst[i*bs:])
		amax := absMaxBits(x[:])
		if amax >= 0x7F800000 {
			return false
		}
		d := signedAt(x[:], amax) / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(y[0:], d)
		if id <= math.MaxFloat32 {
			// A finite id keeps |x·id| ≤ 8 (d is the block's extreme over
			// -8), so x·id + 8.5 lies in [0, 17): the casts are plain
			// truncations.
			for j := range 16 {
				x0 := min(15, int32(float32(x[j]*id)+8.5))
				x1 := min(15, int32(float32(x[j+16]*id)+8.5))
				y[2+j] = uint8(x0) | uint8(x1<<4)
			}
			continue
		}
		for j := range 16 {
			// MIN(15, (int8_t)(x·id + 8.5f)): truncation, not rounding.
			x0 := min(15, int32(int8(cTruncInt32(float32(x[j]*id)+8.5))))
			x1 := min(15, int32(int8(cTruncInt32(float32(x[j+16]*id)+8.5))))
			y[2+j] = uint8(x0) | uint8(x1<<4)
		}
	}
	return true
}

// encodeQ4_1 is quantize_q4_1: quantize_row_q4_1_ref without weights,
// quantize_row_q4_1_impl with them.
func encodeQ4_1(dst []byte, src, imatrix []float32) {
	if imatrix == nil {
		encodeQ4_1Ref(dst, src)
		return
	}
	const bs = 20
	var Ls [qkK]uint8
	var ds, negMins [8]float32
	legacyRuns(src, imatrix, func(i0 int, x, w []float32) {
		k := len(x) / qkLegacy
		qkxSearchBlocks(15, x, w, Ls[:], ds[:k], negMins[:k])
		for b, d := range ds[:k] {
			y := (*[bs]byte)(dst[(i0+b)*bs:])
			L := (*[qkLegacy]uint8)(Ls[qkLegacy*b:])
			putHalf(y[0:], d)
			putHalf(y[2:], -negMins[b])
			for j := range 16 {
				y[4+j] = L[j] | L[j+16]<<4
			}
		}
	})
}

// encodeQ4_1RefGeneric is encodeQ4_1Ref in plain Go.
func encodeQ4_1RefGeneric(dst []byte, src []float32) bool {
	const bs = 20
	for i := range len(src) / qkLegacy {
		x := (*[qkLegacy]float32)(src[i*qkLegacy:])
		y := (*[bs]byte)(dst[i*bs:])
		lo, hi, finite := minMax(x[:])
		if !finite {
			return false
		}
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(y[0:], d)
		putHalf(y[2:], lo)
		if d <= math.MaxFloat32 && id <= math.MaxFloat32 {
			// Finite scales keep (x-min)·id in [0, 15]: plain truncations.
			for j := range 16 {
				x0 := min(15, int32(float32((x[j]-lo)*id)+0.5))
				x1 := min(15, int32(float32((x[j+16]-lo)*id)+0.5))
				y[4+j] = uint8(x0) | uint8(x1<<4)
			}
			continue
		}
		for j := range 16 {
			x0 := min(15, int32(int8(cTruncInt32(float32((x[j]-lo)*id)+0.5))))
			x1 := min(15, int32(int8(cTruncInt32(float32((x[j+16]-lo)*id)+0.5))))
			y[4+j] = uint8(x0) | uint8(x1<<4)
		}
	}
	return true
}

// packQ5 stores 32 five-bit levels as qh (bit j = fifth bit of level j) and
// the nibbles qs.
func packQ5(qh *[4]byte, qs *[16]byte, L *[qkLegacy]uint8) {
	var h uint32
	for j := range 16 {
		l0, l1 := L[j], L[j+16]
		qs[j] = l0&0x0F | (l1&0x0F)<<4
		h |= uint32(l0&0x10) >> 4 << j
		h |= uint32(l1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(qh[:], h)
}

// encodeQ5_0 is quantize_q5_0: quantize_row_q5_0_ref without weights,
// quantize_row_q5_0_impl with them.
func encodeQ5_0(dst []byte, src, imatrix []float32) {
	if imatrix == nil {
		encodeQ5_0Ref(dst, src)
		return
	}
	const bs = 22
	var Ls [qkK]int8
	var L [qkLegacy]uint8
	var ds [8]float32
	legacyRuns(src, imatrix, func(i0 int, x, w []float32) {
		k := len(x) / qkLegacy
		qxSearchBlocks(16, x, Ls[:], w, ds[:k])
		for b, d := range ds[:k] {
			y := (*[bs]byte)(dst[(i0+b)*bs:])
			putHalf(y[0:], d)
			for j, l := range Ls[qkLegacy*b : qkLegacy*(b+1)] {
				L[j] = uint8(l)
			}
			packQ5((*[4]byte)(y[2:]), (*[16]byte)(y[6:]), &L)
		}
	})
}

// encodeQ5_0RefGeneric is encodeQ5_0Ref in plain Go.
func encodeQ5_0RefGeneric(dst []byte, src []float32) bool {
	const bs = 22
	var L [qkLegacy]uint8
	for i := range len(src) / qkLegacy {
		x := (*[qkLegacy]float32)(src[i*qkLegacy:])
		y := (*[bs]byte)(dst[i*bs:])
		amax := absMaxBits(x[:])
		if amax >= 0x7F800000 {
			return false
		}
		d := signedAt(x[:], amax) / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(y[0:], d)
		if id <= math.MaxFloat32 {
			// A finite id keeps x·id + 16.5 in [0, 33): plain truncations.
			for j, v := range x {
				L[j] = uint8(min(31, int32(float32(v*id)+16.5)))
			}
		} else {
			for j, v := range x {
				// MIN(31, (int8_t)(x·id + 16.5f)) stored in a uint8_t.
				L[j] = uint8(min(31, int32(int8(cTruncInt32(float32(v*id)+16.5)))))
			}
		}
		packQ5((*[4]byte)(y[2:]), (*[16]byte)(y[6:]), &L)
	}
	return true
}

// encodeQ5_1 is quantize_q5_1: quantize_row_q5_1_ref without weights,
// quantize_row_q5_1_impl with them.
func encodeQ5_1(dst []byte, src, imatrix []float32) {
	if imatrix == nil {
		encodeQ5_1Ref(dst, src)
		return
	}
	const bs = 24
	var Ls [qkK]uint8
	var ds, negMins [8]float32
	legacyRuns(src, imatrix, func(i0 int, x, w []float32) {
		k := len(x) / qkLegacy
		qkxSearchBlocks(31, x, w, Ls[:], ds[:k], negMins[:k])
		for b, d := range ds[:k] {
			y := (*[bs]byte)(dst[(i0+b)*bs:])
			putHalf(y[0:], d)
			putHalf(y[2:], -negMins[b])
			packQ5((*[4]byte)(y[4:]), (*[16]byte)(y[8:]), (*[qkLegacy]uint8)(Ls[qkLegacy*b:]))
		}
	})
}

// encodeQ5_1RefGeneric is encodeQ5_1Ref in plain Go.
func encodeQ5_1RefGeneric(dst []byte, src []float32) bool {
	const bs = 24
	var L [qkLegacy]uint8
	for i := range len(src) / qkLegacy {
		x := (*[qkLegacy]float32)(src[i*qkLegacy:])
		y := (*[bs]byte)(dst[i*bs:])
		lo, hi, finite := minMax(x[:])
		if !finite {
			return false
		}
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(y[0:], d)
		putHalf(y[2:], lo)
		if d <= math.MaxFloat32 && id <= math.MaxFloat32 {
			// Finite scales keep (x-min)·id in [0, 31]: plain truncations.
			for j, v := range x {
				L[j] = uint8(int32(float32((v-lo)*id) + 0.5))
			}
		} else {
			for j, v := range x {
				// (uint8_t)(x0 + 0.5f): truncation, no clamp.
				L[j] = uint8(cTruncInt32(float32((v-lo)*id) + 0.5))
			}
		}
		packQ5((*[4]byte)(y[4:]), (*[16]byte)(y[8:]), &L)
	}
	return true
}

// decodeQ4_0 is dequantize_row_q4_0: (q-8)·d.
func decodeQ4_0(dst []float32, src []byte) {
	const bs = 18
	for i := range len(src) / bs {
		b := (*[bs]byte)(src[i*bs:])
		y := (*[qkLegacy]float32)(dst[i*qkLegacy:])
		d := halfAt(b[0:])
		for j := range 16 {
			q := b[2+j]
			y[j] = float32(int32(q&0x0F)-8) * d
			y[j+16] = float32(int32(q>>4)-8) * d
		}
	}
}

// decodeQ4_1 is dequantize_row_q4_1: q·d + m.
func decodeQ4_1(dst []float32, src []byte) {
	const bs = 20
	for i := range len(src) / bs {
		b := (*[bs]byte)(src[i*bs:])
		y := (*[qkLegacy]float32)(dst[i*qkLegacy:])
		d := halfAt(b[0:])
		m := halfAt(b[2:])
		for j := range 16 {
			q := b[4+j]
			y[j] = float32(float32(q&0x0F)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// decodeQ5_0 is dequantize_row_q5_0: (q-16)·d.
func decodeQ5_0(dst []float32, src []byte) {
	const bs = 22
	for i := range len(src) / bs {
		b := (*[bs]byte)(src[i*bs:])
		y := (*[qkLegacy]float32)(dst[i*qkLegacy:])
		d := halfAt(b[0:])
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := range 16 {
			q := b[6+j]
			h0 := int32(qh>>j<<4) & 0x10
			h1 := int32(qh>>(j+12)) & 0x10
			y[j] = float32((int32(q&0x0F)|h0)-16) * d
			y[j+16] = float32((int32(q>>4)|h1)-16) * d
		}
	}
}

// decodeQ5_1 is dequantize_row_q5_1: q·d + m.
func decodeQ5_1(dst []float32, src []byte) {
	const bs = 24
	for i := range len(src) / bs {
		b := (*[bs]byte)(src[i*bs:])
		y := (*[qkLegacy]float32)(dst[i*qkLegacy:])
		d := halfAt(b[0:])
		m := halfAt(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		for j := range 16 {
			q := b[8+j]
			h0 := int32(qh>>j<<4) & 0x10
			h1 := int32(qh>>(j+12)) & 0x10
			y[j] = float32(float32(int32(q&0x0F)|h0)*d) + m
			y[j+16] = float32(float32(int32(q>>4)|h1)*d) + m
		}
	}
}
