package quantize

import "github.com/ggufkit/ggufkit/gguf"

// Q1_0 and Q2_0: one fp16 scale and 1- or 2-bit codes.
//   - Q1_0: 128 values per block, d = mean |x|, one sign bit per value
//     (ggml-common.h block_q1_0 {d, qs[16]}); decodes to ±d.
//   - Q2_0: 64 values per block, d = amax, codes round(x/d)+1 clamped to
//     0..3 meaning -1, 0, 1, 2 times d (block_q2_0 {d, qs[16]}).
//
// quantize_q1_0/quantize_q2_0 run the _ref row functions with or without
// importance weights, which they never read (ggml-quants.c).

const (
	qk1_0     = 128
	q1_0Bytes = 18
	qk2_0     = 64
	q2_0Bytes = 18
)

func init() {
	register(gguf.Q1_0, &codec{encodeRow: encodeRowQ1_0, decodeRow: decodeRowQ1_0})
	register(gguf.Q2_0, &codec{encodeRow: encodeRowQ2_0, decodeRow: decodeRowQ2_0})
}

// encodeRowQ1_0Generic is quantize_row_q1_0_ref in plain Go.
func encodeRowQ1_0Generic(dst []byte, src []float32, _ []float32) {
	for i := 0; i < len(src)/qk1_0; i++ {
		x := src[i*qk1_0 : (i+1)*qk1_0]
		b := dst[i*q1_0Bytes : (i+1)*q1_0Bytes]
		var sumAbs float32
		for _, v := range x {
			sumAbs += abs32(v)
		}
		putHalf(b, sumAbs/qk1_0)
		// Bit j is set for x[j] >= 0, so -0 counts as non-negative.
		for k := range qk1_0 / 8 {
			var q byte
			for bit, v := range x[8*k : 8*k+8] {
				if v >= 0 {
					q |= 1 << bit
				}
			}
			b[2+k] = q
		}
	}
}

func decodeRowQ1_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk1_0; i++ {
		b := src[i*q1_0Bytes : (i+1)*q1_0Bytes]
		y := dst[i*qk1_0 : (i+1)*qk1_0]
		d := halfAt(b)
		for k, q := range b[2:q1_0Bytes] {
			for bit := range 8 {
				if q>>bit&1 != 0 {
					y[8*k+bit] = d
				} else {
					y[8*k+bit] = -d
				}
			}
		}
	}
}

// encodeRowQ2_0Generic is quantize_row_q2_0_ref in plain Go.
func encodeRowQ2_0Generic(dst []byte, src []float32, _ []float32) {
	for i := 0; i < len(src)/qk2_0; i++ {
		x := src[i*qk2_0 : (i+1)*qk2_0]
		b := dst[i*q2_0Bytes : (i+1)*q2_0Bytes]
		var amax float32
		for _, v := range x {
			if a := abs32(v); a > amax {
				amax = a
			}
		}
		d := amax
		var id float32
		if d > 0 {
			id = 1 / d
		}
		putHalf(b, d)
		// Codes (int)roundf(w*id) + 1, clamped to 0..3. A subnormal d makes
		// id +Inf: the conversion gives INT_MIN, so code 0.
		var codes [qk2_0]uint8
		if float32(d*id) < 0x1p22 {
			for j, w := range x {
				codes[j] = uint8(max(0, min(3, roundHalfAway(float32(w*id))+1)))
			}
		} else {
			for j, w := range x {
				codes[j] = uint8(max(0, min(3, int64(cTruncInt32(cRoundf(float32(w*id))))+1)))
			}
		}
		for k := range qk2_0 / 4 {
			c := codes[4*k : 4*k+4]
			b[2+k] = c[0] | c[1]<<2 | c[2]<<4 | c[3]<<6
		}
	}
}

func decodeRowQ2_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk2_0; i++ {
		b := src[i*q2_0Bytes : (i+1)*q2_0Bytes]
		y := dst[i*qk2_0 : (i+1)*qk2_0]
		d := halfAt(b)
		for k, packed := range b[2:q2_0Bytes] {
			for n := range 4 {
				q := int(packed>>(2*n)) & 3
				y[4*k+n] = float32(q-1) * d
			}
		}
	}
}
