package forward

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// matrix is a weight of rows × cols (ggml ne1 × ne0) read through a Tensor,
// from row off on (one expert of a stacked ne2 tensor).
type matrix struct {
	name string
	// tensor is the GGUF tensor; expert the matrix's index in a stacked
	// tensor of experts experts (−1 and 0 for a plain matrix).
	tensor          string
	expert, experts int
	t               Tensor
	rows, cols      int
	off             int
}

// chunkFloats is how many weight values a worker decodes at a time: large
// enough to amortise the call, small enough to stay in the L2 cache.
const chunkFloats = 1 << 14

// parallel runs fn(i) for i in [0, n) on up to threads goroutines, handing
// out indexes in order; it returns the first error.
func parallel(ctx context.Context, threads, n int, fn func(worker, i int) error) error {
	threads = max(1, min(threads, n))
	if threads == 1 {
		for i := 0; i < n; i++ {
			if err := fn(0, i); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
		stop  atomic.Bool
	)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(w, i); err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// mul computes out[t] = W·x[t] (+ bias) for every input row x[t] (len cols);
// out[t] has len rows. Weights stored in a type with a vec_dot kernel
// (vecKernels) are multiplied on their blocks as ggml does (mulBlocks);
// the others are decoded a chunk of rows at a time (mulDecoded). Either way
// a chunk of rows is unpacked once and applied to every input, so a batch
// of tokens costs one pass over the weights.
func (s *Session) mul(ctx context.Context, w *matrix, bias []float32, x, out [][]float32) error {
	if s.m.observe != nil && w.tensor != "" {
		if err := s.m.observe(w.tensor, w.expert, w.experts, x); err != nil {
			return err
		}
	}
	done := false
	if bt, ok := w.t.(blockTensor); ok {
		if k := vecKernels[bt.blockType()]; k != nil && w.cols%k.block == 0 {
			var err error
			if done, err = s.mulBlocks(ctx, w, bt, k, x, out); err != nil {
				return err
			}
		}
	}
	if !done {
		if pt, ok := w.t.(ProductTyped); ok {
			if k := vecKernels[pt.ProductType()]; k != nil && w.cols%k.block == 0 {
				x = roundActs(k.act, x, w.cols)
			}
		}
		if err := s.mulDecoded(ctx, w, x, out); err != nil {
			return err
		}
	}
	if bias != nil {
		for _, o := range out {
			for i := range o {
				o[i] += bias[i]
			}
		}
	}
	return nil
}

// roundActs returns the inputs x (rows of cols values) as the products of
// mulBlocks see them: converted to kind and back to float32. A row that
// cannot be converted (non-finite) stays as it is, as in mulBlocks.
func roundActs(kind actKind, x [][]float32, cols int) [][]float32 {
	if kind == actF32 {
		return x
	}
	out := rows(len(x), cols)
	var a qact
	for t, row := range x {
		if quantizeAct(kind, row[:cols], &a) != nil {
			copy(out[t], row[:cols])
			continue
		}
		for i := range out[t] {
			switch kind {
			case actQ8_0:
				out[t][i] = float32(a.qs[i]) * a.d[i/32]
			case actQ8K:
				out[t][i] = float32(a.qs[i]) * a.d[i/256]
			default:
				out[t][i] = a.f[i]
			}
		}
	}
	return out
}

// mulDecoded is mul through float32 rows: a chunk of rows of W decoded at a
// time and multiplied with every input.
func (s *Session) mulDecoded(ctx context.Context, w *matrix, x, out [][]float32) error {
	rowsPer := max(1, chunkFloats/w.cols)
	chunks := (w.rows + rowsPer - 1) / rowsPer
	bufs := s.scratch(w.cols * rowsPer)
	return parallel(ctx, s.m.threads, chunks, func(worker, c int) error {
		if c%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		r0 := c * rowsPer
		n := min(rowsPer, w.rows-r0)
		buf := bufs[worker][:n*w.cols]
		if err := w.t.ReadRows(w.off+r0, n, buf); err != nil {
			return fmt.Errorf("%s rows %d..%d: %w", w.name, r0, r0+n, err)
		}
		for r := 0; r < n; r++ {
			mulRow(buf[r*w.cols:(r+1)*w.cols], x, out, r0+r)
		}
		return nil
	})
}

// Tiling of mulBlocks: a chunk of unpacked rows (at most unpackedBytes, at
// most maxChunkRows rows) meets tokenTile activations at a time, so both
// stay in the L2 cache while every row is used by every token of the tile.
const (
	unpackedBytes = 128 << 10
	maxChunkRows  = 32
	tokenTile     = 32
)

// mulScratch is what mulBlocks keeps from call to call: each worker's
// unpacked rows and the converted inputs.
type mulScratch struct {
	rows [][]qrow
	acts []qact
	enc  []byte    // the inputs' Q8_K blocks one after the other (fused kernels)
	xd8  []float32 // Q8_0 rows in tiles (q8Unsigned): the inputs' scales eight by eight per block
}

// mulBlocks is mul on the stored blocks: every input converted once to the
// kernel's activation format, then rows unpacked a chunk at a time and
// multiplied with the inputs a tile at a time, chunks spread over the
// threads. It reports false, having done nothing, when an input cannot be
// quantized (a non-finite value): mulDecoded then runs in float32.
func (s *Session) mulBlocks(ctx context.Context, w *matrix, bt blockTensor, k *vecKernel, x, out [][]float32) (bool, error) {
	s.mm.acts = grow(s.mm.acts, len(x))
	acts := s.mm.acts
	stride := 0 // bytes from one input's Q8_K blocks to the next (fused)
	if k.fused {
		stride = w.cols / 256 * q8KBytes
		s.mm.enc = grow(s.mm.enc, len(x)*stride)
		for t := range acts {
			acts[t].enc = s.mm.enc[t*stride : (t+1)*stride : (t+1)*stride]
		}
	}
	var bad atomic.Bool
	err := parallel(ctx, s.m.threads, len(x), func(_, t int) error {
		var err error
		if k.fused { // the fused kernels read the encoded Q8_K blocks alone
			err = quantize.Encode(gguf.Q8_K, acts[t].enc, x[t][:w.cols], w.cols, nil)
		} else {
			err = quantizeAct(k.act, x[t][:w.cols], &acts[t])
		}
		if err != nil {
			bad.Store(true)
		}
		return nil
	})
	if err != nil || bad.Load() {
		return false, err
	}
	// Q8_0 rows with the VNNI kernels: a tile of rows meets eight inputs
	// per call (q8RawRows8; the last fewer than eight go row by row), their
	// scales interleaved here once, eight per block.
	q8Tile := q8Unsigned && bt.blockType() == gguf.Q8_0 && len(x) >= 8
	nb := w.cols / 32
	if q8Tile {
		s.mm.xd8 = grow(s.mm.xd8, len(x)/8*8*nb)
		for t := 0; t+8 <= len(x); t += 8 {
			xd := s.mm.xd8[t*nb : (t+8)*nb]
			for i := range 8 {
				for b, d := range acts[t+i].d[:nb] {
					xd[8*b+i] = d
				}
			}
		}
	}
	rowBytes := w.cols / k.block * k.bytes
	unpacked := w.cols // bytes of an unpacked row
	switch k.act {
	case actF32, actBF16:
		unpacked = 4 * w.cols
	case actF16:
		unpacked = 2 * w.cols
	}
	rowsPer := max(1, min(maxChunkRows, unpackedBytes/unpacked))
	if k.act == actF16 && rowsPer >= 3 {
		rowsPer -= rowsPer % 3 // mulF16Rows3's groups
	}
	if k.inPlace && len(x) == 1 {
		// One token, rows read in place: each row is read once, so a
		// chunk is only a stretch of memory to stream; long stretches
		// (four per thread) keep the hardware prefetcher on one sequential
		// stream per thread, and the threads meet only at the end.
		rowsPer = max(rowsPer, (w.rows+4*s.m.threads-1)/(4*s.m.threads))
	}
	chunks := (w.rows + rowsPer - 1) / rowsPer
	if len(s.mm.rows) < s.m.threads {
		s.mm.rows = make([][]qrow, s.m.threads)
	}
	for i := range s.mm.rows {
		if len(s.mm.rows[i]) < rowsPer {
			s.mm.rows[i] = append(s.mm.rows[i], make([]qrow, rowsPer-len(s.mm.rows[i]))...)
		}
	}
	err = parallel(ctx, s.m.threads, chunks, func(worker, c int) error {
		if c%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		r0 := c * rowsPer
		n := min(rowsPer, w.rows-r0)
		data, err := bt.blockRows(w.off+r0, n)
		if err != nil {
			return fmt.Errorf("%s rows %d..%d: %w", w.name, r0, r0+n, err)
		}
		rows := s.mm.rows[worker][:n]
		if len(x) == 1 && k.inPlace && k.act != actF16 { // one token: a GEMV over the stretch
			if k.fused {
				k.unpack(&rows[0], data[:rowBytes], w.cols) // only to learn the fused kernels
				rows[0].kf.gemv(data[:n*rowBytes], s.mm.enc, out[0][r0:r0+n])
			} else {
				q8RawRows(data[:n*rowBytes], acts[0].qs, acts[0].d, out[0][r0:r0+n])
			}
			return nil
		}
		for r := range rows {
			k.unpack(&rows[r], data[r*rowBytes:(r+1)*rowBytes], w.cols)
			if k.act >= actQ8_0 && !k.inPlace {
				rows[r].sums = grow(rows[r].sums, w.cols/16)
			}
		}
		for t0 := 0; t0 < len(x); t0 += tokenTile {
			t1 := min(len(x), t0+tokenTile)
			if k.fused {
				var res [tokenTile]float32
				for r := range rows {
					rows[r].kf.rows(rows[r].raw, s.mm.enc[t0*stride:], stride, t1-t0, res[:])
					for t := t0; t < t1; t++ {
						out[t][r0+r] = res[t-t0]
					}
				}
				continue
			}
			ts := t0 // the first input left to the products row by row
			if q8Tile {
				for ; ts+8 <= t1; ts += 8 {
					var res [8 * maxChunkRows]float32
					a := acts[ts : ts+8 : ts+8]
					if !q8RawRows8(data[:n*rowBytes], [8][]uint8{a[0].qu, a[1].qu, a[2].qu, a[3].qu, a[4].qu, a[5].qu, a[6].qu, a[7].qu},
						s.mm.xd8[ts*nb:(ts+8)*nb], res[:8*n]) {
						break // no VNNI (a test's switch)
					}
					for r := range n {
						for i, o := range out[ts : ts+8] {
							o[r0+r] = res[8*r+i]
						}
					}
				}
			}
			r := 0
			if k.act == actF16 {
				r = mulF16Rows3(data[:n*rowBytes], rowBytes, w.cols, acts, ts, t1, out, r0)
			}
			for ; r < len(rows); r++ {
				q, t := &rows[r], ts
				switch k.act { // four inputs per pass where a kernel does
				case actF32, actF16, actBF16:
					for ; t+4 <= t1; t += 4 {
						out[t][r0+r], out[t+1][r0+r], out[t+2][r0+r], out[t+3][r0+r] =
							q.dotF4(k.act, &acts[t], &acts[t+1], &acts[t+2], &acts[t+3])
					}
				case actQ8_0:
					for ; t+4 <= t1; t += 4 {
						s := q.dotQ8x4(&acts[t], &acts[t+1], &acts[t+2], &acts[t+3])
						out[t][r0+r], out[t+1][r0+r], out[t+2][r0+r], out[t+3][r0+r] = s[0], s[1], s[2], s[3]
					}
				}
				for ; t < t1; t++ {
					out[t][r0+r] = q.dot(k.act, &acts[t])
				}
			}
		}
		return nil
	})
	return err == nil, err
}

// mulF16Rows3 multiplies the F16 rows of data (rowBytes each, the first
// being row r0) three at a time with the inputs t0 to t1, four at a time
// (dotF16R3x4); it returns how many rows it did, the rest (fewer than
// three) being left to the caller.
func mulF16Rows3(data []byte, rowBytes, cols int, acts []qact, t0, t1 int, out [][]float32, r0 int) int {
	n := len(data) / rowBytes / 3 * 3
	var s [12]float32
	for r := 0; r < n; r += 3 {
		w := data[r*rowBytes : (r+3)*rowBytes]
		t := t0
		for ; t+4 <= t1; t += 4 {
			dotF16R3x4(w, rowBytes, cols, acts[t].f, acts[t+1].f, acts[t+2].f, acts[t+3].f, &s)
			for i := range 3 {
				for j := range 4 {
					out[t+j][r0+r+i] = s[4*i+j]
				}
			}
		}
		for ; t < t1; t++ {
			for i := range 3 {
				out[t][r0+r+i] = dotF16(w[i*rowBytes:(i+1)*rowBytes], acts[t].f)
			}
		}
	}
	return n
}

// mulRow sets out[t][r] = row·x[t] for every t, four inputs at a time so each
// weight is loaded once per four products.
func mulRow(row []float32, x, out [][]float32, r int) {
	t := 0
	for ; t+4 <= len(x); t += 4 {
		out[t][r], out[t+1][r], out[t+2][r], out[t+3][r] = dot4(row, x[t], x[t+1], x[t+2], x[t+3])
	}
	for ; t < len(x); t++ {
		out[t][r] = dot(row, x[t])
	}
}

// dot is Σ a[i]·b[i] in float32 with eight partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		s4 += aa[4] * bb[4]
		s5 += aa[5] * bb[5]
		s6 += aa[6] * bb[6]
		s7 += aa[7] * bb[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dot4 is dot of w with four vectors at once, two partial sums each; four
// weights per step through length-4 subslices, so the loop body carries one
// bounds check per slice instead of one per element.
func dot4(w, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	n := len(w)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := w[i : i+4 : i+4]
		p, q, r, s := x0[i:i+4:i+4], x1[i:i+4:i+4], x2[i:i+4:i+4], x3[i:i+4:i+4]
		a0 += ww[0]*p[0] + ww[2]*p[2]
		a1 += ww[1]*p[1] + ww[3]*p[3]
		b0 += ww[0]*q[0] + ww[2]*q[2]
		b1 += ww[1]*q[1] + ww[3]*q[3]
		c0 += ww[0]*r[0] + ww[2]*r[2]
		c1 += ww[1]*r[1] + ww[3]*r[3]
		d0 += ww[0]*s[0] + ww[2]*s[2]
		d1 += ww[1]*s[1] + ww[3]*s[3]
	}
	for ; i < n; i++ {
		a0 += w[i] * x0[i]
		b0 += w[i] * x1[i]
		c0 += w[i] * x2[i]
		d0 += w[i] * x3[i]
	}
	return a0 + a1, b0 + b1, c0 + c1, d0 + d1
}
