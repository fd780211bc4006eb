package quantize

import (
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// FP4 types: 4-bit E2M1 values with a shared scale.
//   - MXFP4 (OCP microscaling): 32 values per block, one E8M0 exponent byte
//     then 16 bytes of nibbles (ggml-common.h block_mxfp4 {e, qs[16]}).
//   - NVFP4: 64 values per block in four sub-blocks of 16, each with a
//     UE4M3 scale byte (block_nvfp4 {d[4], qs[32]}). ggml has no per-tensor
//     global scale, so very large or very small rows saturate or flush.
//
// quantize_mxfp4/quantize_nvfp4 ignore importance weights and run the _ref
// row functions (ggml-quants.c). The E2M1 values are kept doubled
// (kvalues_mxfp4) and the scales halved to match.

const (
	qkMXFP4      = 32
	mxfp4Bytes   = 17
	qkNVFP4      = 64
	qkNVFP4Sub   = 16
	nvfp4Bytes   = 36
	nvfp4NumSubs = qkNVFP4 / qkNVFP4Sub
)

// kvaluesMXFP4 is kvalues_fp4 (alias kvalues_mxfp4) of ggml-common.h: twice
// the E2M1 values, indexed by the 4-bit code (bit 3 is the sign).
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func init() {
	register(gguf.MXFP4, &codec{encodeRow: encodeRowMXFP4, decodeRow: decodeRowMXFP4})
	register(gguf.NVFP4, &codec{encodeRow: encodeRowNVFP4, decodeRow: decodeRowNVFP4})
}

// e8m0ToFP32Half is ggml_e8m0_to_fp32_half (ggml-impl.h): 2^(e-128), with
// the two subnormal patterns for e < 2. 0xFF is not special-cased, as in ggml.
func e8m0ToFP32Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// ue4m3ToFP32 is ggml_ue4m3_to_fp32 (ggml-impl.h) from a table: the UE4M3
// value (4 exponent bits, bias 7, 3 mantissa bits; 0 and 0x7F read as 0)
// times 0.5. Bit 7 is ignored, as ggml masks the exponent with 0xF.
func ue4m3ToFP32(x uint8) float32 { return ue4m3Table[x] }

var ue4m3Table = func() (t [256]float32) {
	for i := range t {
		x := uint8(i)
		if x == 0 || x == 0x7F {
			continue
		}
		exp, man := int((x>>3)&0xF), int(x&7)
		var raw float32
		if exp == 0 {
			raw = float32(math.Ldexp(float64(man), -9))
		} else {
			raw = float32(math.Ldexp(1+float64(man)/8, exp-7))
		}
		t[i] = raw * 0.5
	}
	return t
}()

// fp32ToUE4M3 is ggml_fp32_to_ue4m3 (ggml-impl.h): non-positive (and NaN)
// input gives 0, values above 448 saturate, normal results round on the
// first dropped mantissa bit (half up), exponents past 14 give 0x7E.
func fp32ToUE4M3(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	if x > 448 {
		x = 448
	}
	bits := math.Float32bits(x)
	exp := int((bits>>23)&0xFF) - 127 + 7
	man := int((bits >> 20) & 7)
	if exp <= 0 {
		// subnormal: man = (int)(x·2^9 + 0.5), at most 7
		m := cTruncInt32(float32(float32(x*512) + 0.5))
		if m > 7 {
			m = 7
		}
		if m < 1 {
			return 0
		}
		return uint8(m)
	}
	if exp >= 15 {
		return 0x7E
	}
	man += int((bits >> 19) & 1)
	if man > 7 {
		man = 0
		exp++
		if exp >= 15 {
			return 0x7E
		}
	}
	return uint8(exp<<3 | man)
}

// fp4Grid is best_index_mxfp4 for one scale d: the code whose value
// kvalues_mxfp4[i]·d is closest to x, the first code on ties.
type fp4Grid struct {
	g [16]float32 // kvalues_mxfp4[i]·d, the products ggml compares against
	// midBits holds the bits of the midpoints between consecutive
	// non-negative grid values, (k_i + k_{i+1})/2·d with k = 0,1,2,3,4,6,8,12:
	// for non-negative finite floats the order of the bits is the order of
	// the values.
	midBits [7]uint32
	// lim is 2·g[7]. Below it the count of midpoints under |x| is ggml's
	// choice; at or above it (a saturated scale) the scan runs. The count
	// needs exact grid values and midpoints: d normal with at most 20
	// significant bits (MXFP4's powers of two and NVFP4's 4-bit UE4M3
	// values are) and 12·d finite. Otherwise (a zero or subnormal d, as for
	// MXFP4's e < 2) lim is 0 and the scan always runs.
	lim float32
}

// fp4Mid are the midpoints of consecutive non-negative kvalues_mxfp4.
var fp4Mid = [7]float32{0.5, 1.5, 2.5, 3.5, 5, 7, 10}

func newFP4Grid(d float32) (g fp4Grid) {
	for i, k := range kvaluesMXFP4 {
		g.g[i] = float32(k) * d
	}
	for i, m := range fp4Mid {
		g.midBits[i] = math.Float32bits(m * d)
	}
	if d >= 0x1p-126 && g.g[7] <= math.MaxFloat32 && math.Float32bits(d)&0xF == 0 {
		g.lim = 2 * g.g[7]
	}
	return g
}

// bestIndex equals best_index_mxfp4(x, d). ggml scans all 16 codes for the
// smallest |g[i] - x|, the first one on ties. Where |x| < 2·g[7], the two
// grid values around x are within a factor of 2 of x, so both differences
// are exact (Sterbenz) and the closer one wins, the lower on a tie, i.e.
// the number of midpoints below |x|; any other grid value is at least d
// farther, far more than its difference's rounding error, so it never
// ties. Code 0 precedes the negative codes 9..15 (code 8 is -0, which only
// ties code 0). Larger |x| fall back to ggml's scan, restricted to code 0
// and x's sign: an opposite-signed value is never strictly closer than 0.
func (g *fp4Grid) bestIndex(x float32) uint8 {
	ax, neg := x, x < 0
	if neg {
		ax = -x
	}
	if ax < g.lim {
		// The count of midpoints below |x|, without a branch per midpoint:
		// m < |x| exactly when bits(m) - bits(|x|) wraps (both are
		// non-negative and finite, so they differ by less than 2^31).
		axb := math.Float32bits(x) &^ (1 << 31)
		var n uint32
		for _, mb := range &g.midBits {
			n += (mb - axb) >> 31
		}
		if neg && n > 0 {
			n += 8
		}
		return uint8(n)
	}
	lo := 1
	if neg {
		lo = 9
	}
	best, bestErr := 0, abs32(g.g[0]-x)
	for i := lo; i < lo+7; i++ {
		if err := abs32(g.g[i] - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

// mxfp4Exponent is quantize_row_mxfp4_ref's
// `amax > 0 ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0`. The cast keeps
// the low byte of a 32-bit conversion, so amax below 2^-125 wraps to a large
// e, as in ggml. log2f is computed in double and rounded once to float,
// which is the correctly rounded result that glibc's log2f also returns
// (exact at powers of two, where floor is sensitive).
func mxfp4Exponent(amax float32) uint8 {
	if !(amax > 0) {
		return 0
	}
	l := float32(math.Log2(float64(amax)))
	f := float32(float32(math.Floor(float64(l))-2) + 127)
	return uint8(cTruncInt32(f))
}

// encodeRowMXFP4Generic is quantize_row_mxfp4_ref in plain Go.
func encodeRowMXFP4Generic(dst []byte, src []float32, _ []float32) {
	for i := 0; i < len(src)/qkMXFP4; i++ {
		x := src[i*qkMXFP4 : (i+1)*qkMXFP4]
		b := dst[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		var amax float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax = a
			}
		}
		e := mxfp4Exponent(amax)
		g := newFP4Grid(e8m0ToFP32Half(e))
		b[0] = e
		for j := range qkMXFP4 / 2 {
			b[1+j] = g.bestIndex(x[j]) | g.bestIndex(x[qkMXFP4/2+j])<<4
		}
	}
}

func decodeRowMXFP4(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkMXFP4; i++ {
		b := src[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		y := dst[i*qkMXFP4 : (i+1)*qkMXFP4]
		d := e8m0ToFP32Half(b[0])
		for j := range qkMXFP4 / 2 {
			y[j] = float32(kvaluesMXFP4[b[1+j]&0x0F]) * d
			y[qkMXFP4/2+j] = float32(kvaluesMXFP4[b[1+j]>>4]) * d
		}
	}
}

func encodeRowNVFP4(dst []byte, src []float32, _ []float32) {
	for i := 0; i < len(src)/qkNVFP4; i++ {
		b := dst[i*nvfp4Bytes : (i+1)*nvfp4Bytes]
		for s := range nvfp4NumSubs {
			xb := src[i*qkNVFP4+s*qkNVFP4Sub : i*qkNVFP4+(s+1)*qkNVFP4Sub]
			var amax float32
			for _, v := range xb {
				if a := abs32(v); amax < a {
					amax = a
				}
			}
			// amax/6 maps the largest E2M1 value (6) onto amax.
			ue := fp32ToUE4M3(amax / 6)
			b[s] = ue
			g := newFP4Grid(ue4m3ToFP32(ue))
			qs := b[nvfp4NumSubs+s*qkNVFP4Sub/2:]
			if amax < g.lim && fp4Codes16(qs[:qkNVFP4Sub/2], xb, &g.midBits) {
				continue
			}
			for j := range qkNVFP4Sub / 2 {
				qs[j] = g.bestIndex(xb[j]) | g.bestIndex(xb[qkNVFP4Sub/2+j])<<4
			}
		}
	}
}

func decodeRowNVFP4(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qkNVFP4; i++ {
		b := src[i*nvfp4Bytes : (i+1)*nvfp4Bytes]
		for s := range nvfp4NumSubs {
			d := ue4m3ToFP32(b[s])
			yb := dst[i*qkNVFP4+s*qkNVFP4Sub : i*qkNVFP4+(s+1)*qkNVFP4Sub]
			qs := b[nvfp4NumSubs+s*qkNVFP4Sub/2:]
			for j := range qkNVFP4Sub / 2 {
				yb[j] = float32(kvaluesMXFP4[qs[j]&0x0F]) * d
				yb[qkNVFP4Sub/2+j] = float32(kvaluesMXFP4[qs[j]>>4]) * d
			}
		}
	}
}
