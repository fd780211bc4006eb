package quantize

import "github.com/ggufkit/ggufkit/gguf"

// Ternary types TQ1_0 and TQ2_0 (BitNet b1.58 / TriLM): 256 values in
// {-1, 0, 1}·d per block, d = amax as fp16 stored after the quants
// (ggml-common.h block_tq1_0 {qs[48], qh[4], d}, block_tq2_0 {qs[64], d}).
// quantize_tq1_0/quantize_tq2_0 ignore importance weights and run the _ref
// row functions (ggml-quants.c), which round with glibc's lroundf.

const (
	qkTQ       = 256
	tq1_0Bytes = 54
	tq2_0Bytes = 66
)

func init() {
	register(gguf.TQ1_0, &codec{encodeRow: encodeRowTQ1_0, decodeRow: decodeRowTQ1_0})
	register(gguf.TQ2_0, &codec{encodeRow: encodeRowTQ2_0, decodeRow: decodeRowTQ2_0})
}

// ternaryTrits returns the block's scale d = amax (MAX(amax, fabsf(v))
// over the block) and stores in t[j] the trit `lroundf(x[j]*id) + 1` with
// id = 1/d (0 when d is 0), reduced to the low byte as the uint8_t
// arithmetic of quantize_row_tq*_ref uses it: 0, 1 or 2 for |x·id| ≤ 1.
// A subnormal d makes id +Inf; lroundf then returns LONG_MIN for every
// value, whose +1 has low byte 1.
func ternaryTrits(t *[qkTQ]uint8, x []float32) (d float32) {
	x = x[:qkTQ]
	if d, ok := ternaryTritsAsm(t, x); ok {
		return d
	}
	for _, v := range x {
		if a := abs32(v); !(d > a) {
			d = a
		}
	}
	var id float32
	if d != 0 {
		id = 1 / d
	}
	if float32(d*id) < 0x1p22 {
		for j, v := range x {
			t[j] = uint8(roundHalfAway(float32(v*id)) + 1)
		}
	} else {
		for j, v := range x {
			t[j] = uint8(cLroundf(float32(v*id)) + 1)
		}
	}
	return d
}

// packTrits5 packs the 5 trits t[0], t[stride], … t[4·stride] base 3
// (first trit most significant, in uint8 arithmetic) and scales the result
// to a byte by ceiling division, q·256/243, so that a byte multiply by 3^n
// exposes trit n in the top bits.
func packTrits5(t []uint8, stride int) byte {
	var q uint8
	for n := range 5 {
		q = q*3 + t[n*stride]
	}
	return byte((int(q)*256 + (243 - 1)) / 243)
}

func encodeRowTQ1_0(dst []byte, src []float32, _ []float32) {
	var t [qkTQ]uint8
	for i := 0; i < len(src)/qkTQ; i++ {
		b := dst[i*tq1_0Bytes : (i+1)*tq1_0Bytes]
		putHalf(b[52:], ternaryTrits(&t, src[i*qkTQ:(i+1)*qkTQ]))
		// qs[0:32]: values 0..159, five per byte at stride 32.
		for m := range 32 {
			b[m] = packTrits5(t[m:], 32)
		}
		// qs[32:48]: values 160..239, five per byte at stride 16.
		for m := range 16 {
			b[32+m] = packTrits5(t[160+m:], 16)
		}
		// qh[0:4]: values 240..255, four per byte at stride 4, shifted up
		// one trit so that they decode like the five-trit bytes.
		for j := range 4 {
			var q uint8
			for m := range 4 {
				q = q*3 + t[240+j+4*m]
			}
			q *= 3
			b[48+j] = byte((int(q)*256 + (243 - 1)) / 243)
		}
	}
}

// tq1Pow3 is dequantize_row_tq1_0's pow3 table.
var tq1Pow3 = [5]uint8{1, 3, 9, 27, 81}

// unpackTrit is trit n of a packed byte q: (uint8(q·3^n)·3) >> 8, minus 1.
func unpackTrit(q byte, n int) float32 {
	return float32(int((uint16(q*tq1Pow3[n])*3)>>8) - 1)
}

func decodeRowTQ1_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkTQ; i++ {
		b := src[i*tq1_0Bytes : (i+1)*tq1_0Bytes]
		y := dst[i*qkTQ : (i+1)*qkTQ]
		d := halfAt(b[52:])
		for n := range 5 {
			for m := range 32 {
				y[n*32+m] = unpackTrit(b[m], n) * d
			}
		}
		for n := range 5 {
			for m := range 16 {
				y[160+n*16+m] = unpackTrit(b[32+m], n) * d
			}
		}
		for n := range 4 {
			for j := range 4 {
				y[240+n*4+j] = unpackTrit(b[48+j], n) * d
			}
		}
	}
}

func encodeRowTQ2_0(dst []byte, src []float32, _ []float32) {
	var t [qkTQ]uint8
	for i := 0; i < len(src)/qkTQ; i++ {
		b := dst[i*tq2_0Bytes : (i+1)*tq2_0Bytes]
		putHalf(b[64:], ternaryTrits(&t, src[i*qkTQ:(i+1)*qkTQ]))
		// Two groups of 32 bytes; byte m of group j holds values
		// 128j+m+32n in bits 2n..2n+1.
		for j := 0; j < 64; j += 32 {
			tg := t[4*j : 4*j+128]
			for m := range 32 {
				b[j+m] = tg[m]&3 | (tg[m+32]&3)<<2 | (tg[m+64]&3)<<4 | (tg[m+96]&3)<<6
			}
		}
	}
}

func decodeRowTQ2_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkTQ; i++ {
		b := src[i*tq2_0Bytes : (i+1)*tq2_0Bytes]
		y := dst[i*qkTQ : (i+1)*qkTQ]
		d := halfAt(b[64:])
		for j := 0; j < 64; j += 32 {
			for l := range 4 {
				for m := range 32 {
					q := int(b[j+m]>>(2*l)) & 3
					y[4*j+32*l+m] = float32(q-1) * d
				}
			}
		}
	}
}
