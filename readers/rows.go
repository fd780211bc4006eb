package readers

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
)

// ErrShape is returned for a shape with a negative dimension or an element
// count that overflows int64, and for a row range outside a tensor.
var ErrShape = errors.New("readers: invalid shape or row range")

// RawReader is implemented by sources that can hand out a tensor's stored
// bytes as they are, for same-dtype fast paths (e.g. copying an F16 source
// tensor to an F16 GGUF tensor without a float32 round trip).
type RawReader interface {
	// RawBytes returns the data of the named tensor: little-endian,
	// row-major, contiguous elements of its TensorInfo.DType. When the
	// source is memory-mapped the slice aliases the read-only mapping:
	// callers must not write to it, and it is valid only until Close.
	RawBytes(name string) ([]byte, error)
}

// RowReader is implemented by sources that can hand out rows of a tensor's
// stored bytes, for conversions that go from the stored dtype straight to
// the output type (BF16 → F16, F16 → F16 …) without a float32 buffer. Like
// ReadFloat32 it reads a bounded range at a time and, for a mapped file,
// releases the pages it has handed out.
type RowReader interface {
	// VisitRows calls fn with consecutive pieces of the stored bytes of rows
	// [row0, row0+nrows) of the named tensor — little-endian, row-major
	// elements of its TensorInfo.DType, each piece whole elements — and
	// the index, counted from row0's first element, of the piece's first
	// element. The slice is valid only during the call and must not be
	// written to (it may alias a read-only mapping). It stops at fn's first
	// error. It is safe to call concurrently.
	VisitRows(ctx context.Context, name string, row0, nrows int, fn func(first int64, b []byte) error) error
}

// FileRanger is implemented by sources whose tensors lie, as stored, in
// an ordinary file, so that a tensor copied unchanged can be copied by the
// kernel (copy_file_range) instead of through user space.
type FileRanger interface {
	// FileRange returns the file holding the named tensor's stored bytes
	// and their offset and length in it. The file stays owned by the
	// source: callers only read it at explicit offsets (pread,
	// copy_file_range), never close it or move its offset.
	FileRange(name string) (f *os.File, off, n int64, err error)
}

// NumElements returns the number of elements of a tensor of the given shape
// (1 for a 0-dimensional tensor). A negative dimension or an overflowing
// product is an ErrShape error.
func NumElements(shape []int64) (int64, error) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension in %v", ErrShape, shape)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: element count of %v overflows", ErrShape, shape)
		}
		n = lo
	}
	return int64(n), nil
}

// Rows splits a shape into rows × row length, as ReadFloat32 counts them:
// the row length is the last dimension and every other dimension counts
// rows; a 0- or 1-dimensional tensor is one row. The shape must be valid
// (see NumElements).
func Rows(shape []int64) (rows, cols int64) {
	if len(shape) == 0 {
		return 1, 1
	}
	rows = 1
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	return rows, shape[len(shape)-1]
}

// RowSpan checks a ReadFloat32 request against a tensor and returns the
// element range [first, first+count) of the tensor's row-major data that it
// covers. dstLen must be nrows × row length.
func RowSpan(t TensorInfo, dstLen, row0, nrows int) (first, count int64, err error) {
	if _, err := NumElements(t.Shape); err != nil {
		return 0, 0, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	rows, cols := Rows(t.Shape)
	if row0 < 0 || nrows < 0 || int64(row0) > rows || int64(nrows) > rows-int64(row0) {
		return 0, 0, fmt.Errorf("%w: tensor %q has %d rows, asked for rows [%d, %d)", ErrShape, t.Name, rows, row0, int64(row0)+int64(nrows))
	}
	count = int64(nrows) * cols
	if int64(dstLen) != count {
		return 0, 0, fmt.Errorf("%w: tensor %q: %d rows of %d values need a buffer of %d, got %d", ErrShape, t.Name, nrows, cols, count, dstLen)
	}
	return int64(row0) * cols, count, nil
}

// checksumChunk is how many float32 values Checksum converts per read.
const checksumChunk = 1 << 20

// Checksum returns the hex sha256 of the tensor's values converted to
// float32, little-endian, row-major and contiguous, with no header — the
// digest the reference data's expected.json files name "sha256_f32le". It
// streams through ReadFloat32 a bounded number of rows at a time.
func Checksum(ctx context.Context, src Source, t TensorInfo) (string, error) {
	n, err := NumElements(t.Shape)
	if err != nil {
		return "", fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	rows, cols := Rows(t.Shape)
	h := sha256.New()
	if n == 0 {
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	step := int64(1)
	if cols < checksumChunk {
		step = checksumChunk / cols
	}
	buf := make([]float32, min(step, rows)*cols)
	out := make([]byte, 4*len(buf))
	for r := int64(0); r < rows; r += step {
		nr := min(step, rows-r)
		vals := buf[:nr*cols]
		if err := src.ReadFloat32(ctx, t.Name, vals, int(r), int(nr)); err != nil {
			return "", err
		}
		b := out[:4*len(vals)]
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
