package gguf

import (
	"math/bits"
	"slices"
)

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	// Name is at most MaxNameLength bytes and unique within a file.
	Name string
	// Shape holds the dimensions in GGUF order (ne0, the row length, first),
	// as many as the file stores: gguf.cpp drops trailing 1s, gguf-py keeps them.
	Shape []uint64
	// Type is the storage type of the elements.
	Type Type
	// Offset is the byte offset of the data relative to the data section.
	Offset uint64
}

// NumElements is the product of the dimensions (1 for a 0-dimensional tensor);
// ok is false when it overflows int64.
func (t *TensorInfo) NumElements() (n uint64, ok bool) {
	n = 1
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > 1<<63-1 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// Size is the byte size of the tensor data (ggml_nbytes for a contiguous
// tensor); ok is false when the row length is not a whole number of blocks
// or the size overflows.
func (t *TensorInfo) Size() (size uint64, ok bool) {
	n, ok := t.NumElements()
	if !ok {
		return 0, false
	}
	bs := uint64(t.Type.BlockSize())
	if bs == 0 || (len(t.Shape) > 0 && t.Shape[0]%bs != 0) {
		return 0, false
	}
	return t.Type.RowSize(n)
}

// Rows is the number of rows (the product of every dimension after the first).
func (t *TensorInfo) Rows() uint64 {
	r := uint64(1)
	for _, d := range t.Shape[min(1, len(t.Shape)):] {
		r *= d
	}
	return r
}

// AlignUp rounds n up to a multiple of align (a power of two); ok is false on overflow.
func AlignUp(n, align uint64) (uint64, bool) {
	r := (n + align - 1) &^ (align - 1)
	return r, r >= n
}

// SameShape tells whether two shapes in ggml order are the same tensor
// shape: equal once trailing 1s are dropped (gguf.cpp writes n_dims without
// them, gguf-py keeps them, so [64, 1] and [64] are one shape).
func SameShape[T int64 | uint64](a, b []T) bool {
	trim := func(s []T) []T {
		for len(s) > 1 && s[len(s)-1] == 1 {
			s = s[:len(s)-1]
		}
		return s
	}
	return slices.Equal(trim(a), trim(b))
}
