package forward

import "math"

// Fused products of Q4_K and Q6_K rows, the two types of a Q4_K_M model's
// matrices, straight on the stored blocks as ggml's AVX2 vec_dot computes
// them: the activations are Q8_K blocks as encoded (292 bytes: d, 256
// levels, 16 sums of 16), and the kernel reads each weight block's levels,
// scales, mins (Q4_K) and d in place, applying the mins through the
// activation's sums and Q6_K's offset of 32 the same way. Nothing is
// unpacked per row, which matters for generation, where a row meets one
// token; a row meets eight activations per pass with AVX512-VNNI, else four
// (its levels split once for them), the rest one at a time.

// q8KBytes is the size of a block_q8_K: d, 256 levels, 16 int16 sums.
const q8KBytes = 292

// kFused is a type with fused kernels: its block size, its Go form (the
// product of its blocks x with one Q8_K activation a) and its vector forms
// (kAsm, per architecture: dot4 and dot1).
type kFused struct {
	bytes   int
	generic func(x, a []byte) float32
	asm     kAsm
}

var (
	q4kFused = &kFused{bytes: 144, generic: q4kDotGeneric, asm: q4kAsm}
	q6kFused = &kFused{bytes: 210, generic: q6kDotGeneric, asm: q6kAsm}
)

// rows sets out[t] to the product of the blocks x with activation t for n
// activations of Q8_K blocks, the first at a[0], the next stride bytes on.
func (k *kFused) rows(x, a []byte, stride, n int, out []float32) {
	t := 0
	for t+8 <= n && k.dot8(x, a[t*stride:], stride, out[t:t+8]) {
		t += 8
	}
	for ; t+4 <= n; t += 4 {
		k.dot4(x, a[t*stride:], stride, out[t:t+4])
	}
	for ; t < n; t++ {
		out[t] = k.dot1(x, a[t*stride:])
	}
}

// dot4Generic is dot4 through the Go form, one activation at a time.
func (k *kFused) dot4Generic(x, a []byte, stride int, out []float32) {
	for t := range 4 {
		out[t] = k.generic(x, a[t*stride:])
	}
}

// gemvGeneric is gemv through the Go form, row by row.
func (k *kFused) gemvGeneric(x, a []byte, out []float32) {
	if len(out) == 0 {
		return
	}
	n := len(x) / len(out)
	for r := range out {
		out[r] = k.generic(x[r*n:(r+1)*n], a)
	}
}

func unpackQ4K(r *qrow, row []byte, _ int) { r.raw, r.kf = row, q4kFused }

func unpackQ6K(r *qrow, row []byte, _ int) { r.raw, r.kf = row, q6kFused }

// q8KBlock is block b of the Q8_K activation a: its scale, levels and sums
// of 16.
func q8KBlock(a []byte, b int) (d float32, qs []byte, bsums []byte) {
	blk := a[b*q8KBytes : (b+1)*q8KBytes : (b+1)*q8KBytes]
	return math.Float32frombits(le.Uint32(blk)), blk[4:260], blk[260:292]
}

// q4kDotGeneric is the product of the Q4_K blocks x with the Q8_K
// activation a: per super-block the integer sums per 32 values times their
// scales, the mins times the activation's sums, then d·da·(Σ) −
// dmin·da·(Σ mins) in float32 (ggml_vec_dot_q4_K_q8_K).
func q4kDotGeneric(x, a []byte) float32 {
	var sumf float32
	var sc, mn [8]int32
	for b := range len(x) / 144 {
		da, qa, bs := q8KBlock(a, b)
		blk := x[144*b : 144*b+144 : 144*b+144]
		scaleMinK4(blk[4:16], sc[:], mn[:], false)
		var isum, msum int32
		for j := range 4 {
			var lo, hi int32
			for l := range 32 {
				v := blk[16+32*j+l]
				lo += int32(v&0xF) * int32(int8(qa[64*j+l]))
				hi += int32(v>>4) * int32(int8(qa[64*j+32+l]))
			}
			isum += sc[2*j]*lo + sc[2*j+1]*hi
		}
		for j := range 16 {
			msum += mn[j/2] * int32(int16(le.Uint16(bs[2*j:])))
		}
		sumf += half(blk)*da*float32(isum) - half(blk[2:])*da*float32(msum)
	}
	return sumf
}

// q6kDotGeneric is the product of the Q6_K blocks x with the Q8_K
// activation a: levels 0..63 times the activation, per 16 values times the
// scale, less 32 times the scale times the activation's sum of 16, then
// d·da·(Σ) in float32 (ggml_vec_dot_q6_K_q8_K).
func q6kDotGeneric(x, a []byte) float32 {
	var sumf float32
	for b := range len(x) / 210 {
		da, qa, bs := q8KBlock(a, b)
		blk := x[210*b : 210*b+210 : 210*b+210]
		sc := blk[192:208:208]
		var isum int32
		for h := range 2 {
			ql, qh := blk[64*h:64*h+64:64*h+64], blk[128+32*h:160+32*h:160+32*h]
			for l := range 32 {
				q := [4]int32{
					int32(ql[l]&0xF | (qh[l]&3)<<4),
					int32(ql[l+32]&0xF | (qh[l]>>2&3)<<4),
					int32(ql[l]>>4 | (qh[l]>>4&3)<<4),
					int32(ql[l+32]>>4 | (qh[l]>>6&3)<<4),
				}
				for k, v := range q {
					i := 128*h + 32*k + l
					isum += int32(int8(sc[i/16])) * v * int32(int8(qa[i]))
				}
			}
		}
		for j := range 16 {
			isum -= 32 * int32(int8(sc[j])) * int32(int16(le.Uint16(bs[2*j:])))
		}
		sumf += half(blk[208:]) * da * float32(isum)
	}
	return sumf
}
