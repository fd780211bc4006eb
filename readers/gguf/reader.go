// Package ggufread is the strict GGUF reader (directory readers/gguf).
//
// It accepts GGUF versions 2 and 3 in either byte order (a big-endian file is
// recognised, as gguf-py does, by a version whose low 16 bits are zero when
// read little-endian) and enforces at least every rule ggml's gguf.cpp
// enforces; docs/format.md lists each rule with its reason. Opening reads
// only the header: tensor data is reached through a read-only memory map
// (zero-copy) or, where mapping is impossible, an io.ReaderAt.
package ggufread

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/ggufkit/ggufkit/gguf"
)

// minKVSize and minTensorInfoSize are the fewest bytes one key/value pair and
// one tensor info can occupy; a declared count is checked against the bytes
// left with them before anything is allocated.
const (
	minKVSize         = 8 + 1 + 4 + 1 // key length, one key byte, type, one value byte
	minTensorInfoSize = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
)

// File is an opened GGUF file: its header, fully parsed and validated, and
// access to the tensor data.
type File struct {
	// Name is the path the file was opened with (for errors).
	Name string
	// Version is the GGUF version (2 or 3).
	Version uint32
	// ByteOrder is the byte order of every number in the file.
	ByteOrder binary.ByteOrder
	// Alignment is the data alignment (general.alignment, default 32).
	Alignment uint64
	// KVs are the metadata pairs in file order.
	KVs []gguf.KV
	// Tensors are the tensor infos in file order (which is data order).
	Tensors []gguf.TensorInfo
	// HeaderSize is the byte size of the header, KVs and tensor infos,
	// before the padding that aligns the data section.
	HeaderSize int64
	// DataOffset is the absolute offset of the data section.
	DataOffset int64
	// Size is the file size in bytes.
	Size int64

	kvIndex     map[string]int
	tensorIndex map[string]int
	sizes       []uint64 // byte size of each tensor
	mapped      []byte   // the whole file when memory-mapped
	ra          io.ReaderAt
	closer      io.Closer
}

// Open opens and validates the GGUF file at path, memory-mapping it
// read-only where the platform allows (only the header pages are touched).
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := parse(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.ra, f.closer = fh, fh
	if m, err := mapFile(fh, st.Size()); err == nil {
		f.mapped = m
		f.closer = closerFunc(func() error {
			err1 := unmapFile(m)
			err2 := fh.Close()
			if err1 != nil {
				return err1
			}
			return err2
		})
	}
	return f, nil
}

// NewFile reads and validates a GGUF of the given size from r; name is used
// in errors. Tensor data is read from r on demand.
func NewFile(r io.ReaderAt, size int64, name string) (*File, error) {
	f, err := parse(r, size, name)
	if err != nil {
		return nil, err
	}
	f.ra = r
	return f, nil
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

// Close releases the mapping and the file.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer, f.mapped, f.ra = nil, nil, nil
	return c.Close()
}

// parse reads the header through a buffered reader; it never touches tensor data.
func parse(r io.ReaderAt, size int64, name string) (*File, error) {
	d := gguf.NewDecoder(io.NewSectionReader(r, 0, size), binary.LittleEndian, 0, size)
	d.File, d.Field = name, "header"
	f := &File{Name: name, Size: size, Alignment: gguf.DefaultAlignment}

	if err := f.readPreamble(d); err != nil {
		return nil, err
	}
	nTensors, nKV, err := readCounts(d)
	if err != nil {
		return nil, err
	}
	if err := f.readKVs(d, nKV); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(d, nTensors); err != nil {
		return nil, err
	}
	f.HeaderSize = d.Offset()
	f.DataOffset = f.HeaderSize
	if nTensors > 0 {
		// gguf.cpp seeks to the aligned data section only when there are tensors.
		off, _ := gguf.AlignUp(uint64(f.HeaderSize), f.Alignment)
		if off > uint64(size) {
			return nil, &gguf.FormatError{File: name, Field: "data section", Offset: f.HeaderSize,
				Msg: fmt.Sprintf("aligned data section starts at %d, beyond the end of the file (%d bytes)", off, size), Err: gguf.ErrTruncated}
		}
		f.DataOffset = int64(off)
	}
	if err := f.checkLayout(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) readPreamble(d *gguf.Decoder) error {
	magic, err := d.Bytes(4, "magic")
	if err != nil {
		return err
	}
	if string(magic) != gguf.Magic {
		return d.Errorf(gguf.ErrFormat, "bad magic %q, want %q", magic, gguf.Magic)
	}
	v, err := d.Uint32("version")
	if err != nil {
		return err
	}
	// A byte-swapped version has its low 16 bits zero (gguf_reader.py; gguf.cpp
	// uses the same test to report an endianness mismatch).
	if v != 0 && v&0xFFFF == 0 {
		v = bits.ReverseBytes32(v)
		f.ByteOrder = binary.BigEndian
		d.SetByteOrder(binary.BigEndian)
	} else {
		f.ByteOrder = binary.LittleEndian
	}
	switch {
	case v == 0:
		return d.Errorf(gguf.ErrFormat, "bad version 0")
	case v == 1:
		return d.Errorf(gguf.ErrUnsupported, "GGUF version 1 is no longer supported")
	case v > gguf.Version:
		return d.Errorf(gguf.ErrUnsupported, "GGUF version %d is newer than %d", v, gguf.Version)
	}
	f.Version = v
	return nil
}

func readCounts(d *gguf.Decoder) (nTensors, nKV int64, err error) {
	tensorsAt := d.Offset()
	t, err := d.Uint64("tensor count")
	if err != nil {
		return 0, 0, err
	}
	kvAt := d.Offset()
	k, err := d.Uint64("metadata count")
	if err != nil {
		return 0, 0, err
	}
	// gguf.cpp reads both counts as int64 and refuses negatives; a count is
	// also refused when the bytes left cannot hold that many entries.
	if int64(t) < 0 || t > uint64(d.Remaining())/minTensorInfoSize {
		return 0, 0, errAt(d, tensorsAt, gguf.ErrTooLarge, "tensor count %d cannot fit in the %d bytes left", int64(t), d.Remaining())
	}
	if int64(k) < 0 || k > uint64(d.Remaining())/minKVSize {
		return 0, 0, errAt(d, kvAt, gguf.ErrTooLarge, "metadata count %d cannot fit in the %d bytes left", int64(k), d.Remaining())
	}
	return int64(t), int64(k), nil
}

func errAt(d *gguf.Decoder, off int64, sentinel error, format string, args ...any) error {
	return &gguf.FormatError{File: d.File, Field: d.Field, Offset: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

func (f *File) readKVs(d *gguf.Decoder, n int64) error {
	f.KVs = make([]gguf.KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := int64(0); i < n; i++ {
		start := d.Offset()
		d.Field = fmt.Sprintf("metadata pair %d", i)
		key, err := d.String("key")
		if err != nil {
			return err
		}
		if key == "" {
			return errAt(d, start, gguf.ErrFormat, "empty key")
		}
		d.Field = fmt.Sprintf("key %q", key)
		if _, dup := f.kvIndex[key]; dup {
			return errAt(d, start, gguf.ErrFormat, "duplicate key")
		}
		t, err := d.ValueType("value type")
		if err != nil {
			return err
		}
		v, err := d.Value(t)
		if err != nil {
			return err
		}
		if key == gguf.KeyGeneralAlignment {
			a, ok := v.Any().(uint32)
			if !ok {
				return errAt(d, start, gguf.ErrFormat, "must be uint32, is %s", t)
			}
			if a == 0 || a&(a-1) != 0 {
				return errAt(d, start, gguf.ErrFormat, "alignment %d is not a power of 2", a)
			}
			f.Alignment = uint64(a)
		}
		f.kvIndex[key] = len(f.KVs)
		f.KVs = append(f.KVs, gguf.KV{Key: key, Value: v})
	}
	return nil
}

func (f *File) readTensorInfos(d *gguf.Decoder, n int64) error {
	f.Tensors = make([]gguf.TensorInfo, 0, n)
	f.tensorIndex = make(map[string]int, n)
	f.sizes = make([]uint64, 0, n)
	for i := int64(0); i < n; i++ {
		start := d.Offset()
		d.Field = fmt.Sprintf("tensor %d", i)
		name, err := d.String("tensor name")
		if err != nil {
			return err
		}
		d.Field = fmt.Sprintf("tensor %q", name)
		if len(name) > gguf.MaxNameLength {
			return errAt(d, start, gguf.ErrFormat, "name is %d bytes, the limit is %d", len(name), gguf.MaxNameLength)
		}
		if _, dup := f.tensorIndex[name]; dup {
			return errAt(d, start, gguf.ErrFormat, "duplicate tensor name")
		}
		ti, size, err := readTensorShape(d, name)
		if err != nil {
			return err
		}
		f.tensorIndex[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
		f.sizes = append(f.sizes, size)
	}
	return nil
}

func readTensorShape(d *gguf.Decoder, name string) (gguf.TensorInfo, uint64, error) {
	ti := gguf.TensorInfo{Name: name}
	dimsAt := d.Offset()
	nDims, err := d.Uint32("dimension count")
	if err != nil {
		return ti, 0, err
	}
	if nDims > gguf.MaxDims {
		return ti, 0, errAt(d, dimsAt, gguf.ErrFormat, "%d dimensions, the limit is %d", nDims, gguf.MaxDims)
	}
	ti.Shape = make([]uint64, nDims)
	for j := range ti.Shape {
		at := d.Offset()
		ne, err := d.Uint64("dimension")
		if err != nil {
			return ti, 0, err
		}
		if int64(ne) < 0 {
			return ti, 0, errAt(d, at, gguf.ErrFormat, "dimension %d is negative (%d)", j, int64(ne))
		}
		ti.Shape[j] = ne
	}
	if _, ok := ti.NumElements(); !ok {
		return ti, 0, errAt(d, dimsAt, gguf.ErrFormat, "shape %v overflows the element count", ti.Shape)
	}
	typeAt := d.Offset()
	t, err := d.Uint32("tensor type")
	if err != nil {
		return ti, 0, err
	}
	ti.Type = gguf.Type(t)
	switch {
	case !ti.Type.Known():
		return ti, 0, errAt(d, typeAt, gguf.ErrFormat, "unknown ggml type %d", t)
	case !ti.Type.Valid():
		return ti, 0, errAt(d, typeAt, gguf.ErrUnsupported, "ggml type %d (%s) was removed from ggml", t, ti.Type)
	}
	if len(ti.Shape) > 0 && ti.Shape[0]%uint64(ti.Type.BlockSize()) != 0 {
		return ti, 0, errAt(d, typeAt, gguf.ErrFormat, "row length %d is not a multiple of %s's block size %d",
			ti.Shape[0], ti.Type, ti.Type.BlockSize())
	}
	size, ok := ti.Size()
	if !ok || size > 1<<62 {
		return ti, 0, errAt(d, dimsAt, gguf.ErrFormat, "shape %v of %s overflows the byte size", ti.Shape, ti.Type)
	}
	if ti.Offset, err = d.Uint64("tensor offset"); err != nil {
		return ti, 0, err
	}
	return ti, size, nil
}

// checkLayout enforces gguf.cpp's data layout: tensors packed in info order,
// each at the running sum of the aligned sizes before it, and every tensor's
// bytes inside the file.
func (f *File) checkLayout() error {
	var want uint64
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		field := fmt.Sprintf("tensor %q", ti.Name)
		if ti.Offset != want {
			return &gguf.FormatError{File: f.Name, Field: field, Offset: f.DataOffset + int64(min(ti.Offset, 1<<62)),
				Msg: fmt.Sprintf("data offset %d, expected %d (tensors must be packed in header order)", ti.Offset, want), Err: gguf.ErrFormat}
		}
		end := uint64(f.DataOffset) + ti.Offset + f.sizes[i]
		if end > uint64(f.Size) {
			return &gguf.FormatError{File: f.Name, Field: field, Offset: f.DataOffset + int64(ti.Offset),
				Msg: fmt.Sprintf("data of %d bytes ends at %d, beyond the end of the file (%d bytes)", f.sizes[i], end, f.Size), Err: gguf.ErrTruncated}
		}
		padded, _ := gguf.AlignUp(f.sizes[i], f.Alignment)
		want += padded
	}
	return nil
}

// KV returns the value of key.
func (f *File) KV(key string) (gguf.Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return gguf.Value{}, false
	}
	return f.KVs[i].Value, true
}

// Architecture returns general.architecture, or "".
func (f *File) Architecture() string {
	v, _ := f.KV(gguf.KeyGeneralArchitecture)
	s, _ := v.Str()
	return s
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (*gguf.TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorSize returns the byte size of the i-th tensor.
func (f *File) TensorSize(i int) uint64 { return f.sizes[i] }

// DataEnd is the absolute offset just past the last tensor's data, before
// its padding; the header size for a file without tensors.
func (f *File) DataEnd() int64 {
	if n := len(f.Tensors); n > 0 {
		return f.DataOffset + int64(f.Tensors[n-1].Offset+f.sizes[n-1])
	}
	return f.HeaderSize
}

// EndsPadded reports whether the file extends through the alignment padding
// after its last tensor (or after its header when it has none), as files
// written by gguf.cpp and gguf-py do. Other writers may stop right after the
// last byte of data.
func (f *File) EndsPadded() bool {
	end, _ := gguf.AlignUp(uint64(f.DataEnd()), f.Alignment)
	return uint64(f.Size) >= end
}

// TensorData returns the bytes of the named tensor: a slice of the memory map
// (valid until Close, must not be modified) or, without a map, a fresh copy.
func (f *File) TensorData(name string) ([]byte, error) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, fmt.Errorf("%s: tensor %q: not in the file", f.Name, name)
	}
	off := f.DataOffset + int64(f.Tensors[i].Offset)
	size := int64(f.sizes[i])
	if f.mapped != nil {
		return f.mapped[off : off+size : off+size], nil
	}
	if f.ra == nil {
		return nil, fmt.Errorf("%s: file is closed", f.Name)
	}
	buf := make([]byte, size)
	if _, err := f.ra.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%s: tensor %q at offset %d: %w", f.Name, name, off, err)
	}
	return buf, nil
}

// TensorReader returns a reader of the named tensor's bytes.
func (f *File) TensorReader(name string) (*io.SectionReader, error) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, fmt.Errorf("%s: tensor %q: not in the file", f.Name, name)
	}
	if f.ra == nil {
		return nil, fmt.Errorf("%s: file is closed", f.Name)
	}
	return io.NewSectionReader(f.ra, f.DataOffset+int64(f.Tensors[i].Offset), int64(f.sizes[i])), nil
}
