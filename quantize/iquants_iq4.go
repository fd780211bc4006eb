package quantize

import (
	"encoding/binary"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// IQ4_NL and IQ4_XS: 4-bit indexes into the non-linear value table
// kvalues_iq4nl, one fp16 scale per 32 values (IQ4_NL) or an fp16 scale and
// eight 6-bit sub-scales per 256 (IQ4_XS). Ported from
// quantize_row_iq4_nl_impl, quantize_iq4_nl, quantize_iq4_xs,
// dequantize_row_iq4_nl and dequantize_row_iq4_xs (ggml/src/ggml-quants.c).
//
// Both follow ggml_quantize_chunk, which calls the impl with ntry = 7.
// quantize_row_iq4_nl_ref (ggml's from_float_ref for IQ4_NL) uses ntry = -1
// and gives different bytes; it is not what llama-quantize writes.
// No GGML_ASSERT on these paths can fail on finite input, so ggml never
// aborts here.

func init() {
	register(gguf.IQ4_NL, &codec{encodeRow: encodeIQ4NLRow, decodeRow: decodeIQ4NLRow, usesImatrix: true})
	register(gguf.IQ4_XS, &codec{encodeRow: encodeIQ4XSRow, decodeRow: decodeIQ4XSRow, usesImatrix: true})
}

// kvaluesIQ4NL is kvalues_iq4nl (ggml/src/ggml-common.h).
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// iq4Bounds[i] (i ≥ 1) is the least float32 x that best_index_int8 over
// kvaluesIQ4NL maps to i or above; iq4Bounds[0] is -Inf. Since x−val[i−1]
// and val[i]−x are monotone in x even after rounding, ggml's choice between
// two neighbouring entries switches exactly once, so a bound per entry
// reproduces best_index_int8 (including its rounding at midpoints) with four
// branch-free comparisons. Found by bisection over float32 with
// bestIndexInt8 itself.
var iq4Bounds = func() (b [16]float32) {
	b[0] = float32(math.Inf(-1))
	for i := 1; i < 16; i++ {
		lo, hi := float32(kvaluesIQ4NL[i-1]), float32(kvaluesIQ4NL[i])
		// invariant: bestIndexInt8(lo) < i, bestIndexInt8(hi) == i
		for math.Nextafter32(lo, hi) != hi {
			mid := float32((float64(lo) + float64(hi)) / 2)
			if bestIndexInt8(kvaluesIQ4NL[:], mid) >= i {
				hi = mid
			} else {
				lo = mid
			}
		}
		b[i] = hi
	}
	return b
}()

// iq4Index is bestIndexInt8(kvaluesIQ4NL[:], x), bit for bit, by binary
// search over iq4Bounds. A NaN, which fails every comparison, goes to the
// last entry as in best_index_int8.
func iq4Index(x float32) int {
	if x != x {
		return 15
	}
	i := 0
	if x >= iq4Bounds[i+8] {
		i += 8
	}
	if x >= iq4Bounds[i+4] {
		i += 4
	}
	if x >= iq4Bounds[i+2] {
		i += 2
	}
	if x >= iq4Bounds[i+1] {
		i++
	}
	return i
}

const (
	iq4NLBlockBytes = 18  // block_iq4_nl: d, qs[16]
	iq4XSBlockBytes = 136 // block_iq4_xs: d, scales_h, scales_l[4], qs[128]
	iq4NTry         = 7   // ntry of quantize_iq4_nl / quantize_iq4_xs
)

// iq4Scales is the first half of quantize_row_iq4_nl_impl (ntry = 7) for one
// super-block x of 32 or 256 values: it sets scales[ib] to the best scale of
// each 32-value block (0 for a block below GROUP_MAX_EPS) and returns the
// one of largest magnitude, sign included. qw is nil or the importance
// weights of x. The levels the impl also stores here are recomputed by both
// callers before use, so they are not kept.
func iq4Scales(x, qw, scales []float32) float32 {
	var sigma2 float32
	for _, v := range x {
		sigma2 += float32(v * v)
	}
	sigma2 = float32(sigma2 * (2 / float32(len(x))))

	var weight [32]float32
	var maxScale, amaxScale float32
	for ib := range len(x) / 32 {
		xb := x[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		max := iq4Weights(xb, qwb, sigma2, &weight)
		amax := abs32(max)
		if amax < groupMaxEps {
			scales[ib] = 0
			continue
		}
		// ntry > 0: start from d = -max/values[0], so that the value of
		// largest magnitude maps onto -127; then the 2·ntry+1 trials.
		d := -max / float32(kvaluesIQ4NL[0])
		var ids [16]float32
		ids[0] = 1 / d
		for itry := -iq4NTry; itry <= iq4NTry; itry++ {
			ids[1+iq4NTry+itry] = float32(itry+int(kvaluesIQ4NL[0])) / max
		}
		var sums [32]float32
		iq4Trials(xb, &weight, &ids, &sums)
		sumqx, sumq2 := sums[0], sums[16]
		d = 0
		if sumq2 > 0 {
			d = sumqx / sumq2
		}
		best := float32(d * sumqx)
		for k := 1; k < 16; k++ {
			sumqx, sumq2 := sums[k], sums[16+k]
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				d = sumqx / sumq2
				best = float32(d * sumqx)
			}
		}
		scales[ib] = d
		if ad := abs32(d); ad > amaxScale {
			amaxScale, maxScale = ad, d
		}
	}
	return maxScale
}

// iq4WeightsGeneric is iq4Weights in plain Go.
func iq4WeightsGeneric(xb, qw []float32, sigma2 float32, weight *[32]float32) float32 {
	xb = xb[:32]
	if qw != nil {
		qw = qw[:32]
		for j, v := range xb {
			weight[j] = float32(qw[j] * float32(math.Sqrt(float64(sigma2+float32(v*v)))))
		}
	} else {
		for j, v := range xb {
			weight[j] = float32(v * v)
		}
	}
	var amax, max float32
	for _, v := range xb {
		if ax := abs32(v); ax > amax {
			amax, max = ax, v
		}
	}
	return max
}

// iq4TrialsGeneric sets sums[k] and sums[16+k] to iq4Fit(xb, weight,
// ids[k]).
func iq4TrialsGeneric(xb []float32, weight *[32]float32, ids *[16]float32, sums *[32]float32) {
	for k, id := range ids {
		sums[k], sums[16+k] = iq4Fit(xb, weight, id)
	}
}

// iq4Fit maps the 32 values xb to their nearest table entries at inverse
// scale id and returns Σ w·q·x and Σ w·q², summed in ggml's order.
func iq4Fit(xb []float32, weight *[32]float32, id float32) (sumqx, sumq2 float32) {
	xb = xb[:32]
	for j, v := range xb {
		q := float32(kvaluesIQ4NL[iq4Index(float32(id*v))])
		w := weight[j]
		sumqx += float32(float32(w*q) * v)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// iq4PackGeneric is iq4Pack in plain Go.
func iq4PackGeneric(qs []byte, xb []float32, id float32) {
	qs, xb = qs[:16], xb[:32]
	for j := range 16 {
		lo := iq4Index(float32(id * xb[j]))
		hi := iq4Index(float32(id * xb[j+16]))
		qs[j] = uint8(lo) | uint8(hi)<<4
	}
}

func encodeIQ4NLRow(dst []byte, src, imatrix []float32) {
	var scale [1]float32
	for ib := range len(src) / 32 {
		x := src[32*ib : 32*ib+32]
		var qw []float32
		if imatrix != nil {
			qw = imatrix[32*ib : 32*ib+32]
		}
		y := dst[iq4NLBlockBytes*ib : iq4NLBlockBytes*(ib+1)]
		iq4Scales(x, qw, scale[:])
		d := scale[0]
		binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		iq4Pack(y[2:18], x, id)
	}
}

func encodeIQ4XSRow(dst []byte, src, imatrix []float32) {
	var scales [8]float32
	for ibl := range len(src) / 256 {
		x := src[256*ibl : 256*ibl+256]
		var qw []float32
		if imatrix != nil {
			qw = imatrix[256*ibl : 256*ibl+256]
		}
		y := dst[iq4XSBlockBytes*ibl : iq4XSBlockBytes*(ibl+1)]
		maxScale := iq4Scales(x, qw, scales[:])
		d := -maxScale / 32
		binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var scalesH uint16
		scalesL := y[4:8]
		for ib, sc := range scales {
			l := max(-32, min(31, nearestInt(float32(id*sc))))
			dl := float32(d * float32(l))
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			iq4Pack(y[8+16*ib:24+16*ib], x[32*ib:32*ib+32], idl)
			l += 32
			if ib%2 == 0 {
				scalesL[ib/2] = uint8(l & 0xf)
			} else {
				scalesL[ib/2] |= uint8(l&0xf) << 4
			}
			scalesH |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(y[2:], scalesH)
	}
}

func decodeIQ4NLRow(dst []float32, src []byte) {
	for ib := range len(dst) / 32 {
		b := src[iq4NLBlockBytes*ib : iq4NLBlockBytes*(ib+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(b))
		iq4Unpack(dst[32*ib:32*ib+32], b[2:18], d)
	}
}

func decodeIQ4XSRow(dst []float32, src []byte) {
	for ibl := range len(dst) / 256 {
		b := src[iq4XSBlockBytes*ibl : iq4XSBlockBytes*(ibl+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(b))
		scalesH := binary.LittleEndian.Uint16(b[2:])
		for ib := range 8 {
			ls := int(b[4+ib/2]>>(4*(ib%2))&0xf) | int(scalesH>>(2*ib)&3)<<4
			iq4Unpack(dst[256*ibl+32*ib:256*ibl+32*ib+32], b[8+16*ib:24+16*ib], float32(d*float32(ls-32)))
		}
	}
}

// iq4Unpack decodes 32 values from the nibbles qs at scale d.
func iq4Unpack(y []float32, qs []byte, d float32) {
	y, qs = y[:32], qs[:16]
	for j, q := range qs {
		y[j] = float32(d * float32(kvaluesIQ4NL[q&0xf]))
		y[j+16] = float32(d * float32(kvaluesIQ4NL[q>>4]))
	}
}
