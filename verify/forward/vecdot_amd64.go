//go:build !purego

package forward

import "golang.org/x/sys/cpu"

// The amd64 kernels of the products (vecdot_amd64.s); the purego build tag
// turns them off, and vecdot_test.go checks them against the Go forms.

//go:noescape
func i8sums16AVX2(a *byte, astride int, b *int8, groups int, out *int32)

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func dotF32x4AVX2(w, x0, x1, x2, x3 *float32, n int, out *float32)

//go:noescape
func i8dotQ8AVX2(a *byte, astride int, b *int8, wd, xd *float32, groups int) float32

//go:noescape
func q4kDot4AVX2(x, a *byte, astride int, blocks int, out *float32, vnni bool)

//go:noescape
func q4kDot8VNNI(x, a *byte, astride int, blocks int, out *float32)

//go:noescape
func q4kRowsAVX2(x, a *byte, blocks, rows int, out *float32)

//go:noescape
func q6kDot4AVX2(x, a *byte, astride int, blocks int, out *float32, vnni bool)

//go:noescape
func q6kDot8VNNI(x, a *byte, astride int, blocks int, out *float32)

//go:noescape
func q6kRowsAVX2(x, a *byte, blocks, rows int, out *float32)

//go:noescape
func i8dotQ8x4AVX2(a *byte, astride int, b *[4]*int8, wd *float32, xd *[4]*float32, groups int, out *float32)

//go:noescape
func i8dotKAVX2(a, b *int8, scales *int32, blocks int, out *int32)

//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotF16x4AVX2(w *byte, x0, x1, x2, x3 *float32, n int, out *float32)

//go:noescape
func dotF16R3x4AVX2(w *byte, stride int, x0, x1, x2, x3 *float32, n int, out *float32)

//go:noescape
func axpyF32AVX2(y *float32, a float32, x *float32, n int)

//go:noescape
func q8RawRowsAVX2(x *byte, b *int8, xd *float32, blocks, rows int, out *float32)

//go:noescape
func q8RawDot4AVX2(x *byte, b *[4]*int8, xd *[4]*float32, blocks int, out *float32)

//go:noescape
func q8RawRows8VNNI(x *byte, b *[8]*uint8, xd8 *float32, blocks, rows int, out *float32)

//go:noescape
func q8RawDot4VNNI(x *byte, b *[4]*uint8, xd *[4]*float32, blocks int, out *float32)

var (
	useAVX2 = cpu.X86.HasAVX2
	useFMA  = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useF16C = useFMA && cpu.X86.HasF16C // the fused K-quant kernels
	// useVNNI: the fused K-quant kernels' four-input forms add the scaled
	// pair sums with VPDPWSSD (AVX512-VNNI on 256-bit registers).
	useVNNI = useF16C && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL
	// q8Unsigned: quantizeAct also keeps Q8_0 levels + 128 (qact.qu) for
	// q8RawDot4VNNI.
	q8Unsigned = useVNNI
)

// i8sums16 sets out[i] to Σ a·b over the 16 values from i·16 on: len(b)
// values, a's groups of 32 levels starting every astride bytes.
func i8sums16(a []byte, astride int, b []int8, out []int32) {
	groups := len(b) / 32
	if !useAVX2 || groups == 0 {
		i8sums16Generic(a, astride, b, out)
		return
	}
	_ = a[(groups-1)*astride+31]
	_ = out[2*groups-1]
	i8sums16AVX2(&a[0], astride, &b[0], groups, &out[0])
}

// dotF32 is Σ a·b in float32 (b at least as long as a).
func dotF32(a, b []float32) float32 {
	n := len(a) &^ 31
	if !useFMA || n == 0 {
		return dotF32Generic(a, b)
	}
	b = b[:len(a)]
	s := dotF32AVX2(&a[0], &b[0], n)
	if n < len(a) {
		s += dotF32Generic(a[n:], b[n:])
	}
	return s
}

// dotQ8 is Σ over groups of 32 of (Σ a·b)·(wd·xd): a's groups every astride
// bytes, b's contiguous, sums scratch for the Go form.
func dotQ8(a []byte, astride int, b []int8, wd, xd []float32, sums []int32) float32 {
	groups := len(b) / 32
	n4 := groups &^ 3
	if !useFMA || n4 == 0 {
		return dotQ8Generic(a, astride, b, wd, xd, sums)
	}
	_ = a[(n4-1)*astride+31]
	_, _ = wd[n4-1], xd[n4-1]
	s := i8dotQ8AVX2(&a[0], astride, &b[0], &wd[0], &xd[0], n4)
	if n4 < groups {
		s += dotQ8Generic(a[n4*astride:], astride, b[n4*32:], wd[n4:], xd[n4:], sums)
	}
	return s
}

// dotK sets out[i] to Σ over the sixteen 16s of super-block i of
// scale·(Σ a·b).
func dotK(a, b []int8, scales []int32, out []int32) {
	blocks := len(b) / 256
	if !useAVX2 || blocks == 0 {
		dotKGeneric(a, b, scales, out)
		return
	}
	_, _, _ = a[blocks*256-1], scales[blocks*16-1], out[blocks-1]
	i8dotKAVX2(&a[0], &b[0], &scales[0], blocks, &out[0])
}

// kAsm is a fused type's kernels: four (and, with VNNI, eight) activations
// stride bytes apart, and rows one after the other with one activation.
type kAsm struct {
	four func(x, a *byte, astride int, blocks int, out *float32, vnni bool)
	rows func(x, a *byte, blocks, rows int, out *float32)
	// eight: eight activations stride bytes apart (VNNI only).
	eight func(x, a *byte, astride int, blocks int, out *float32)
}

var (
	q4kAsm = kAsm{q4kDot4AVX2, q4kRowsAVX2, q4kDot8VNNI}
	q6kAsm = kAsm{q6kDot4AVX2, q6kRowsAVX2, q6kDot8VNNI}
)

// dot8 sets out[0:8] to the products of the blocks x with the eight
// activations a, a[stride:], … a[7·stride:], each with dot4's bits, and
// reports true; false, having done nothing, where no eight-input kernel
// runs (then dot4 does).
func (k *kFused) dot8(x, a []byte, stride int, out []float32) bool {
	blocks := len(x) / k.bytes
	if !useVNNI || blocks == 0 {
		return false
	}
	_, _ = a[7*stride+blocks*q8KBytes-1], out[7]
	k.asm.eight(&x[0], &a[0], stride, blocks, &out[0])
	return true
}

// dot4 sets out[0:4] to the products of the blocks x with the four
// activations a, a[stride:], a[2·stride:], a[3·stride:].
func (k *kFused) dot4(x, a []byte, stride int, out []float32) {
	blocks := len(x) / k.bytes
	if !useF16C || blocks == 0 {
		k.dot4Generic(x, a, stride, out)
		return
	}
	_, _ = a[3*stride+blocks*q8KBytes-1], out[3]
	k.asm.four(&x[0], &a[0], stride, blocks, &out[0], useVNNI)
}

// dot1 is the product of the blocks x with the activation a.
func (k *kFused) dot1(x, a []byte) float32 {
	blocks := len(x) / k.bytes
	if !useF16C || blocks == 0 {
		return k.generic(x, a)
	}
	_ = a[blocks*q8KBytes-1]
	var s float32
	k.asm.rows(&x[0], &a[0], blocks, 1, &s)
	return s
}

// gemv sets out[r] to the product of row r of x (len(out) rows of equal
// length, one after the other) with the activation a: one call for a
// stretch of rows, streamed in order.
func (k *kFused) gemv(x, a []byte, out []float32) {
	if len(out) == 0 {
		return
	}
	blocks := len(x) / len(out) / k.bytes
	if !useF16C || blocks == 0 {
		k.gemvGeneric(x, a, out)
		return
	}
	_, _ = x[len(out)*blocks*k.bytes-1], a[blocks*q8KBytes-1]
	k.asm.rows(&x[0], &a[0], blocks, len(out), &out[0])
}

// dotF32x4 is dotF32 of w with four vectors (each at least as long as w).
func dotF32x4(w, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	n := len(w) &^ 15
	if !useFMA || n == 0 {
		return dot4(w, x0, x1, x2, x3)
	}
	_, _, _, _ = x0[n-1], x1[n-1], x2[n-1], x3[n-1]
	var s [4]float32
	dotF32x4AVX2(&w[0], &x0[0], &x1[0], &x2[0], &x3[0], n, &s[0])
	if n < len(w) {
		a, b, c, d := dot4(w[n:], x0[n:], x1[n:], x2[n:], x3[n:])
		s[0], s[1], s[2], s[3] = s[0]+a, s[1]+b, s[2]+c, s[3]+d
	}
	return s[0], s[1], s[2], s[3]
}

// dotQ8x4 is dotQ8 of one row with four inputs (levels b[i], scales xd[i]).
func dotQ8x4(a []byte, astride int, b [4][]int8, wd []float32, xd [4][]float32, sums []int32) [4]float32 {
	groups := len(b[0]) / 32
	if !useFMA || groups == 0 {
		return dotQ8x4Generic(a, astride, b, wd, xd, sums)
	}
	_, _ = a[(groups-1)*astride+31], wd[groups-1]
	var bp [4]*int8
	var xp [4]*float32
	for i := range 4 {
		_, _ = b[i][groups*32-1], xd[i][groups-1]
		bp[i], xp[i] = &b[i][0], &xd[i][0]
	}
	var s [4]float32
	i8dotQ8x4AVX2(&a[0], astride, &bp, &wd[0], &xp, groups, &s[0])
	return s
}

// dotF16 is Σ w·x in float32, w fp16 (2·len(x) bytes).
func dotF16(w []byte, x []float32) float32 {
	n := len(x) &^ 31
	if !useF16C || n == 0 {
		return dotF16Generic(w, x)
	}
	_ = w[2*n-1]
	s := dotF16AVX2(&w[0], &x[0], n)
	if n < len(x) {
		s += dotF16Generic(w[2*n:], x[n:])
	}
	return s
}

// dotF16x4 is dotF16 of w with four vectors (each of len(w)/2 values at
// least).
func dotF16x4(w []byte, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	cols := len(w) / 2
	n := cols &^ 15
	if !useF16C || n == 0 {
		return dotF16x4Generic(w, x0, x1, x2, x3)
	}
	_, _, _, _ = x0[n-1], x1[n-1], x2[n-1], x3[n-1]
	var s [4]float32
	dotF16x4AVX2(&w[0], &x0[0], &x1[0], &x2[0], &x3[0], n, &s[0])
	if n < cols {
		a, b, c, d := dotF16x4Generic(w[2*n:], x0[n:], x1[n:], x2[n:], x3[n:])
		s[0], s[1], s[2], s[3] = s[0]+a, s[1]+b, s[2]+c, s[3]+d
	}
	return s[0], s[1], s[2], s[3]
}

// dotF16R3x4 sets out[4r+t] to dotF16 of row r of w (three rows of cols
// values, stride bytes apart) with input t (each at least cols long).
func dotF16R3x4(w []byte, stride, cols int, x0, x1, x2, x3 []float32, out *[12]float32) {
	n := cols &^ 7
	if !useF16C || n == 0 {
		dotF16R3x4Generic(w, stride, cols, x0, x1, x2, x3, out)
		return
	}
	_, _ = w[2*stride+2*cols-1], w[2*cols-1]
	_, _, _, _ = x0[cols-1], x1[cols-1], x2[cols-1], x3[cols-1]
	dotF16R3x4AVX2(&w[0], stride, &x0[0], &x1[0], &x2[0], &x3[0], n, &out[0])
	if n < cols {
		for r := range 3 {
			a, b, c, d := dotF16x4Generic(w[r*stride+2*n:r*stride+2*cols], x0[n:], x1[n:], x2[n:], x3[n:])
			out[4*r], out[4*r+1], out[4*r+2], out[4*r+3] = out[4*r]+a, out[4*r+1]+b, out[4*r+2]+c, out[4*r+3]+d
		}
	}
}

// axpyF32 sets y[i] += a·x[i] for every i of y (x at least as long).
func axpyF32(y []float32, a float32, x []float32) {
	n := len(y) &^ 15
	if !useFMA || n == 0 {
		axpyF32Generic(y, a, x)
		return
	}
	_ = x[n-1]
	axpyF32AVX2(&y[0], a, &x[0], n)
	if n < len(y) {
		axpyF32Generic(y[n:], a, x[n:])
	}
}

// q8RawDot1 is the product of the stored Q8_0 blocks x with the Q8_0
// activation (levels b, scales xd).
func q8RawDot1(x []byte, b []int8, xd []float32) float32 {
	blocks := len(x) / 34
	if !useF16C || blocks == 0 {
		return q8RawDotGeneric(x, b, xd)
	}
	_, _ = b[32*blocks-1], xd[blocks-1]
	var s float32
	q8RawRowsAVX2(&x[0], &b[0], &xd[0], blocks, 1, &s)
	return s
}

// q8RawRows sets out[r] to q8RawDot1 of row r of x (len(out) rows of equal
// length, one after the other): one call for a stretch of rows.
func q8RawRows(x []byte, b []int8, xd []float32, out []float32) {
	if len(out) == 0 {
		return
	}
	blocks := len(x) / len(out) / 34
	if !useF16C || blocks == 0 {
		q8RawRowsGeneric(x, b, xd, out)
		return
	}
	_, _, _ = x[len(out)*34*blocks-1], b[32*blocks-1], xd[blocks-1]
	q8RawRowsAVX2(&x[0], &b[0], &xd[0], blocks, len(out), &out[0])
}

// q8RawDot4 is q8RawDot1 of x with four activations (levels b[i], scales
// xd[i]); bu[i], when set, are b[i]'s levels + 128, for the VNNI kernel.
func q8RawDot4(x []byte, b [4][]int8, bu [4][]uint8, xd [4][]float32) (s [4]float32) {
	blocks := len(x) / 34
	if !useF16C || blocks == 0 {
		for i := range s {
			s[i] = q8RawDotGeneric(x, b[i], xd[i])
		}
		return s
	}
	xp := firsts(xd, blocks)
	if useVNNI && bu[0] != nil && bu[1] != nil && bu[2] != nil && bu[3] != nil {
		up := firsts(bu, 32*blocks)
		q8RawDot4VNNI(&x[0], &up, &xp, blocks, &s[0])
		return s
	}
	bp := firsts(b, 32*blocks)
	q8RawDot4AVX2(&x[0], &bp, &xp, blocks, &s[0])
	return s
}

// firsts returns the addresses of the four slices' first values, each
// slice checked to hold n values at least.
func firsts[T any](s [4][]T, n int) (p [4]*T) {
	for i := range 4 {
		_ = s[i][n-1]
		p[i] = &s[i][0]
	}
	return p
}

// q8RawRows8 sets out[8r+t] to q8RawDot4's product of row r of x (len(out)/8
// rows of equal length, one after the other) with activation t of eight
// (levels + 128 in bu, scales interleaved eight per block in xd8) and
// reports true; false, having done nothing, where no eight-input kernel
// runs (then q8RawDot4 does, row by row).
func q8RawRows8(x []byte, bu [8][]uint8, xd8 []float32, out []float32) bool {
	rows := len(out) / 8
	if !useVNNI || rows == 0 {
		return false
	}
	n := len(x) / rows
	blocks := n / 34
	if blocks == 0 {
		return false
	}
	var up [8]*uint8
	for i := range 8 {
		if bu[i] == nil {
			return false
		}
		_ = bu[i][32*blocks-1]
		up[i] = &bu[i][0]
	}
	_, _ = x[rows*n-1], xd8[8*blocks-1]
	q8RawRows8VNNI(&x[0], &up, &xd8[0], blocks, rows, &out[0])
	return true
}
