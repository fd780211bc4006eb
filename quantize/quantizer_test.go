package quantize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// memWriterAt is an io.WriterAt over a byte slice; concurrent writes to
// disjoint ranges are safe. It counts the writes and may fail or run a hook.
type memWriterAt struct {
	buf     []byte
	mu      sync.Mutex
	writes  int
	failAt  int // fail the write with this 1-based number (0 = never)
	onWrite func()
}

var errDiskFull = errors.New("disk full")

func (w *memWriterAt) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if w.onWrite != nil {
		w.onWrite()
	}
	if n == w.failAt {
		return 0, errDiskFull
	}
	if off < 0 || off+int64(len(p)) > int64(len(w.buf)) {
		return 0, errors.New("write out of range")
	}
	return copy(w.buf[off:], p), nil
}

// encodableTypes lists the registered types with an encoder.
func encodableTypes() []gguf.Type {
	var ts []gguf.Type
	for _, t := range gguf.Types() {
		if CanEncode(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// TestQuantizerDeterministic: any worker count and chunk size gives the
// bytes of the single-threaded Encode, through Encode and EncodeTo, and
// Decode gives Decode's values.
func TestQuantizerDeterministic(t *testing.T) {
	g := golden(t)
	src := readF32(t, g.Inputs["small"].File)
	const ncols = 512
	weights := readF32(t, g.Weights["weights_512"].File)
	for _, typ := range encodableTypes() {
		var imatrix []float32
		if UsesImatrix(typ) || RequiresImatrix(typ) {
			imatrix = weights
		}
		rowSize, err := RowSize(typ, ncols)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(src)/ncols*rowSize)
		if err := Encode(typ, want, src, ncols, imatrix); err != nil {
			t.Fatal(err)
		}
		var wantDec []float32
		if CanDecode(typ) {
			wantDec = make([]float32, len(src))
			if err := Decode(typ, wantDec, want, ncols); err != nil {
				t.Fatal(err)
			}
		}
		for _, workers := range []int{1, 2, 7, 64, 0} {
			for _, chunk := range []int{1, 3 * 4 * ncols, 0} {
				q := &Quantizer{Workers: workers, ChunkBytes: chunk}
				t.Run(fmt.Sprintf("%s/workers=%d/chunk=%d", typ, workers, chunk), func(t *testing.T) {
					got := make([]byte, len(want))
					if err := q.Encode(context.Background(), typ, got, src, ncols, imatrix); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("workers %d chunk %d: %s", workers, chunk, firstDiff(got, want, rowSize))
					}
					const off = 13
					w := &memWriterAt{buf: bytes.Repeat([]byte{0xA5}, off+len(want)+7)}
					if err := q.EncodeTo(context.Background(), w, off, typ, src, ncols, imatrix); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(w.buf[off:off+len(want)], want) {
						t.Fatalf("EncodeTo workers %d chunk %d: %s", workers, chunk, firstDiff(w.buf[off:off+len(want)], want, rowSize))
					}
					if !bytes.Equal(w.buf[:off], bytes.Repeat([]byte{0xA5}, off)) || !bytes.Equal(w.buf[off+len(want):], bytes.Repeat([]byte{0xA5}, 7)) {
						t.Fatal("EncodeTo wrote outside its range")
					}
					if wantDec == nil {
						return
					}
					dec := make([]float32, len(src))
					if err := q.Decode(context.Background(), typ, dec, want, ncols); err != nil {
						t.Fatal(err)
					}
					for i := range dec {
						if math.Float32bits(dec[i]) != math.Float32bits(wantDec[i]) {
							t.Fatalf("Decode workers %d chunk %d: value %d is %v, want %v", workers, chunk, i, dec[i], wantDec[i])
						}
					}
				})
			}
		}
	}
}

// TestQuantizerErrorRow: the error names the first bad row of the whole
// matrix, whatever the scheduling.
func TestQuantizerErrorRow(t *testing.T) {
	const nrows, ncols = 128, 64
	src := make([]float32, nrows*ncols)
	for i := range src {
		src[i] = float32(i%17) - 8
	}
	src[37*ncols+5] = float32(math.NaN())
	src[90*ncols] = float32(math.Inf(1))
	src[3*ncols+9] = 1e10 // valid input, but Q8_0's fp16 scale overflows
	dst := make([]byte, nrows*ncols/32*34)
	for _, workers := range []int{1, 2, 7, 64} {
		for _, chunk := range []int{1, 5 * 4 * ncols, 0} {
			q := Quantizer{Workers: workers, ChunkBytes: chunk}
			err := q.Encode(context.Background(), gguf.Q8_0, dst, src, ncols, nil)
			if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "row 37, column 5") {
				t.Errorf("workers %d chunk %d: Encode = %v, want ErrNonFinite at row 37, column 5", workers, chunk, err)
			}
			w := &memWriterAt{buf: make([]byte, len(dst))}
			err = q.EncodeTo(context.Background(), w, 0, gguf.Q8_0, src, ncols, nil)
			if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "row 37,") {
				t.Errorf("workers %d chunk %d: EncodeTo = %v, want ErrNonFinite at row 37", workers, chunk, err)
			}
			q.Validate = true
			err = q.Encode(context.Background(), gguf.Q8_0, dst, src, ncols, nil)
			if !errors.Is(err, ErrInvalidData) || !strings.Contains(err.Error(), "row 3:") || !strings.Contains(err.Error(), "inf value at block 0") {
				t.Errorf("workers %d chunk %d: validating Encode = %v, want ErrInvalidData at row 3", workers, chunk, err)
			}
		}
	}
}

func TestQuantizerCancel(t *testing.T) {
	const nrows, ncols = 64, 32
	src := make([]float32, nrows*ncols)
	dst := make([]byte, nrows*34)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := &Quantizer{Workers: 2}
	if err := q.Encode(ctx, gguf.Q8_0, dst, src, ncols, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode on a cancelled context = %v", err)
	}
	if err := q.Decode(ctx, gguf.Q8_0, src, dst, ncols); !errors.Is(err, context.Canceled) {
		t.Errorf("Decode on a cancelled context = %v", err)
	}

	// Cancelled during the first chunk: no further chunk starts.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w := &memWriterAt{buf: make([]byte, len(dst)), onWrite: cancel}
	q = &Quantizer{Workers: 1, ChunkBytes: 1}
	if err := q.EncodeTo(ctx, w, 0, gguf.Q8_0, src, ncols, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("EncodeTo cancelled mid-way = %v", err)
	}
	if w.writes != 1 {
		t.Errorf("%d chunks written after cancelling in the first", w.writes)
	}
}

func TestQuantizerErrors(t *testing.T) {
	src := make([]float32, 4*64)
	ctx := context.Background()
	var q *Quantizer // a nil Quantizer works like a zero one
	tests := []struct {
		name string
		run  func() error
		want error
		msg  string
	}{
		{"dst size", func() error { return q.Encode(ctx, gguf.Q8_0, make([]byte, 10), src, 64, nil) }, ErrShape, "buffer has 10"},
		{"ncols", func() error { return q.Encode(ctx, gguf.Q8_0, nil, src, 48, nil) }, ErrShape, "block size 32"},
		{"whole rows", func() error { return q.Encode(ctx, gguf.Q8_0, nil, src, 96, nil) }, ErrShape, "not whole rows"},
		{"imatrix", func() error { return q.Encode(ctx, gguf.Q8_0, make([]byte, 4*68), src, 64, make([]float32, 32)) }, ErrShape, "32 weights"},
		{"no encoder", func() error { return q.Encode(ctx, gguf.Q4_2, nil, src, 64, nil) }, ErrUnsupported, "Q4_2"},
		{"no decoder", func() error { return q.Decode(ctx, gguf.Q8_1, src, make([]byte, 4*36), 64) }, ErrUnsupported, "Q8_1"},
		{"decode size", func() error { return q.Decode(ctx, gguf.Q8_0, src, make([]byte, 5), 64) }, ErrShape, "buffer has 5"},
		{"offset overflow", func() error {
			return q.EncodeTo(ctx, &memWriterAt{}, math.MaxInt64-10, gguf.Q8_0, src, 64, nil)
		}, ErrShape, "overflow"},
		{"negative offset", func() error { return q.EncodeTo(ctx, &memWriterAt{}, -1, gguf.Q8_0, src, 64, nil) }, ErrShape, "offset -1"},
		{"write error", func() error {
			w := &memWriterAt{buf: make([]byte, 4*68), failAt: 1}
			return (&Quantizer{Workers: 1, ChunkBytes: 1}).EncodeTo(ctx, w, 0, gguf.Q8_0, src, 64, nil)
		}, errDiskFull, "rows 0-0 (68 bytes) at offset 0"},
	}
	for _, typ := range encodableTypes() {
		if RequiresImatrix(typ) {
			tests = append(tests, struct {
				name string
				run  func() error
				want error
				msg  string
			}{"needs imatrix " + typ.String(), func() error {
				return q.Encode(ctx, typ, make([]byte, typ.TypeSize()), make([]float32, typ.BlockSize()), typ.BlockSize(), nil)
			}, ErrNeedImatrix, typ.String()})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want %v with %q", err, tt.want, tt.msg)
			}
		})
	}
}

func TestQuantizerEmpty(t *testing.T) {
	q := &Quantizer{}
	if err := q.Encode(context.Background(), gguf.Q8_0, nil, nil, 32, nil); err != nil {
		t.Fatal(err)
	}
	w := &memWriterAt{}
	if err := q.EncodeTo(context.Background(), w, 0, gguf.F16, nil, 8, nil); err != nil || w.writes != 0 {
		t.Fatalf("EncodeTo of no rows: %v, %d writes", err, w.writes)
	}
}
