// Package readers defines what every checkpoint reader (safetensors, PyTorch
// pickles, GGUF) offers the converter and the verifier: a Source of named
// tensors, read lazily and converted to float32 rows on demand.
//
// The concrete readers live in sub-packages: readers/safetensors,
// readers/pytorch, readers/gguf; readers/hf opens a model folder (or a single
// weights file, or a Hugging Face cache entry) with its config files.
//
// This package also holds what the readers share: DType sizes and the exact
// conversion of every source dtype to float32 (ToFloat32), row arithmetic
// (NumElements, Rows, RowSpan), the optional zero-copy RawReader interface,
// the per-tensor float32 digest (Checksum) and Git LFS pointer detection.
package readers

import (
	"context"
	"errors"
)

// DType is a source tensor's element type, named as safetensors names it.
type DType string

// The element types sources may hold.
const (
	F64     DType = "F64"
	F32     DType = "F32"
	F16     DType = "F16"
	BF16    DType = "BF16"
	F8E4M3  DType = "F8_E4M3"
	F8E5M2  DType = "F8_E5M2"
	F8E8M0  DType = "F8_E8M0" // torch.float8_e8m0fnu: a power-of-two scale (DeepSeek-V4)
	I64     DType = "I64"
	I32     DType = "I32"
	I16     DType = "I16"
	I8      DType = "I8"
	U64     DType = "U64"
	U32     DType = "U32"
	U16     DType = "U16"
	U8      DType = "U8"
	Bool    DType = "BOOL"
	Unknown DType = ""
)

// TensorInfo describes one source tensor.
type TensorInfo struct {
	Name  string
	DType DType
	// Shape in PyTorch order (the row length last).
	Shape []int64
	// File is the path of the file holding the data, relative to the
	// source's root when it has one.
	File string
}

// Source is an opened checkpoint: a set of named tensors read lazily.
type Source interface {
	// Format names the container: "safetensors", "pytorch-zip",
	// "pytorch-legacy", "meta-consolidated" or "gguf".
	Format() string
	// Tensors lists every tensor in a stable order (the order llama.cpp's
	// converter would visit them, where that is defined).
	Tensors() []TensorInfo
	// ReadFloat32 converts rows [row0, row0+nrows) of the named tensor to
	// float32 into dst (len(dst) = nrows × row length). A row is the last
	// dimension; a 0- or 1-dimensional tensor has one row (see Rows). It is
	// safe to call concurrently, for the same or different tensors.
	ReadFloat32(ctx context.Context, name string, dst []float32, row0, nrows int) error
	// Close releases the files and mappings.
	Close() error
}

// ErrNotFound is returned for a tensor name the source does not hold.
var ErrNotFound = errors.New("readers: tensor not found")
