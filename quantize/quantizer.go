package quantize

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/ggufkit/ggufkit/gguf"
)

// DefaultChunkBytes is the float32 data (256 rows of 128 values, or 8 rows
// of 4096) a worker takes at a time when Quantizer.ChunkBytes is 0: large
// enough that scheduling costs nothing next to encoding, small enough that
// two workers share even a small tensor.
const DefaultChunkBytes = 128 << 10

// Quantizer encodes and decodes matrices on several goroutines. It splits
// the rows into chunks of about ChunkBytes of float32 data and hands them to
// Workers goroutines. ggml quantizes every row on its own (one row's bytes
// depend on that row and the importance weights only), so the output is
// byte-identical for any Workers and ChunkBytes, and to Encode's.
//
// Errors do not depend on scheduling either: when several chunks fail, the
// error of the first one in row order is returned, naming the absolute row,
// as a single-threaded Encode would report it. A zero Quantizer is ready to
// use; its methods may be called concurrently.
type Quantizer struct {
	// Workers is the number of goroutines; 0 (or less) means
	// runtime.GOMAXPROCS(0).
	Workers int
	// ChunkBytes is the float32 data per chunk, rounded down to whole rows
	// (at least one row); 0 (or less) means DefaultChunkBytes.
	ChunkBytes int
	// Validate checks every encoded row with Validate, as llama-quantize
	// checks each chunk after ggml_quantize_chunk, and fails with
	// ErrInvalidData naming the row. A block scale that overflows fp16
	// (inputs beyond ~1e6 for most types) is the usual cause.
	Validate bool
}

func (q *Quantizer) workers() int {
	if q == nil || q.Workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return q.Workers
}

// rowsPerChunk is the number of rows of ncols float32 values in a chunk.
func (q *Quantizer) rowsPerChunk(ncols int) int {
	cb := DefaultChunkBytes
	if q != nil && q.ChunkBytes > 0 {
		cb = q.ChunkBytes
	}
	return max(1, cb/(4*ncols))
}

func (q *Quantizer) validate() bool { return q != nil && q.Validate }

// Encode quantizes src, rows of ncols values, into dst as type t with
// optional importance weights (one per column, or nil), like the package
// function Encode but on q.Workers goroutines. ctx is checked before each
// chunk; a cancelled encode returns ctx's error with dst partly written.
func (q *Quantizer) Encode(ctx context.Context, t gguf.Type, dst []byte, src []float32, ncols int, imatrix []float32) error {
	nrows, rowSize, err := checkEncode(t, len(src), ncols, imatrix)
	if err != nil {
		return err
	}
	if len(dst) != nrows*rowSize {
		return fmt.Errorf("%w: %d rows of %d %s values take %d bytes, buffer has %d", ErrShape, nrows, ncols, t, nrows*rowSize, len(dst))
	}
	return q.forChunks(ctx, nrows, ncols, func(_, r0, r1 int) error {
		return q.encodeChunk(t, dst[r0*rowSize:r1*rowSize], src[r0*ncols:r1*ncols], ncols, rowSize, imatrix, r0)
	})
}

// EncodeTo quantizes src like Encode and writes the encoded rows to w, row
// r at off + r·rowSize, so a tensor can go straight to its place in a file
// (w may be an *os.File, an io.OffsetWriter, or a writer's tensor region).
// The chunks are written concurrently and in no particular order, which
// io.WriterAt allows for disjoint ranges. Memory: each worker owns one
// buffer of one chunk's encoded rows, at most ChunkBytes (2·ChunkBytes for
// F64 and I64, one row when a row is larger than a chunk), so the output is
// never held whole. On error, some rows may have been written.
func (q *Quantizer) EncodeTo(ctx context.Context, w io.WriterAt, off int64, t gguf.Type, src []float32, ncols int, imatrix []float32) error {
	nrows, rowSize, err := checkEncode(t, len(src), ncols, imatrix)
	if err != nil {
		return err
	}
	if total := int64(nrows) * int64(rowSize); off < 0 || off > math.MaxInt64-total {
		return fmt.Errorf("%w: %d bytes of %s at offset %d overflow the file offset", ErrShape, total, t, off)
	}
	per := q.rowsPerChunk(ncols)
	bufs := make([][]byte, min(q.workers(), max(1, nrows)))
	return q.forChunks(ctx, nrows, ncols, func(worker, r0, r1 int) error {
		if bufs[worker] == nil {
			bufs[worker] = make([]byte, min(per, nrows)*rowSize)
		}
		out := bufs[worker][:(r1-r0)*rowSize]
		if err := q.encodeChunk(t, out, src[r0*ncols:r1*ncols], ncols, rowSize, imatrix, r0); err != nil {
			return err
		}
		at := off + int64(r0)*int64(rowSize)
		n, err := w.WriteAt(out, at)
		if err == nil && n != len(out) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return fmt.Errorf("quantize: writing %s rows %d-%d (%d bytes) at offset %d: %w", t, r0, r1-1, len(out), at, err)
		}
		return nil
	})
}

// Decode converts src, whole rows of ncols values of type t, into dst, like
// the package function Decode but on q.Workers goroutines; ctx is checked
// before each chunk.
func (q *Quantizer) Decode(ctx context.Context, t gguf.Type, dst []float32, src []byte, ncols int) error {
	c, err := lookup(t)
	if err != nil || c.decodeRow == nil {
		return fmt.Errorf("%w: %s has no decoder", ErrUnsupported, t)
	}
	nrows, rowSize, err := checkShape(t, len(dst), len(src), ncols)
	if err != nil {
		return err
	}
	return q.forChunks(ctx, nrows, ncols, func(_, r0, r1 int) error {
		return Decode(t, dst[r0*ncols:r1*ncols], src[r0*rowSize:r1*rowSize], ncols)
	})
}

// checkEncode makes encodeRows' up-front checks once for the whole matrix,
// so that a bad call fails before any chunk starts, and returns the row
// count and the encoded row size.
func checkEncode(t gguf.Type, nvals, ncols int, imatrix []float32) (nrows, rowSize int, err error) {
	c, err := lookup(t)
	if err != nil || c.encodeRow == nil {
		return 0, 0, fmt.Errorf("%w: %s has no encoder", ErrUnsupported, t)
	}
	if rowSize, err = RowSize(t, ncols); err != nil {
		return 0, 0, err
	}
	if nvals%ncols != 0 {
		return 0, 0, fmt.Errorf("%w: %d values are not whole rows of %d", ErrShape, nvals, ncols)
	}
	if imatrix != nil && len(imatrix) != ncols {
		return 0, 0, fmt.Errorf("%w: importance matrix has %d weights for rows of %d", ErrShape, len(imatrix), ncols)
	}
	if c.needsImatrix && imatrix == nil {
		return 0, 0, fmt.Errorf("%w: %s", ErrNeedImatrix, t)
	}
	return nvals / ncols, rowSize, nil
}

// encodeChunk encodes the rows of one chunk (r0 is its first row) into out
// and, with q.Validate, validates them. Its error names the first row, in
// row order, that holds a non-finite value or fails validation, so that it
// does not depend on where the chunk boundaries fall.
func (q *Quantizer) encodeChunk(t gguf.Type, out []byte, src []float32, ncols, rowSize int, imatrix []float32, r0 int) error {
	nrows := len(src) / ncols
	good := nrows
	if c, err := lookup(t); err == nil && c.encodeFinite != nil {
		for r := range nrows {
			if !c.encodeFinite(out[r*rowSize:(r+1)*rowSize], src[r*ncols:(r+1)*ncols], imatrix) {
				good = r
				break
			}
		}
	} else {
		if i := firstNonFinite(src); i >= 0 {
			good = i / ncols
		}
		if err := encodeRows(t, out[:good*rowSize], src[:good*ncols], ncols, imatrix, r0, true); err != nil {
			return err
		}
	}
	if q.validate() {
		for r := range good {
			if err := Validate(t, out[r*rowSize:(r+1)*rowSize]); err != nil {
				return fmt.Errorf("row %d: %w", r0+r, err)
			}
		}
	}
	if good < nrows {
		return CheckFinite(src[good*ncols:(good+1)*ncols], ncols, r0+good)
	}
	return nil
}

// forChunks calls fn(worker, r0, r1) for every chunk of rows [r0, r1) of
// nrows, on up to q.workers() goroutines; worker (0 ≤ worker < goroutines)
// lets fn keep per-goroutine buffers. Chunks are claimed in row order.
// After a failure no later chunk starts, but earlier ones finish, so the
// error returned is the one of the first failing chunk whatever the
// scheduling. ctx is checked before each chunk.
func (q *Quantizer) forChunks(ctx context.Context, nrows, ncols int, fn func(worker, r0, r1 int) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	per := q.rowsPerChunk(ncols)
	nchunks := (nrows + per - 1) / per
	var (
		next     atomic.Int64 // next chunk to claim
		firstBad atomic.Int64 // lowest failed chunk, nchunks if none
		mu       sync.Mutex   // guards firstErr and the update of firstBad
		firstErr error
	)
	firstBad.Store(int64(nchunks))
	fail := func(c int64, err error) error {
		mu.Lock()
		defer mu.Unlock()
		if c < firstBad.Load() {
			firstBad.Store(c)
			firstErr = err
		}
		return err
	}
	var g errgroup.Group
	for worker := range min(q.workers(), nchunks) {
		g.Go(func() error {
			for {
				c := next.Add(1) - 1
				if c >= int64(nchunks) || c > firstBad.Load() {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return fail(c, err)
				}
				r0 := int(c) * per
				if err := fn(worker, r0, min(nrows, r0+per)); err != nil {
					return fail(c, err)
				}
			}
		})
	}
	if g.Wait() != nil {
		return firstErr
	}
	return nil
}
