package safetensors

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ggufkit/ggufkit/internal/mmap"
	"github.com/ggufkit/ggufkit/readers"
)

// File is one opened, validated safetensors file. Its methods are safe for
// concurrent use, except Close.
type File struct {
	path   string
	hdr    *Header
	byName map[string]int
	r      io.ReaderAt
	closer io.Closer // nil for NewFile
	fh     *os.File  // the open file; nil for NewFile
	data   []byte    // the whole file when memory-mapped, else nil
}

// OpenFile opens a safetensors file and validates its header (see
// ReadHeader). The file is memory-mapped when the OS allows it, and read
// with ReadAt otherwise. A file shrunk by another process while mapped
// makes reads fault, as with any mmap reader.
func OpenFile(path string) (*File, error) { return openFile(path, true) }

func openFile(path string, mmap bool) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Offset: -1, Msg: "open", Err: err}
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, &Error{File: path, Offset: -1, Msg: "stat", Err: err}
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, &Error{File: path, Offset: -1, Msg: "not a regular file", Err: ErrFormat}
	}
	if err := readers.CheckLFSPointer(path); err != nil {
		fh.Close()
		return nil, err
	}
	f := &File{path: path, r: fh, closer: fh, fh: fh}
	if mmap {
		if data, err := mapFile(fh, st.Size()); err == nil {
			f.data = data
			f.r = bytes.NewReader(data)
		}
	}
	if err := f.init(st.Size()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NewFile reads a safetensors file of the given size through r (e.g. a
// bytes.Reader over data already in memory); name is used in errors. The
// header is validated before NewFile returns. Close does not close r.
func NewFile(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{path: name, r: r}
	if err := f.init(size); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) init(size int64) error {
	hdr, err := ReadHeader(f.r, size, f.path)
	if err != nil {
		return err
	}
	f.hdr = hdr
	f.byName = make(map[string]int, len(hdr.Tensors))
	for i, e := range hdr.Tensors {
		f.byName[e.Name] = i
	}
	return nil
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// Header returns the validated header; callers must not modify it.
func (f *File) Header() *Header { return f.hdr }

// Mapped reports whether the file is memory-mapped (zero-copy reads).
func (f *File) Mapped() bool { return f.data != nil }

// Entry returns the header entry of the named tensor.
func (f *File) Entry(name string) (Entry, bool) {
	i, ok := f.byName[name]
	if !ok {
		return Entry{}, false
	}
	return f.hdr.Tensors[i], true
}

func (f *File) lookup(name string) (Entry, error) {
	e, ok := f.Entry(name)
	if !ok {
		return Entry{}, fmt.Errorf("%w: %q in %s", readers.ErrNotFound, name, f.path)
	}
	return e, nil
}

// RawBytes returns the stored bytes of the named tensor. When the file is
// mapped the slice aliases the read-only mapping (do not write to it; it is
// valid until Close); otherwise it is a fresh copy.
func (f *File) RawBytes(name string) ([]byte, error) {
	e, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	start, end := f.hdr.DataStart()+e.Begin, f.hdr.DataStart()+e.End
	if f.data != nil {
		return f.data[start:end:end], nil
	}
	b := make([]byte, end-start) // bounded: validated against the file size
	if k, err := f.r.ReadAt(b, start); k < len(b) {
		return nil, &Error{File: f.path, Tensor: name, Offset: start, Msg: "read", Err: err}
	}
	return b, nil
}

// convertChunk is how many values ReadFloat32 converts between checks of
// its context.
const convertChunk = 1 << 20

// readBufSize is the size of the buffers an unmapped file is read through.
const readBufSize = 1 << 20

var readBufs = sync.Pool{New: func() any { return new([readBufSize]byte) }}

// ReadFloat32 converts rows [row0, row0+nrows) of the named tensor to
// float32 (see readers.Source).
func (f *File) ReadFloat32(ctx context.Context, name string, dst []float32, row0, nrows int) error {
	e, err := f.lookup(name)
	if err != nil {
		return err
	}
	first, _, err := readers.RowSpan(readers.TensorInfo{Name: name, Shape: e.Shape}, len(dst), row0, nrows)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	size := int64(e.DType.Size())
	off := f.hdr.DataStart() + e.Begin + first*size
	chunk := convertChunk
	var buf *[readBufSize]byte
	if f.data == nil {
		buf = readBufs.Get().(*[readBufSize]byte)
		defer readBufs.Put(buf)
		chunk = readBufSize / int(size)
	}
	for len(dst) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(dst), chunk)
		nb := int64(n) * size
		var src []byte
		if f.data != nil {
			src = f.data[off : off+nb]
		} else {
			src = buf[:nb]
			if k, err := f.r.ReadAt(src, off); k < len(src) {
				return &Error{File: f.path, Tensor: name, Offset: off, Msg: "read", Err: err}
			}
		}
		if err := readers.ToFloat32(dst[:n], src, e.DType); err != nil {
			return fmt.Errorf("%s: tensor %q: %w", f.path, name, err)
		}
		if f.data != nil {
			mmap.Release(f.data, off, off+nb)
		}
		dst = dst[n:]
		off += nb
	}
	return nil
}

// ReadRows copies the stored bytes of rows [row0, row0+nrows) of the named
// tensor into dst (len(dst) = nrows × row length × the dtype's size).
func (f *File) ReadRows(ctx context.Context, name string, dst []byte, row0, nrows int) error {
	e, err := f.lookup(name)
	if err != nil {
		return err
	}
	size := int64(e.DType.Size())
	_, count, err := readers.RowSpan(readers.TensorInfo{Name: name, Shape: e.Shape}, int(int64(len(dst))/max(size, 1)), row0, nrows)
	if err != nil || count*size != int64(len(dst)) {
		return fmt.Errorf("%s: tensor %q: %w: %d bytes for %d rows of %s", f.path, name, readers.ErrShape, len(dst), nrows, e.DType)
	}
	return f.VisitRows(ctx, name, row0, nrows, func(first int64, b []byte) error {
		copy(dst[first*size:], b)
		return nil
	})
}

// VisitRows hands out the stored bytes of rows [row0, row0+nrows) of the
// named tensor piece by piece (see readers.RowReader): slices of the
// mapping, whose pages are released after each call, or of a pooled buffer
// when the file is not mapped.
func (f *File) VisitRows(ctx context.Context, name string, row0, nrows int, fn func(first int64, b []byte) error) error {
	e, err := f.lookup(name)
	if err != nil {
		return err
	}
	rows, cols := readers.Rows(e.Shape)
	if row0 < 0 || nrows < 0 || int64(row0) > rows || int64(nrows) > rows-int64(row0) {
		return fmt.Errorf("%s: %w: tensor %q has %d rows, asked for rows [%d, %d)", f.path, readers.ErrShape, name, rows, row0, row0+nrows)
	}
	size := int64(e.DType.Size())
	off := f.hdr.DataStart() + e.Begin + int64(row0)*cols*size
	left := int64(nrows) * cols * size
	piece := readBufSize / size * size
	var buf *[readBufSize]byte
	if f.data == nil {
		buf = readBufs.Get().(*[readBufSize]byte)
		defer readBufs.Put(buf)
	}
	for first := int64(0); left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(left, piece)
		var b []byte
		if f.data != nil {
			b = f.data[off : off+n : off+n]
		} else {
			b = buf[:n]
			if k, err := f.r.ReadAt(b, off); int64(k) < n {
				return &Error{File: f.path, Tensor: name, Offset: off, Msg: "read", Err: err}
			}
		}
		err := fn(first, b)
		if f.data != nil {
			mmap.Release(f.data, off, off+n)
		}
		if err != nil {
			return err
		}
		first += n / size
		off += n
		left -= n
	}
	return nil
}

// FileRange returns the open file and the byte range of the named tensor's
// stored data (see readers.FileRanger); a File made by NewFile has no file
// and returns an error.
func (f *File) FileRange(name string) (*os.File, int64, int64, error) {
	e, err := f.lookup(name)
	if err != nil {
		return nil, 0, 0, err
	}
	if f.fh == nil {
		return nil, 0, 0, fmt.Errorf("%s: %w: not read from a file", f.path, readers.ErrNotFound)
	}
	return f.fh, f.hdr.DataStart() + e.Begin, e.End - e.Begin, nil
}

// Close unmaps and closes the file.
func (f *File) Close() error {
	var err error
	if f.data != nil {
		err = unmapFile(f.data)
		f.data = nil
	}
	f.r = closedReader{}
	if f.closer != nil {
		if cerr := f.closer.Close(); err == nil {
			err = cerr
		}
		f.closer = nil
	}
	return err
}

// closedReader makes reads after Close fail instead of touching the
// released mapping.
type closedReader struct{}

func (closedReader) ReadAt([]byte, int64) (int, error) { return 0, os.ErrClosed }
