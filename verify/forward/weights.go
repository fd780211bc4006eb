package forward

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// Tensor is one weight as the forward pass reads it.
type Tensor interface {
	// Shape is the shape in ggml order (ne0, the row length, first).
	Shape() []int64
	// ReadRows writes n rows from row r0 on, as float32, into dst (n·ne0
	// values). It must be safe for concurrent use.
	ReadRows(r0, n int, dst []float32) error
}

// ProductTyped is a Tensor read as float32 that stands in for a weight
// stored as ProductType (a reference with noise standing in for a quantized
// model): the inputs of its products are rounded as ggml rounds them for
// that type (to Q8_0, Q8_K, F16 or BF16 values), as the stored weight's
// would be.
type ProductTyped interface {
	Tensor
	ProductType() gguf.Type
}

// Weights finds tensors by GGUF name.
type Weights interface {
	Tensor(name string) (Tensor, bool)
}

// TensorFile is what GGUFWeights reads: a GGUF's tensor infos and data
// (*ggufread.File satisfies it, and so does a gguf-split set seen as one).
type TensorFile interface {
	Tensor(name string) (*gguf.TensorInfo, bool)
	TensorData(name string) ([]byte, error)
}

// GGUFWeights serves a GGUF's tensors, decoding rows from the file's memory
// map on every read (nothing is held in memory but the map).
func GGUFWeights(f TensorFile) Weights { return ggufWeights{f} }

type ggufWeights struct{ f TensorFile }

func (w ggufWeights) Tensor(name string) (Tensor, bool) {
	info, ok := w.f.Tensor(name)
	if !ok {
		return nil, false
	}
	return &ggufTensor{f: w.f, info: info}, true
}

type ggufTensor struct {
	f    TensorFile
	info *gguf.TensorInfo
}

func (t *ggufTensor) Shape() []int64 {
	s := make([]int64, len(t.info.Shape))
	for i, d := range t.info.Shape {
		s[i] = int64(d)
	}
	return s
}

// blockTensor is a Tensor whose rows the products can read as stored.
type blockTensor interface {
	Tensor
	// blockType is the stored type.
	blockType() gguf.Type
	// blockRows returns the stored bytes of n rows from row r0 on.
	blockRows(r0, n int) ([]byte, error)
}

func (t *ggufTensor) blockType() gguf.Type { return t.info.Type }

func (t *ggufTensor) blockRows(r0, n int) ([]byte, error) {
	ne0 := 1
	if len(t.info.Shape) > 0 {
		ne0 = int(t.info.Shape[0])
	}
	rows := int(t.info.Rows())
	if r0 < 0 || n < 0 || r0 > rows-n {
		return nil, fmt.Errorf("%w: tensor %s: rows %d+%d of %d", ErrWeights, t.info.Name, r0, n, rows)
	}
	rowSize, err := quantize.RowSize(t.info.Type, ne0)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.info.Name, err)
	}
	data, err := t.f.TensorData(t.info.Name)
	if err != nil {
		return nil, err
	}
	if len(data) < (r0+n)*rowSize {
		return nil, fmt.Errorf("%w: tensor %s: %d bytes for %d rows of %d", ErrWeights, t.info.Name, len(data), rows, rowSize)
	}
	return data[r0*rowSize : (r0+n)*rowSize], nil
}

func (t *ggufTensor) ReadRows(r0, n int, dst []float32) error {
	ne0 := 1
	if len(t.info.Shape) > 0 {
		ne0 = int(t.info.Shape[0])
	}
	rows := int(t.info.Rows())
	if r0 < 0 || n < 0 || r0 > rows-n || len(dst) < n*ne0 {
		return fmt.Errorf("%w: tensor %s: rows %d+%d of %d", ErrWeights, t.info.Name, r0, n, rows)
	}
	rowSize, err := quantize.RowSize(t.info.Type, ne0)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", t.info.Name, err)
	}
	data, err := t.f.TensorData(t.info.Name)
	if err != nil {
		return err
	}
	return quantize.Decode(t.info.Type, dst[:n*ne0], data[r0*rowSize:(r0+n)*rowSize], ne0)
}
