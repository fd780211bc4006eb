package quantize

import (
	"encoding/binary"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// The K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K: super-blocks of 256
// values, ported from ggml-quants.c. Without importance weights
// ggml_quantize_chunk runs quantize_row_qX_K_ref on all rows (the same as
// row by row, since blocks never straddle rows); with weights it runs
// quantize_row_qX_K_impl row by row. Q8_K is an activation format that
// ggml_quantize_chunk does not handle; its encoder is quantize_row_q8_K_ref.
//
// Block layouts (ggml-common.h):
//
//	Q2_K  84 bytes: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin
//	Q3_K 110 bytes: hmask[32], qs[64], scales[12] (16 six-bit scales), d
//	Q4_K 144 bytes: d, dmin, scales[12] (8 six-bit scales and mins), qs[128]
//	Q5_K 176 bytes: d, dmin, scales[12], qh[32], qs[128]
//	Q6_K 210 bytes: ql[128], qh[64], scales[16] (int8), d
//	Q8_K 292 bytes: d (float32), qs[256] (int8), bsums[16] (int16)
//
// d and dmin are fp16 except in Q8_K.

const qkK = 256

// Encoded super-block sizes.
const (
	q2KBytes = 84
	q3KBytes = 110
	q4KBytes = 144
	q5KBytes = 176
	q6KBytes = 210
	q8KBytes = 292
)

func init() {
	register(gguf.Q2_K, &codec{encodeRow: encodeQ2K, decodeRow: decodeQ2K, usesImatrix: true})
	register(gguf.Q3_K, &codec{encodeRow: encodeQ3K, decodeRow: decodeQ3K, usesImatrix: true})
	register(gguf.Q4_K, &codec{encodeRow: encodeQ4K, decodeRow: decodeQ4K, usesImatrix: true})
	register(gguf.Q5_K, &codec{encodeRow: encodeQ5K, decodeRow: decodeQ5K, usesImatrix: true})
	register(gguf.Q6_K, &codec{encodeRow: encodeQ6K, decodeRow: decodeQ6K, usesImatrix: true})
	register(gguf.Q8_K, &codec{encodeRow: encodeQ8K, encodeFinite: encodeFiniteQ8K, decodeRow: decodeQ8K})
}

// The σ² and av_x divisions below are by powers of two, which the compiler
// turns into multiplications; their float32(...) keeps them from being fused
// with the following addition (the rounding matters once σ² is subnormal).

// sumSquares is Σx² accumulated in float in order, as the K-quant encoders
// compute it for σ² and av_x.
func sumSquares(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s
}

// imatrixWeights fills w with ggml's qw[l]·sqrtf(σ²+x[l]²) and returns their
// float sum in order (the sw[] of the _impl encoders).
func imatrixWeights(w, x, qw []float32, sigma2 float32) float32 {
	x, qw = x[:len(w)], qw[:len(w)]
	var sum float32
	for l := range w {
		w[l] = float32(qw[l] * sqrt32(sigma2+float32(x[l]*x[l])))
		sum += w[l]
	}
	return sum
}

// packQ2 stores 256 two-bit levels: byte l of each 32-byte group g holds
// values 128g+l, +32, +64 and +96 in bits 0-1, 2-3, 4-5 and 6-7 (the qs of
// Q2_K and Q3_K).
func packQ2(qs *[64]byte, L *[qkK]uint8) {
	for g := range 2 {
		Lg := (*[128]uint8)(L[128*g:])
		q := (*[32]byte)(qs[32*g:])
		for l := range q {
			q[l] = Lg[l] | Lg[l+32]<<2 | Lg[l+64]<<4 | Lg[l+96]<<6
		}
	}
}

// ---------------------------------------------------------------- Q2_K

// encodeQ2K is quantize_q2_K.
func encodeQ2K(dst []byte, src, imatrix []float32) {
	var L [qkK]uint8
	var w [qkK]float32
	var mins, scales [16]float32
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q2KBytes]byte)(dst[i*q2KBytes:])
		sc := (*[16]byte)(y[0:])
		var dAll, dMin float32
		if imatrix == nil {
			// quantize_row_q2_K_ref: weights |x|, mean absolute error.
			for l, v := range x {
				w[l] = abs32(v)
			}
			for h := range 2 {
				qkxSearch8(3, x[128*h:128*h+128], 16, w[128*h:], L[128*h:], qkxParams{-0.5, 0.1, 15, true}, scales[8*h:], mins[8*h:])
			}
			var maxScale, maxMin float32
			for j := range 16 {
				maxScale = max32(maxScale, scales[j])
				maxMin = max32(maxMin, mins[j])
			}
			*sc = [16]byte{}
			if maxScale > 0 {
				iscale := 15 / maxScale
				for j := range sc {
					sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
				}
				putHalf(y[80:], maxScale/15)
			} else {
				putHalf(y[80:], 0)
			}
			if maxMin > 0 {
				iscale := 15 / maxMin
				for j := range sc {
					sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
				}
				putHalf(y[82:], maxMin/15)
			} else {
				putHalf(y[82:], 0)
			}
			dAll = halfAt(y[80:])
			dMin = halfAt(y[82:])
		} else {
			// quantize_row_q2_K_impl: σ² = Σx²/256, then 4-bit scales
			// and mins fitted by make_qp_quants.
			var sw [16]float32
			var Ls, Lm [16]uint8
			sigma2 := float32(sumSquares(x[:]) / qkK)
			qw := imatrix[i*qkK:]
			for j := range 16 {
				sw[j] = imatrixWeights(w[16*j:16*j+16], x[16*j:16*j+16], qw[16*j:], sigma2)
			}
			for h := range 2 {
				qkxSearch8(3, x[128*h:128*h+128], 16, w[128*h:], L[128*h:], qkxParams{-0.9, 0.05, 36, false}, scales[8*h:], mins[8*h:])
			}
			dm := makeQPQuants(15, scales[:], Ls[:], sw[:])
			mm := makeQPQuants(15, mins[:], Lm[:], sw[:])
			putHalf(y[80:], dm)
			putHalf(y[82:], mm)
			dAll = halfAt(y[80:])
			dMin = halfAt(y[82:])
			for j := range sc {
				sc[j] = Ls[j] | Lm[j]<<4
			}
		}
		// Requantize with the stored scales.
		for j := range 16 {
			d := float32(dAll * float32(sc[j]&0xF))
			if d == 0 {
				continue
			}
			dm := float32(dMin * float32(sc[j]>>4))
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = uint8(min(3, max(0, nearestInt((v+dm)/d))))
			}
		}
		packQ2((*[64]byte)(y[16:]), &L)
	}
}

// max32 is C's `if (v > m) m = v`.
func max32(m, v float32) float32 {
	if v > m {
		return v
	}
	return m
}

// decodeQ2K is dequantize_row_q2_K.
func decodeQ2K(dst []float32, src []byte) {
	for i := range len(src) / q2KBytes {
		b := (*[q2KBytes]byte)(src[i*q2KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := halfAt(b[80:])
		dmin := halfAt(b[82:])
		for n := range 2 {
			q := (*[32]byte)(b[16+32*n:])
			for j := range 4 {
				shift := 2 * j
				for h := range 2 {
					sc := b[8*n+2*j+h]
					dl := float32(d * float32(sc&0xF))
					ml := float32(dmin * float32(sc>>4))
					out := y[128*n+32*j+16*h:]
					for l := range 16 {
						out[l] = float32(dl*float32(q[16*h+l]>>shift&3)) - ml
					}
				}
			}
		}
	}
}

// ---------------------------------------------------------------- Q3_K

// encodeQ3K is quantize_q3_K.
func encodeQ3K(dst []byte, src, imatrix []float32) {
	var L [qkK]int8
	var scales, sw [16]float32
	var w [qkK]float32
	var Ls [16]int8
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q3KBytes]byte)(dst[i*q3KBytes:])
		sc := (*[12]byte)(y[96:])
		*sc = [12]byte{}
		if imatrix == nil {
			// quantize_row_q3_K_ref: the scale of largest magnitude (first
			// wins) sets the 6-bit grid iscale = -32/max.
			for h := range 2 {
				q3Search8(4, x[128*h:128*h+128], L[128*h:], scales[8*h:])
			}
			var maxScale, amax float32
			for j := range 16 {
				if a := abs32(scales[j]); a > amax {
					amax, maxScale = a, scales[j]
				}
			}
			if maxScale != 0 {
				iscale := -32 / maxScale
				for j := range 16 {
					// int8_t l = nearest_int(...): wraps before the clamp.
					l := int8(nearestInt(float32(iscale * scales[j])))
					putQ3Scale(sc, j, int32(min(31, max(-32, l))+32))
				}
				putHalf(y[108:], 1/iscale)
			} else {
				putHalf(y[108:], 0)
			}
		} else {
			// quantize_row_q3_K_impl: σ² = 2Σx²/256; the 16 scales are
			// themselves quantized by make_qx_quants(32) weighted by sw.
			sigma2 := float32(float32(2*sumSquares(x[:])) / qkK)
			qw := imatrix[i*qkK:]
			for j := range 16 {
				sw[j] = imatrixWeights(w[16*j:16*j+16], x[16*j:16*j+16], qw[16*j:], sigma2)
			}
			for h := range 2 {
				qxSearch8(4, x[128*h:128*h+128], 16, L[128*h:], w[128*h:128*h+128], scales[8*h:])
			}
			dBlock := makeQXQuants(32, scales[:], Ls[:], sw[:])
			for j, l := range Ls {
				putQ3Scale(sc, j, int32(l))
			}
			putHalf(y[108:], dBlock)
		}
		dAll := halfAt(y[108:])
		var d [16]float32
		for j := range d {
			d[j] = float32(dAll * float32(q3Scale(sc, j)))
		}
		q3Pack(y, x, &d, &L)
	}
}

// q3PackGeneric is q3Pack in plain Go.
func q3PackGeneric(y *[q3KBytes]byte, x *[qkK]float32, d *[16]float32, L *[qkK]int8) {
	for j, dj := range d {
		if dj == 0 {
			continue
		}
		for ii, v := range x[16*j : 16*j+16] {
			L[16*j+ii] = int8(min(3, max(-4, nearestInt(v/dj))) + 4)
		}
	}
	// High bits: bit k of hmask[m] is the high bit of value 32k+m.
	hmask := (*[32]byte)(y[0:])
	*hmask = [32]byte{}
	var low [qkK]uint8
	for j, l := range L {
		if l > 3 {
			hmask[j%32] |= 1 << (j / 32)
			l -= 4
		}
		low[j] = uint8(l)
	}
	packQ2((*[64]byte)(y[32:]), &low)
}

// putQ3Scale ORs the 6-bit value l (0..63) of sub-block j into Q3_K's packed
// scales: low nibble in byte j (j < 8) or the high nibble of byte j-8, top
// two bits in byte 8+j%4 at bit 2·(j/4). scales must start zeroed.
func putQ3Scale(sc *[12]byte, j int, l int32) {
	if j < 8 {
		sc[j] = uint8(l & 0xF)
	} else {
		sc[j-8] |= uint8((l & 0xF) << 4)
	}
	sc[8+j%4] |= uint8((l >> 4) << (2 * (j / 4)))
}

// q3Scale unpacks the signed 6-bit scale of sub-block j (value - 32).
func q3Scale(sc *[12]byte, j int) int8 {
	var lo uint8
	if j < 8 {
		lo = sc[j] & 0xF
	} else {
		lo = sc[j-8] >> 4
	}
	return int8(lo|(sc[8+j%4]>>(2*(j/4))&3)<<4) - 32
}

// decodeQ3K is dequantize_row_q3_K.
func decodeQ3K(dst []float32, src []byte) {
	for i := range len(src) / q3KBytes {
		b := (*[q3KBytes]byte)(src[i*q3KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		dAll := halfAt(b[108:])
		sc := (*[12]byte)(b[96:])
		hm := (*[32]byte)(b[0:])
		for n := range 2 {
			q := (*[32]byte)(b[32+32*n:])
			for j := range 4 {
				shift := 2 * j
				m := uint8(1) << (4*n + j)
				for h := range 2 {
					dl := float32(dAll * float32(q3Scale(sc, 8*n+2*j+h)))
					out := y[128*n+32*j+16*h:]
					for l := range 16 {
						v := int32(q[16*h+l] >> shift & 3)
						if hm[16*h+l]&m == 0 {
							v -= 4
						}
						out[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// ---------------------------------------------------------------- Q4_K, Q5_K

// getScaleMinK4 is ggml's get_scale_min_k4: the 6-bit scale and min of
// sub-block j (0..7) from the 12 packed bytes of Q4_K and Q5_K.
func getScaleMinK4(j int, q *[12]byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 packs the 6-bit scale ls and min lm of sub-block j as
// get_scale_min_k4 reads them back; j must run upwards from 0, as in ggml's
// loop, since j ≥ 4 ORs into bytes written for j-4.
func putScaleMinK4(j int, q *[12]byte, ls, lm uint8) {
	if j < 4 {
		q[j] = ls
		q[j+4] = lm
		return
	}
	q[j+4] = ls&0xF | (lm&0xF)<<4
	q[j-4] |= (ls >> 4) << 6
	q[j] |= (lm >> 4) << 6
}

// fitK4 computes the 8 sub-block scales and mins of one Q4_K/Q5_K
// super-block (nmax 15 or 31) into the block's d, dmin and packed scales,
// and the levels L; it mirrors the first half of quantize_row_q{4,5}_K_ref
// (imatrix nil) and quantize_row_q{4,5}_K_impl. clampImpl applies the
// MIN(63, ·) that only the Q5_K impl has.
func fitK4(x *[qkK]float32, qw []float32, nmax int, L *[qkK]uint8, dm *[4]byte, sc *[12]byte, clampImpl bool) {
	var w, mins, scales [8]float32
	var wt [qkK]float32
	if qw == nil {
		// _ref: weights av_x + |x| with av_x the RMS of the sub-block.
		rmin, nstep := float32(-1), 20
		if nmax == 31 {
			rmin, nstep = -0.5, 15
		}
		for j := range 8 {
			xs := x[32*j : 32*j+32]
			avx := sqrt32(float32(sumSquares(xs) / 32))
			for l, v := range xs {
				wt[32*j+l] = avx + abs32(v)
			}
		}
		qkxSearch8(nmax, x[:], 32, wt[:], L[:], qkxParams{rmin, 0.1, nstep, false}, scales[:], mins[:])
		var maxScale, maxMin float32
		for j := range 8 {
			maxScale = max32(maxScale, scales[j])
			maxMin = max32(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		for j := range 8 {
			// uint8_t ls = nearest_int(...): wraps, then MIN(63, ls).
			ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
			lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
			putScaleMinK4(j, sc, ls, lm)
		}
		putHalf(dm[0:], maxScale/63)
		putHalf(dm[2:], maxMin/63)
		return
	}
	// _impl: σ² = 2Σx²/256, weights qw·√(σ²+x²), scales and mins fitted
	// by make_qp_quants(63) weighted by each sub-block's weight sum.
	sigma2 := float32(float32(2*sumSquares(x[:])) / qkK)
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		w[j] = imatrixWeights(wt[32*j:32*j+32], xs, qw[32*j:], sigma2)
	}
	qkxSearch8(nmax, x[:], 32, wt[:], L[:], qkxParams{-0.9, 0.05, 36, false}, scales[:], mins[:])
	var Ls, Lm [8]uint8
	dBlock := makeQPQuants(63, scales[:], Ls[:], w[:])
	mBlock := makeQPQuants(63, mins[:], Lm[:], w[:])
	for j := range 8 {
		ls, lm := Ls[j], Lm[j]
		if clampImpl {
			ls, lm = min(63, ls), min(63, lm)
		}
		putScaleMinK4(j, sc, ls, lm)
	}
	putHalf(dm[0:], dBlock)
	putHalf(dm[2:], mBlock)
}

// requantK4 recomputes the levels 0..nmax from the stored fp16 d, dmin and
// 6-bit scales, skipping sub-blocks whose scale is zero.
func requantK4(x *[qkK]float32, nmax int32, L *[qkK]uint8, dm *[4]byte, sc *[12]byte) {
	dAll := halfAt(dm[0:])
	dMin := halfAt(dm[2:])
	for j := range 8 {
		s, m := getScaleMinK4(j, sc)
		d := float32(dAll * float32(s))
		if d == 0 {
			continue
		}
		dmj := float32(dMin * float32(m))
		for ii, v := range x[32*j : 32*j+32] {
			L[32*j+ii] = uint8(min(nmax, max(0, nearestInt((v+dmj)/d))))
		}
	}
}

// encodeQ4K is quantize_q4_K.
func encodeQ4K(dst []byte, src, imatrix []float32) {
	var L [qkK]uint8
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q4KBytes]byte)(dst[i*q4KBytes:])
		dm, sc := (*[4]byte)(y[0:]), (*[12]byte)(y[4:])
		var qw []float32
		if imatrix != nil {
			qw = imatrix[i*qkK:]
		}
		fitK4(x, qw, 15, &L, dm, sc, false)
		requantK4(x, 15, &L, dm, sc)
		for g := range 4 {
			q := (*[32]byte)(y[16+32*g:])
			for l := range q {
				q[l] = L[64*g+l] | L[64*g+l+32]<<4
			}
		}
	}
}

// decodeQ4K is dequantize_row_q4_K.
func decodeQ4K(dst []float32, src []byte) {
	for i := range len(src) / q4KBytes {
		b := (*[q4KBytes]byte)(src[i*q4KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := halfAt(b[0:])
		dmin := halfAt(b[2:])
		sc := (*[12]byte)(b[4:])
		for g := range 4 {
			q := (*[32]byte)(b[16+32*g:])
			s1, m1 := getScaleMinK4(2*g, sc)
			s2, m2 := getScaleMinK4(2*g+1, sc)
			d1, mn1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			d2, mn2 := float32(d*float32(s2)), float32(dmin*float32(m2))
			lo := (*[32]float32)(y[64*g:])
			hi := (*[32]float32)(y[64*g+32:])
			for l, v := range q {
				lo[l] = float32(d1*float32(v&0xF)) - mn1
				hi[l] = float32(d2*float32(v>>4)) - mn2
			}
		}
	}
}

// encodeQ5K is quantize_q5_K.
func encodeQ5K(dst []byte, src, imatrix []float32) {
	var L [qkK]uint8
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q5KBytes]byte)(dst[i*q5KBytes:])
		dm, sc := (*[4]byte)(y[0:]), (*[12]byte)(y[4:])
		var qw []float32
		if imatrix != nil {
			qw = imatrix[i*qkK:]
		}
		fitK4(x, qw, 31, &L, dm, sc, true)
		requantK4(x, 31, &L, dm, sc)
		// Fifth bits: bit 2g of qh[l] for value 64g+l, bit 2g+1 for 64g+l+32.
		qh := (*[32]byte)(y[16:])
		*qh = [32]byte{}
		for g := range 4 {
			ql := (*[32]byte)(y[48+32*g:])
			for l := range ql {
				l1, l2 := L[64*g+l], L[64*g+l+32]
				if l1 > 15 {
					l1 -= 16
					qh[l] |= 1 << (2 * g)
				}
				if l2 > 15 {
					l2 -= 16
					qh[l] |= 2 << (2 * g)
				}
				ql[l] = l1 | l2<<4
			}
		}
	}
}

// decodeQ5K is dequantize_row_q5_K.
func decodeQ5K(dst []float32, src []byte) {
	for i := range len(src) / q5KBytes {
		b := (*[q5KBytes]byte)(src[i*q5KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := halfAt(b[0:])
		dmin := halfAt(b[2:])
		sc := (*[12]byte)(b[4:])
		qh := (*[32]byte)(b[16:])
		for g := range 4 {
			ql := (*[32]byte)(b[48+32*g:])
			s1, m1 := getScaleMinK4(2*g, sc)
			s2, m2 := getScaleMinK4(2*g+1, sc)
			d1, mn1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			d2, mn2 := float32(d*float32(s2)), float32(dmin*float32(m2))
			u1, u2 := uint8(1)<<(2*g), uint8(2)<<(2*g)
			lo := (*[32]float32)(y[64*g:])
			hi := (*[32]float32)(y[64*g+32:])
			for l, v := range ql {
				q1, q2 := int32(v&0xF), int32(v>>4)
				if qh[l]&u1 != 0 {
					q1 += 16
				}
				if qh[l]&u2 != 0 {
					q2 += 16
				}
				lo[l] = float32(d1*float32(q1)) - mn1
				hi[l] = float32(d2*float32(q2)) - mn2
			}
		}
	}
}

// ---------------------------------------------------------------- Q6_K

// encodeQ6K is quantize_q6_K: quantize_row_q6_K_ref without weights and
// quantize_row_q6_K_impl with them, which differ only in the weights of
// make_qx_quants (x² or the raw importance weights).
func encodeQ6K(dst []byte, src, imatrix []float32) {
	var L [qkK]int8
	var scales [16]float32
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q6KBytes]byte)(dst[i*q6KBytes:])
		for h := range 2 {
			var qw []float32
			if imatrix != nil {
				qw = imatrix[i*qkK+128*h : i*qkK+128*h+128]
			}
			qxSearch8(32, x[128*h:128*h+128], 16, L[128*h:], qw, scales[8*h:])
		}
		var maxScale, maxAbs float32
		for ib := range 16 {
			if a := abs32(scales[ib]); a > maxAbs {
				maxAbs, maxScale = a, scales[ib]
			}
		}
		if maxAbs < groupMaxEps {
			*y = [q6KBytes]byte{} // d = fp16(0) = 0 too
			continue
		}
		iscale := -128 / maxScale
		putHalf(y[208:], 1/iscale)
		sc := (*[16]byte)(y[192:])
		for ib := range sc {
			// MIN(127, nearest_int(...)) stored in an int8_t.
			sc[ib] = uint8(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		dAll := halfAt(y[208:])
		for j := range 16 {
			d := float32(dAll * float32(int8(sc[j])))
			if d == 0 {
				continue
			}
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = int8(min(31, max(-32, nearestInt(v/d))) + 32)
			}
		}
		for g := range 2 {
			ql := (*[64]byte)(y[64*g:])
			qh := (*[32]byte)(y[128+32*g:])
			Lg := (*[128]int8)(L[128*g:])
			for l := range 32 {
				a, b, c, e := uint8(Lg[l]), uint8(Lg[l+32]), uint8(Lg[l+64]), uint8(Lg[l+96])
				ql[l] = a&0xF | (c&0xF)<<4
				ql[l+32] = b&0xF | (e&0xF)<<4
				qh[l] = a>>4 | (b>>4)<<2 | (c>>4)<<4 | (e>>4)<<6
			}
		}
	}
}

// decodeQ6K is dequantize_row_q6_K.
func decodeQ6K(dst []float32, src []byte) {
	for i := range len(src) / q6KBytes {
		b := (*[q6KBytes]byte)(src[i*q6KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := halfAt(b[208:])
		for g := range 2 {
			ql := (*[64]byte)(b[64*g:])
			qh := (*[32]byte)(b[128+32*g:])
			sc := (*[8]byte)(b[192+8*g:])
			out := (*[128]float32)(y[128*g:])
			for l := range 32 {
				is := l / 16
				h := qh[l]
				q1 := int32(ql[l]&0xF|(h&3)<<4) - 32
				q2 := int32(ql[l+32]&0xF|(h>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(h>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(h>>6&3)<<4) - 32
				out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

// ---------------------------------------------------------------- Q8_K

// encodeQ8K is quantize_row_q8_K_ref: levels nearest_int(-127/max · x)
// capped at 127, d = 1/iscale as a float32, and the sum of each 16 levels in
// bsums. ggml leaves bsums unwritten for an all-zero block; this writes
// zeros there.
func encodeQ8K(dst []byte, src, _ []float32) { encodeFiniteQ8K(dst, src, nil) }

// encodeFiniteQ8KGeneric is encodeFiniteQ8K in plain Go.
func encodeFiniteQ8KGeneric(dst []byte, src, _ []float32) bool {
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		y := (*[q8KBytes]byte)(dst[i*q8KBytes:])
		amax := absMaxBits(x[:])
		if amax >= 0x7F800000 {
			return false
		}
		maxv := signedAt(x[:], amax)
		if maxv == 0 {
			*y = [q8KBytes]byte{}
			continue
		}
		iscale := -127 / maxv
		qs := (*[qkK]byte)(y[4:])
		for j, v := range x {
			qs[j] = uint8(int8(min(127, nearestInt(float32(iscale*v)))))
		}
		for j := range 16 {
			var sum int32
			for _, q := range qs[16*j : 16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(y[4+qkK+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(y[0:], math.Float32bits(1/iscale))
	}
	return true
}

// decodeQ8K is dequantize_row_q8_K: d·q.
func decodeQ8K(dst []float32, src []byte) {
	for i := range len(src) / q8KBytes {
		b := (*[q8KBytes]byte)(src[i*q8KBytes:])
		y := (*[qkK]float32)(dst[i*qkK:])
		d := math.Float32frombits(binary.LittleEndian.Uint32(b[0:]))
		for j := range y {
			y[j] = d * float32(int8(b[4+j]))
		}
	}
}
