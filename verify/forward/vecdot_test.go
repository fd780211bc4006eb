package forward

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// scaleFields are the offsets of each block type's fp16 scales (and, for
// MXFP4, of its E8M0 exponent), which randomBlocks keeps finite and small.
var scaleFields = map[gguf.Type][]int{
	gguf.Q8_0: {0}, gguf.Q4_0: {0}, gguf.Q5_0: {0}, gguf.IQ4_NL: {0},
	gguf.Q4_K: {0, 2}, gguf.Q5_K: {0, 2}, gguf.Q6_K: {208}, gguf.IQ4_XS: {0},
}

// randomBlocks is a row of cols values of type typ: every bit of the levels
// random (edge levels included), the scales random finite values.
func randomBlocks(rng *rand.Rand, typ gguf.Type, cols int) []byte {
	k := vecKernels[typ]
	row := make([]byte, cols/k.block*k.bytes)
	switch typ {
	case gguf.F16, gguf.BF16, gguf.F32:
		for i := range cols {
			v := float32(rng.NormFloat64())
			switch typ {
			case gguf.F16:
				binary.LittleEndian.PutUint16(row[2*i:], quantize.FP32ToFP16(v))
			case gguf.BF16:
				binary.LittleEndian.PutUint16(row[2*i:], quantize.FP32ToBF16(v))
			default:
				binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(v))
			}
		}
		return row
	}
	for i := range row {
		row[i] = byte(rng.Uint32())
	}
	for b := 0; b < len(row); b += k.bytes {
		if typ == gguf.MXFP4 {
			row[b] = byte(100 + rng.IntN(40))
			continue
		}
		for _, off := range scaleFields[typ] {
			binary.LittleEndian.PutUint16(row[b+off:], quantize.FP32ToFP16(float32(rng.Float64()*0.02-0.005)))
		}
	}
	return row
}

// actValues is the activation a as float64 values, as its blocks decode.
func actValues(kind actKind, a *qact, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch kind {
		case actQ8_0:
			v[i] = float64(a.qs[i]) * float64(a.d[i/32])
		case actQ8K:
			v[i] = float64(a.qs[i]) * float64(a.d[i/256])
		default:
			v[i] = float64(a.f[i])
		}
	}
	return v
}

// TestVecDot checks every kernel against its blocks decoded by quantize
// and its activation's blocks decoded, multiplied in float64: random rows,
// activations with a spread of magnitudes, zeros and a row of zeros.
func TestVecDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for typ, k := range vecKernels {
		t.Run(typ.String(), func(t *testing.T) {
			for trial := range 40 {
				cols := 256 * (1 + trial%8)
				row := randomBlocks(rng, typ, cols)
				x := make([]float32, cols)
				for i := range x {
					switch {
					case trial%5 == 4:
						// all zero
					case i%17 == 0:
						x[i] = 0
					default:
						x[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()))
					}
				}
				var a qact
				if err := quantizeAct(k.act, x, &a); err != nil {
					t.Fatal(err)
				}
				var r qrow
				k.unpack(&r, row, cols)
				r.sums = make([]int32, cols/16)
				got := r.dot(k.act, &a)

				w := make([]float32, cols)
				if err := quantize.Decode(typ, w, row, cols); err != nil {
					t.Fatal(err)
				}
				av := actValues(k.act, &a, cols)
				var want, mag float64
				for i := range w {
					want += float64(w[i]) * av[i]
					mag += math.Abs(float64(w[i]) * av[i])
				}
				if diff := math.Abs(float64(got) - want); diff > 1e-5*mag+1e-30 {
					t.Fatalf("trial %d (%d values): got %g, want %g (off by %.3g of Σ|w·x| = %g)", trial, cols, got, want, diff/mag, mag)
				}
				// The activation's blocks stay close to x: the
				// conversion is the partner type's, not a coarser one.
				var xdot float64
				for i := range w {
					xdot += float64(w[i]) * float64(x[i])
				}
				if k.act != actF32 && mag > 0 && math.Abs(xdot-want) > 0.05*mag {
					t.Fatalf("trial %d: activation conversion moved the product from %g to %g", trial, xdot, want)
				}
			}
		})
	}
}

// TestI8Sums16 checks the integer sums (the AVX2 form on amd64) against the
// Go form: strides of packed levels and of Q8_0 blocks, every group count
// from 0 to 9 (the four-group loop and its tail), levels -128..127 against
// activations -127..127, the extremes included.
func TestI8Sums16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, stride := range []int{32, 34} {
		for groups := range 10 {
			a := make([]byte, groups*stride+2)
			b := make([]int8, groups*32)
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for i := range b {
				b[i] = int8(rng.IntN(255) - 127)
			}
			if groups > 0 {
				for j := range 32 {
					a[j], b[j] = 0x80, -127 // the largest magnitudes
				}
			}
			got := make([]int32, 2*groups)
			want := make([]int32, 2*groups)
			i8sums16(a, stride, b, got)
			i8sums16Generic(a, stride, b, want)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("stride %d, %d groups: sum %d = %d, want %d", stride, groups, i, got[i], want[i])
				}
			}
		}
	}
}

// TestDotF32 checks the float32 products and axpyF32 (FMA on amd64)
// against float64.
func TestDotF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 1000, 4096} {
		a, b := make([]float32, n), make([]float32, n)
		var want, mag float64
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		if got := dotF32(a, b); math.Abs(float64(got)-want) > 1e-6*mag {
			t.Errorf("n %d: got %g, want %g", n, got, want)
		}
		// dotF32x4 with b in each place and the others distinct.
		c, d, e := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range c {
			c[i], d[i], e[i] = float32(i%7), -float32(i%5), 0
		}
		s0, s1, s2, s3 := dotF32x4(a, b, c, d, e)
		s4, s5, s6, s7 := dotF32x4(a, e, d, c, b)
		for i, g := range []float32{s0, s7} {
			if math.Abs(float64(g)-want) > 1e-6*mag {
				t.Errorf("n %d: dotF32x4 product %d = %g, want %g", n, i, g, want)
			}
		}
		if s1 != s6 || s2 != s5 || s3 != 0 || s4 != 0 {
			t.Errorf("n %d: dotF32x4 lanes mixed: %g %g %g %g %g %g", n, s1, s6, s2, s5, s3, s4)
		}
		if w1 := dotF32(a, c); math.Abs(float64(s1-w1)) > 1e-5*math.Max(1, math.Abs(float64(w1))) {
			t.Errorf("n %d: dotF32x4 product 1 = %g, dotF32 %g", n, s1, w1)
		}
		// axpyF32 against float64, one rounding per value at most apart.
		y := append([]float32(nil), c...)
		axpyF32(y, 0.37, a)
		for i := range y {
			want := float64(c[i]) + 0.37*float64(a[i])
			if math.Abs(float64(y[i])-want) > 1e-6*(math.Abs(float64(c[i]))+math.Abs(float64(a[i]))) {
				t.Fatalf("n %d: axpyF32 value %d = %g, want %g", n, i, y[i], want)
			}
		}
	}
}

// TestDotQ8K checks the fused products (dotQ8, dotQ8x4, q8RawDot1,
// q8RawDot4, dotK) (AVX2 on amd64) against their Go forms, and q8RawRows
// bit for bit against q8RawDot1: dotK exactly, dotQ8 within float32 rounding, on random levels
// with the extremes, strides of packed levels and of Q8_0 blocks, every
// group count from 0 to 13 and super-block count from 0 to 3.
func TestDotQ8K(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, stride := range []int{32, 34} {
		for groups := range 14 {
			a := make([]byte, groups*stride+2)
			b := make([]int8, groups*32)
			wd, xd := make([]float32, groups), make([]float32, groups)
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for i := range b {
				b[i] = int8(rng.IntN(255) - 127)
			}
			var mag float64
			for g := range groups {
				wd[g], xd[g] = float32(rng.NormFloat64()), float32(rng.ExpFloat64())
				mag += 32 * 128 * 127 * math.Abs(float64(wd[g]*xd[g]))
			}
			sums := make([]int32, 2*groups)
			got, want := dotQ8(a, stride, b, wd, xd, sums), dotQ8Generic(a, stride, b, wd, xd, sums)
			if math.Abs(float64(got-want)) > 1e-6*mag {
				t.Errorf("dotQ8 stride %d, %d groups: %g, want %g", stride, groups, got, want)
			}
			// dotQ8x4: b in the third place, the others reversed copies.
			var bs [4][]int8
			var xds [4][]float32
			for i := range 4 {
				bs[i], xds[i] = make([]int8, len(b)), make([]float32, len(xd))
				for j := range b {
					bs[i][j] = b[len(b)-1-j] / int8(i+1)
				}
				for j := range xd {
					xds[i][j] = xd[len(xd)-1-j] * float32(i+1)
				}
			}
			bs[2], xds[2] = b, xd
			if stride == 34 {
				// The stored Q8_0 blocks: a's levels after an fp16 d.
				raw := make([]byte, 34*groups)
				var rmag float64
				for g := range groups {
					le.PutUint16(raw[34*g:], quantize.FP32ToFP16(wd[g]))
					copy(raw[34*g+2:34*g+34], a[g*stride:g*stride+32])
					rmag += 32 * 128 * 127 * math.Abs(float64(half(raw[34*g:])*xd[g]))
				}
				if got, want := q8RawDot1(raw, b, xd), q8RawDotGeneric(raw, b, xd); math.Abs(float64(got-want)) > 1e-6*rmag {
					t.Errorf("q8RawDot1, %d groups: %g, want %g", groups, got, want)
				}
				// q8RawRows over three rows gives q8RawDot1's bits.
				three := make([]byte, 0, 3*len(raw))
				for k := range 3 {
					three = append(three, raw...)
					if len(raw) > 0 {
						three[len(three)-1] ^= byte(k)
					}
				}
				rr := make([]float32, 3)
				q8RawRows(three, b, xd, rr)
				for k := range rr {
					if w := q8RawDot1(three[k*len(raw):(k+1)*len(raw)], b, xd); math.Float32bits(rr[k]) != math.Float32bits(w) {
						t.Errorf("q8RawRows, %d groups, row %d: %g, q8RawDot1 %g", groups, k, rr[k], w)
					}
				}
				r4 := q8RawDot4(raw, bs, [4][]uint8{}, xds)
				for i := range 4 {
					if want := q8RawDotGeneric(raw, bs[i], xds[i]); math.Abs(float64(r4[i]-want)) > 1e-6*rmag*float64(i+1) {
						t.Errorf("q8RawDot4, %d groups, input %d: %g, want %g", groups, i, r4[i], want)
					}
				}
			}
			s4 := dotQ8x4(a, stride, bs, wd, xds, sums)
			for i := range 4 {
				want := dotQ8Generic(a, stride, bs[i], wd, xds[i], sums)
				if math.Abs(float64(s4[i]-want)) > 1e-6*mag {
					t.Errorf("dotQ8x4 stride %d, %d groups, input %d: %g, want %g", stride, groups, i, s4[i], want)
				}
			}
		}
	}
	for blocks := range 4 {
		a, b := make([]int8, 256*blocks), make([]int8, 256*blocks)
		scales := make([]int32, 16*blocks)
		for i := range a {
			a[i], b[i] = int8(rng.Uint32()), int8(rng.IntN(255)-127)
		}
		for i := range scales {
			scales[i] = int32(rng.IntN(256) - 128)
		}
		if blocks > 0 {
			for i := range 256 {
				a[i], b[i] = -128, -127
			}
			for i := range 16 {
				scales[i] = -128
			}
		}
		got, want := make([]int32, blocks), make([]int32, blocks)
		dotK(a, b, scales, got)
		dotKGeneric(a, b, scales, want)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("dotK %d blocks: block %d = %d, want %d", blocks, i, got[i], want[i])
			}
		}
	}
}

// TestKFused checks the fused Q4_K and Q6_K products (AVX2 on amd64)
// against their Go forms, within float32 rounding: random blocks (every
// level and scale bit random, mins and negative scales included), each
// activation of random levels with the extremes, 0 to 4 super-blocks, 40
// rounds (the
// bound: 1e-7 of the largest possible Σ|w·x|, far below a lane lost), the
// four-activation form with activations spaced and in every position, and
// gemv over rows one after the other (bit for bit the one-row form).
func TestKFused(t *testing.T) { checkKFused(t) }

// checkKFused is TestKFused with the kernels the build and CPU select
// (vecdot_amd64_test.go runs it with each amd64 variant).
func checkKFused(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K} {
		for c := range 5 * 40 { // 40 rounds of 0 to 4 super-blocks
			blocks := c % 5
			cols := 256 * blocks
			var r qrow
			row := randomBlocks(rng, typ, cols)
			vecKernels[typ].unpack(&r, row, cols)
			stride := blocks*q8KBytes + 8
			a := make([]byte, 4*stride)
			var mag float64
			for t := range 4 {
				for b := range blocks {
					blk := a[t*stride+b*q8KBytes:]
					d := float32(rng.ExpFloat64())
					le.PutUint32(blk, math.Float32bits(d))
					for i := range 256 {
						v := int8(rng.IntN(256) - 128)
						if t == 1 && b == 0 {
							v = -128 // the largest magnitudes
						}
						blk[4+i] = byte(v)
					}
					for j := range 16 {
						var s int16
						for _, v := range blk[4+16*j : 20+16*j] {
							s += int16(int8(v))
						}
						le.PutUint16(blk[260+2*j:], uint16(s))
					}
					k := vecKernels[typ].bytes
					if typ == gguf.Q4_K {
						mag += 256 * 128 * 64 * 16 * float64(d) * math.Abs(float64(half(row[b*k:])))
						mag += 256 * 128 * 64 * float64(d) * math.Abs(float64(half(row[b*k+2:])))
					} else {
						mag += 256 * 128 * 128 * 64 * float64(d) * math.Abs(float64(half(row[b*k+208:])))
					}
				}
			}
			want := make([]float32, 4)
			for t := range want {
				if typ == gguf.Q4_K {
					want[t] = q4kDotGeneric(row, a[t*stride:])
				} else {
					want[t] = q6kDotGeneric(row, a[t*stride:])
				}
			}
			// gemv over three rows (this one in the middle) gives dot1's bits.
			three := append(append(randomBlocks(rng, typ, cols), row...), randomBlocks(rng, typ, cols)...)
			g := make([]float32, 3)
			r.kf.gemv(three, a, g)
			for i := range g {
				w := r.kf.dot1(three[i*len(row):(i+1)*len(row)], a)
				if math.Float32bits(g[i]) != math.Float32bits(w) {
					t.Errorf("%s, %d blocks: gemv row %d = %g, dot1 %g", typ, blocks, i, g[i], w)
				}
			}
			for n := 1; n <= 4; n++ {
				got := make([]float32, n)
				r.kf.rows(row, a, stride, n, got)
				for i := range got {
					if math.Abs(float64(got[i]-want[i])) > 1e-7*mag {
						t.Errorf("%s, %d blocks, %d activations: product %d = %g, want %g", typ, blocks, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestDotF16 checks the products on fp16 rows (VCVTPH2PS and FMA on amd64)
// against float64, and those of three rows (stride apart) against the
// one-row Go form,
// for lengths around the kernels' steps, with the largest and smallest
// fp16 values.
func TestDotF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 257, 1000, 4096} {
		w := make([]byte, 2*n)
		var x [4][]float32
		for i := range x {
			x[i] = make([]float32, n)
		}
		for i := range n {
			v := float32(rng.NormFloat64())
			switch i % 50 {
			case 7:
				v = 65504
			case 8:
				v = -6e-8
			}
			binary.LittleEndian.PutUint16(w[2*i:], quantize.FP32ToFP16(v))
			for j := range x {
				x[j][i] = float32(rng.NormFloat64()) / float32(j+1)
			}
		}
		var got [4]float32
		got[0], got[1], got[2], got[3] = dotF16x4(w, x[0], x[1], x[2], x[3])
		// dotF16R3x4 with w as its middle row between two others.
		w3 := make([]byte, 3*(2*n+6))
		for i := range w3 {
			w3[i] = byte(rng.IntN(256)) & 0xBF // bit 14 clear: |v| < 2
		}
		copy(w3[2*n+6:], w)
		var r3 [12]float32
		dotF16R3x4(w3, 2*n+6, n, x[0], x[1], x[2], x[3], &r3)
		for j := range x {
			var want, mag float64
			for i := range n {
				wi := float64(quantize.FP16ToFP32(binary.LittleEndian.Uint16(w[2*i:])))
				want += wi * float64(x[j][i])
				mag += math.Abs(wi * float64(x[j][i]))
			}
			if one := dotF16(w, x[j]); math.Abs(float64(one)-want) > 1e-6*mag {
				t.Errorf("n %d: dotF16 = %g, want %g", n, one, want)
			}
			if math.Abs(float64(got[j])-want) > 1e-6*mag {
				t.Errorf("n %d: dotF16x4 product %d = %g, want %g", n, j, got[j], want)
			}
			if math.Abs(float64(r3[4+j])-want) > 1e-6*mag {
				t.Errorf("n %d: dotF16R3x4 row 1, input %d = %g, want %g", n, j, r3[4+j], want)
			}
			for _, r := range []int{0, 2} {
				w := w3[r*(2*n+6) : r*(2*n+6)+2*n]
				if one := dotF16Generic(w, x[j]); math.Abs(float64(r3[4*r+j]-one)) > 1e-5*(1+math.Abs(float64(one))) {
					t.Errorf("n %d: dotF16R3x4 row %d, input %d = %g, dotF16 %g", n, r, j, r3[4*r+j], one)
				}
			}
		}
	}
}

// TestQuantizeActReuse checks that a converted input reused for another
// kind never writes into the input it last aliased (F32 keeps the input
// itself): a session's products reuse their conversions from call to call.
func TestQuantizeActReuse(t *testing.T) {
	x := []float32{0.1, 0.2, 0.3, 1e-3}
	want := append([]float32(nil), x...)
	var a qact
	for _, kind := range []actKind{actF32, actF16, actF32, actBF16} {
		if err := quantizeAct(kind, x, &a); err != nil {
			t.Fatal(err)
		}
	}
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("input changed: %v, want %v", x, want)
		}
	}
}
