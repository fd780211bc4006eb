package forward

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
)

// Dot products on the stored blocks, as ggml's CPU backend computes a
// matrix product (ggml-cpu/quants.c, the ggml_vec_dot_*_generic functions):
// each activation row is first converted to the weight type's vec_dot
// partner (type_traits_cpu vec_dot_type) — Q8_0 for the 32-value types,
// Q8_K for the K-quants and IQ4_XS, F16 or BF16 values for F16 and BF16
// weights — and each weight row is multiplied with it block by block in
// integers, the block scales applied in float32.
//
// A weight row is first unpacked (qrow: its levels as int8 and its scales),
// once per row however many tokens it meets; the integer sums run per 16
// values (i8sums16, AVX2 on amd64) and the scales are applied in Go. Q4_K,
// Q6_K (vecdot_kfused.go) and F16 (vecdot_f16.go) rows are instead read
// in place by kernels that apply the scales themselves.

// actKind is the format an activation row is converted to.
type actKind uint8

const (
	actF32  actKind = iota // F32 weights: the values as they are
	actF16                 // F16 weights: values rounded through fp16
	actBF16                // BF16 weights: values rounded through bf16
	actQ8_0                // block_q8_0: 32 int8 levels and a scale
	actQ8K                 // block_q8_K: 256 int8 levels, a scale, sums per 16
)

// vecKernel is how one weight type is multiplied.
type vecKernel struct {
	act    actKind
	block  int // values per block
	bytes  int // bytes per block
	unpack func(r *qrow, row []byte, cols int)
	// fused: the unpacked rows multiply through qrow.kf, on the inputs'
	// Q8_K blocks as encoded (vecdot_kfused.go).
	fused bool
	// inPlace: unpack only points at the stored row (F16, Q8_0 and the
	// fused types), so a chunk of rows costs no scratch.
	inPlace bool
}

// vecKernels are the weight types with a product on the blocks; the others
// are decoded to float32 a chunk of rows at a time.
var vecKernels = map[gguf.Type]*vecKernel{
	gguf.F32:    {act: actF32, block: 1, bytes: 4, unpack: floatUnpacker(readers.F32)},
	gguf.F16:    {act: actF16, block: 1, bytes: 2, unpack: unpackF16, inPlace: true},
	gguf.BF16:   {act: actBF16, block: 1, bytes: 2, unpack: floatUnpacker(readers.BF16)},
	gguf.Q8_0:   {act: actQ8_0, block: 32, bytes: 34, unpack: unpackQ8_0, inPlace: true},
	gguf.Q4_0:   {act: actQ8_0, block: 32, bytes: 18, unpack: unpackQ4_0},
	gguf.Q5_0:   {act: actQ8_0, block: 32, bytes: 22, unpack: unpackQ5_0},
	gguf.IQ4_NL: {act: actQ8_0, block: 32, bytes: 18, unpack: unpackIQ4NL},
	gguf.MXFP4:  {act: actQ8_0, block: 32, bytes: 17, unpack: unpackMXFP4},
	gguf.Q4_K:   {act: actQ8K, block: 256, bytes: 144, unpack: unpackQ4K, fused: true, inPlace: true},
	gguf.Q5_K:   {act: actQ8K, block: 256, bytes: 176, unpack: unpackQ5K},
	gguf.Q6_K:   {act: actQ8K, block: 256, bytes: 210, unpack: unpackQ6K, fused: true, inPlace: true},
	gguf.IQ4_XS: {act: actQ8K, block: 256, bytes: 136, unpack: unpackIQ4XS},
}

// qact is one activation row in its vec_dot partner format.
type qact struct {
	f       []float32 // float kinds: the values (F32: the input itself)
	rounded []float32 // F16, BF16: the values rounded
	qs      []int8    // Q8_0 / Q8_K levels
	qu      []uint8   // Q8_0 where q8Unsigned: the levels + 128 (q8RawDot4)
	d       []float32 // per block scale (32 or 256 values)
	bsums   []int32   // Q8_K: sum of the levels of every 32 (ggml keeps 16s)
	enc     []byte    // scratch: the encoded blocks
}

// quantizeAct converts x to kind into a, reusing a's slices.
func quantizeAct(kind actKind, x []float32, a *qact) error {
	n := len(x)
	switch kind {
	case actF32:
		a.f = x
	case actF16, actBF16:
		a.rounded = grow(a.rounded, n) // not a.f, which may alias an input
		a.f = a.rounded
		for i, v := range x {
			if kind == actF16 {
				a.f[i] = quantize.FP16ToFP32(quantize.FP32ToFP16(v))
			} else {
				a.f[i] = quantize.BF16ToFP32(quantize.FP32ToBF16(v))
			}
		}
	case actQ8_0:
		nb := n / 32
		a.enc = grow(a.enc, nb*34)
		buf := a.enc
		if err := quantize.Encode(gguf.Q8_0, buf, x, n, nil); err != nil {
			return err
		}
		a.qs, a.d = grow(a.qs, n), grow(a.d, nb)
		for b := range nb {
			blk := buf[b*34 : (b+1)*34]
			a.d[b] = quantize.FP16ToFP32(binary.LittleEndian.Uint16(blk))
			for j, q := range blk[2:34] {
				a.qs[b*32+j] = int8(q)
			}
		}
		if q8Unsigned {
			a.qu = grow(a.qu, n)
			for i, q := range a.qs {
				a.qu[i] = uint8(q) ^ 0x80
			}
		}
	case actQ8K:
		nb := n / 256
		a.enc = grow(a.enc, nb*292)
		buf := a.enc
		if err := quantize.Encode(gguf.Q8_K, buf, x, n, nil); err != nil {
			return err
		}
		a.qs, a.d, a.bsums = grow(a.qs, n), grow(a.d, nb), grow(a.bsums, n/32)
		for b := range nb {
			blk := buf[b*292 : (b+1)*292]
			a.d[b] = math.Float32frombits(binary.LittleEndian.Uint32(blk))
			for j, q := range blk[4:260] {
				a.qs[b*256+j] = int8(q)
			}
			for j := range 8 {
				a.bsums[b*8+j] = int32(int16(le.Uint16(blk[260+4*j:]))) + int32(int16(le.Uint16(blk[262+4*j:])))
			}
		}
	default:
		return fmt.Errorf("activation kind %d", kind)
	}
	return nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// qrow is one weight row unpacked for the products.
type qrow struct {
	f      []float32 // F32, BF16: the decoded row (F16 is read in place)
	qs     []int8    // levels in the activation's order
	raw    []byte    // Q8_0, Q4_K, Q6_K, F16: the row itself, read in place
	q8     bool      // Q8_0 (raw): multiplied by q8RawDot1 / q8RawDot4
	d      []float32 // per block: the weight scale (32-value types) or d (K)
	dmin   []float32 // Q4_K, Q5_K: per 256 the scale of the mins
	scales []int32   // K types: the integer scale of every 16 values (Q4_K: 32)
	mins   []int32   // Q4_K, Q5_K: the integer min of every 32 values
	sums   []int32   // scratch: the integer sums per 16 values
	kf     *kFused   // Q4_K, Q6_K: the fused kernels, on raw (vecdot_kfused.go)
}

// dot is the product of the unpacked row r with the activation a.
func (r *qrow) dot(kind actKind, a *qact) float32 {
	switch kind {
	case actQ8_0:
		if r.q8 {
			return q8RawDot1(r.raw, a.qs, a.d)
		}
		return dotQ8(int8Bytes(r.qs), 32, a.qs, r.d, a.d, r.sums)
	case actQ8K:
		if r.kf != nil {
			return r.kf.dot1(r.raw, a.enc)
		}
		isums := r.sums[:len(a.d)]
		dotK(r.qs, a.qs, r.scales, isums)
		var sumf float32
		for b, d := range a.d {
			sumf += (r.d[b] * d) * float32(isums[b])
			if r.mins != nil {
				bs := a.bsums[8*b : 8*b+8 : 8*b+8]
				mn := r.mins[8*b : 8*b+8 : 8*b+8]
				var m int32
				for j := range 8 {
					m += bs[j] * mn[j]
				}
				sumf -= (r.dmin[b] * d) * float32(m)
			}
		}
		return sumf
	case actF16:
		return dotF16(r.raw, a.f)
	default:
		return dotF32(r.f, a.f)
	}
}

// dotF4 is dot of the unpacked row r with four activations of a float
// kind (actF32, actF16, actBF16).
func (r *qrow) dotF4(kind actKind, a0, a1, a2, a3 *qact) (float32, float32, float32, float32) {
	if kind == actF16 {
		return dotF16x4(r.raw, a0.f, a1.f, a2.f, a3.f)
	}
	return dotF32x4(r.f, a0.f, a1.f, a2.f, a3.f)
}

// dotQ8x4Generic is dotQ8 of one row with four inputs, one at a time.
func dotQ8x4Generic(a []byte, astride int, b [4][]int8, wd []float32, xd [4][]float32, sums []int32) (s [4]float32) {
	for i := range s {
		s[i] = dotQ8Generic(a, astride, b[i], wd, xd[i], sums)
	}
	return s
}

// dotQ8x4 is dot of the unpacked row r with four activations of a Q8_0
// partner (kind actQ8_0).
func (r *qrow) dotQ8x4(a0, a1, a2, a3 *qact) [4]float32 {
	b := [4][]int8{a0.qs, a1.qs, a2.qs, a3.qs}
	xd := [4][]float32{a0.d, a1.d, a2.d, a3.d}
	if r.q8 {
		return q8RawDot4(r.raw, b, [4][]uint8{a0.qu, a1.qu, a2.qu, a3.qu}, xd)
	}
	return dotQ8x4(int8Bytes(r.qs), 32, b, r.d, xd, r.sums)
}

// dotQ8Generic is dotQ8 through i8sums16, the scales applied block by
// block as ggml_vec_dot_q8_0_q8_0_generic does.
func dotQ8Generic(a []byte, astride int, b []int8, wd, xd []float32, sums []int32) float32 {
	groups := len(b) / 32
	i8sums16(a, astride, b, sums[:2*groups])
	var sumf float32
	for g := range groups {
		sumf += float32(sums[2*g]+sums[2*g+1]) * (wd[g] * xd[g])
	}
	return sumf
}

// dotKGeneric is dotK through i8sums16.
func dotKGeneric(a, b []int8, scales []int32, out []int32) {
	var sums [16]int32
	for i := range len(b) / 256 {
		i8sums16Packed(a[256*i:256*i+256], b[256*i:256*i+256], sums[:])
		var isum int32
		for j, s := range sums {
			isum += scales[16*i+j] * s
		}
		out[i] = isum
	}
}

// i8sums16Packed is i8sums16 over contiguous levels.
func i8sums16Packed(a, b []int8, out []int32) {
	i8sums16(int8Bytes(a), 32, b, out)
}

// int8Bytes views levels as bytes (same size, same bits).
func int8Bytes(a []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a))
}

// i8sums16Generic sets out[i] = Σ a·b over the 16 values i·16 …; a's
// groups of 32 start every astride bytes, b's are contiguous.
func i8sums16Generic(a []byte, astride int, b []int8, out []int32) {
	for g := range len(b) / 32 {
		aa := a[g*astride : g*astride+32 : g*astride+32]
		bb := b[g*32 : g*32+32 : g*32+32]
		var s0, s1 int32
		for j := range 16 {
			s0 += int32(int8(aa[j])) * int32(bb[j])
			s1 += int32(int8(aa[j+16])) * int32(bb[j+16])
		}
		out[2*g], out[2*g+1] = s0, s1
	}
}

// axpyF32Generic sets y[i] += a·x[i] for every i of y.
func axpyF32Generic(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * v
	}
}

// dotF32Generic is Σ a·b in float32 with eight partial sums.
func dotF32Generic(a, b []float32) float32 { return dot(a, b) }

func floatUnpacker(dt readers.DType) func(r *qrow, row []byte, cols int) {
	return func(r *qrow, row []byte, cols int) {
		r.f = grow(r.f, cols)
		// The row's length is checked by the caller, so the only error,
		// an unknown dtype, cannot happen.
		_ = readers.ToFloat32(r.f, row, dt)
	}
}

// prepQ8 sizes r for nb blocks of 32 levels.
func prepQ8(r *qrow, cols int) {
	r.qs, r.d, r.raw, r.q8 = grow(r.qs, cols), grow(r.d, cols/32), nil, false
}

func half(b []byte) float32 { return quantize.FP16ToFP32(binary.LittleEndian.Uint16(b)) }

// unpackQ8_0 keeps the row as stored: q8RawDot1 and q8RawDot4 read the
// levels and the fp16 scales in place.
func unpackQ8_0(r *qrow, row []byte, _ int) { r.raw, r.q8 = row, true }

// q8RawRowsGeneric is q8RawRows through the Go form, row by row.
func q8RawRowsGeneric(x []byte, b []int8, xd []float32, out []float32) {
	if len(out) == 0 {
		return
	}
	n := len(x) / len(out)
	for r := range out {
		out[r] = q8RawDotGeneric(x[r*n:(r+1)*n], b, xd)
	}
}

// q8RawDotGeneric is the product of the stored Q8_0 blocks x with the
// Q8_0 activation (levels b, scales xd), as dotQ8Generic.
func q8RawDotGeneric(x []byte, b []int8, xd []float32) float32 {
	var sumf float32
	var sums [2]int32
	for g := range len(x) / 34 {
		blk := x[34*g : 34*g+34 : 34*g+34]
		i8sums16Generic(blk[2:], 34, b[32*g:32*g+32], sums[:])
		sumf += float32(sums[0]+sums[1]) * (half(blk) * xd[g])
	}
	return sumf
}

// The unpackers work on eight levels at a time in a uint64 (SWAR): nibbles
// and high bits are masked and shifted within each byte, and an offset c
// (8, 16 or 32) is taken off every byte as (v + 0x80 - c) ^ 0x80, which
// never carries into the next byte for 0 ≤ v < 2c.
const (
	lo4   = 0x0F0F0F0F0F0F0F0F
	lo2   = 0x0303030303030303
	lo1   = 0x0101010101010101
	msb   = 0x8080808080808080
	less8 = 0x7878787878787878 // 0x80 - 8 in every byte
)

var le = binary.LittleEndian

// bitBytes[b] has byte k = 0x10 where bit k of b is set: eight Q5_0 high
// bits moved to their levels' bit 4.
var bitBytes = func() (t [256]uint64) {
	for b := range t {
		for k := range 8 {
			if b>>k&1 != 0 {
				t[b] |= 0x10 << (8 * k)
			}
		}
	}
	return t
}()

func unpackQ4_0(r *qrow, row []byte, cols int) {
	prepQ8(r, cols)
	qb := int8Bytes(r.qs)
	for b := range cols / 32 {
		blk := row[b*18 : b*18+18 : b*18+18]
		r.d[b] = half(blk)
		q := qb[b*32 : b*32+32 : b*32+32]
		for l := 0; l < 16; l += 8 {
			u := le.Uint64(blk[2+l:])
			le.PutUint64(q[l:], (u&lo4+less8)^msb)
			le.PutUint64(q[16+l:], (u>>4&lo4+less8)^msb)
		}
	}
}

func unpackQ5_0(r *qrow, row []byte, cols int) {
	prepQ8(r, cols)
	qb := int8Bytes(r.qs)
	const less16 = 0x7070707070707070
	for b := range cols / 32 {
		blk := row[b*22 : b*22+22 : b*22+22]
		r.d[b] = half(blk)
		qh := le.Uint32(blk[2:])
		q := qb[b*32 : b*32+32 : b*32+32]
		for l := 0; l < 16; l += 8 {
			u := le.Uint64(blk[6+l:])
			le.PutUint64(q[l:], (u&lo4|bitBytes[qh>>l&0xFF]+less16)^msb)
			le.PutUint64(q[16+l:], (u>>4&lo4|bitBytes[qh>>(16+l)&0xFF]+less16)^msb)
		}
	}
}

// kvaluesIQ4NL is kvalues_iq4nl of ggml/src/ggml-common.h (data).
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// kvaluesMXFP4 is kvalues_mxfp4 of ggml/src/ggml-common.h (data).
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func unpackIQ4NL(r *qrow, row []byte, cols int) {
	prepQ8(r, cols)
	for b := range cols / 32 {
		blk := row[b*18 : b*18+18 : b*18+18]
		r.d[b] = half(blk)
		q := r.qs[b*32 : b*32+32 : b*32+32]
		for j, v := range blk[2:18] {
			q[j] = kvaluesIQ4NL[v&0xF]
			q[j+16] = kvaluesIQ4NL[v>>4]
		}
	}
}

// e8m0Half is ggml_e8m0_to_fp32_half (ggml-impl.h): 2^(e-128).
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func unpackMXFP4(r *qrow, row []byte, cols int) {
	prepQ8(r, cols)
	for b := range cols / 32 {
		blk := row[b*17 : b*17+17 : b*17+17]
		r.d[b] = e8m0Half(blk[0])
		q := r.qs[b*32 : b*32+32 : b*32+32]
		for j, v := range blk[1:17] {
			q[j] = kvaluesMXFP4[v&0xF]
			q[j+16] = kvaluesMXFP4[v>>4]
		}
	}
}

// prepK sizes r for the 256-value super-blocks of cols.
func prepK(r *qrow, cols int, mins bool) {
	nb := cols / 256
	r.qs, r.d, r.scales, r.raw, r.kf = grow(r.qs, cols), grow(r.d, nb), grow(r.scales, cols/16), nil, nil
	r.mins, r.dmin = nil, nil
	if mins {
		r.mins, r.dmin = grow(r.mins, cols/32), grow(r.dmin, nb)
	}
}

// scaleMinK4 unpacks the 12 bytes of 6-bit scales and mins of Q4_K and
// Q5_K (get_scale_min_k4, as the utmp words of ggml's vec_dot) into eight
// scales and eight mins, one per 32 values; per16 writes each scale twice
// (one per 16 values).
func scaleMinK4(q []byte, sc, mn []int32, per16 bool) {
	const k1, k2, k3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303
	u0, u1, u2 := le.Uint32(q), le.Uint32(q[4:]), le.Uint32(q[8:])
	s := uint64(u0&k1) | uint64(u2&k2|(u0>>6&k3)<<4)<<32
	m := uint64(u1&k1) | uint64(u2>>4&k2|(u1>>6&k3)<<4)<<32
	mn = mn[:8:8]
	for j := range 8 {
		mn[j] = int32(m >> (8 * j) & 0xFF)
	}
	if per16 {
		sc = sc[:16:16]
		for j := range 8 {
			v := int32(s >> (8 * j) & 0xFF)
			sc[2*j], sc[2*j+1] = v, v
		}
		return
	}
	sc = sc[:8:8]
	for j := range 8 {
		sc[j] = int32(s >> (8 * j) & 0xFF)
	}
}

func unpackQ5K(r *qrow, row []byte, cols int) {
	prepK(r, cols, true)
	for b := range cols / 256 {
		blk := row[b*176 : b*176+176 : b*176+176]
		r.d[b], r.dmin[b] = half(blk), half(blk[2:])
		scaleMinK4(blk[4:16], r.scales[16*b:], r.mins[8*b:], true)
		qh := blk[16:48:48]
		q := int8Bytes(r.qs[b*256 : b*256+256 : b*256+256])
		for j := range 4 {
			qs := blk[48+32*j : 80+32*j : 80+32*j]
			for l := 0; l < 32; l += 8 {
				u, h := le.Uint64(qs[l:]), le.Uint64(qh[l:])
				le.PutUint64(q[64*j+l:], u&lo4|(h>>(2*j)&lo1)<<4)
				le.PutUint64(q[64*j+32+l:], u>>4&lo4|(h>>(2*j+1)&lo1)<<4)
			}
		}
	}
}

func unpackIQ4XS(r *qrow, row []byte, cols int) {
	prepK(r, cols, false)
	for b := range cols / 256 {
		blk := row[b*136 : b*136+136 : b*136+136]
		r.d[b] = half(blk)
		h := binary.LittleEndian.Uint16(blk[2:])
		sl := blk[4:8]
		q := r.qs[b*256 : b*256+256 : b*256+256]
		for ib := range 8 {
			ls := int32(sl[ib/2]>>(4*(ib%2))&0xF|byte(h>>(2*ib)&3)<<4) - 32
			r.scales[16*b+2*ib], r.scales[16*b+2*ib+1] = ls, ls
			qs := blk[8+16*ib : 24+16*ib]
			for j, v := range qs {
				q[32*ib+j] = kvaluesIQ4NL[v&0xF]
				q[32*ib+16+j] = kvaluesIQ4NL[v>>4]
			}
		}
	}
}
