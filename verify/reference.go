package verify

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// Reference is what a verification compares a GGUF against: the metadata and
// tensors a correct conversion would have, under GGUF names, in GGUF (ggml)
// element order, as float32, read a range of rows at a time so that memory
// stays bounded whatever the model's size.
//
// GGUFReference serves a GGUF read back (e.g. the F32 conversion against
// which a quantized file is checked); OpenCheckpoint a source checkpoint
// through the converter's plan.
type Reference interface {
	// KVs are the hyperparameter and tokenizer pairs the conversion should
	// carry (general.* descriptive keys may be missing or differ).
	KVs() []gguf.KV
	// Tensors lists every tensor the conversion should hold.
	Tensors() []RefTensor
	// ReadRows writes rows [row0, row0+nrows) of the named tensor (a row is
	// Shape[0] values) into dst, whose length is nrows·Shape[0]. It must be
	// safe for concurrent use.
	ReadRows(ctx context.Context, name string, row0, nrows int, dst []float32) error
}

// RefTensor names a reference tensor and gives its shape in ggml order
// (ne0, the row length, first).
type RefTensor struct {
	Name  string
	Shape []uint64
}

// GGUFReference makes a Reference of a GGUF (a single file or a gguf-split
// set): its metadata and its tensors decoded to float32.
func GGUFReference(f *File) Reference { return ggufRef{f} }

type ggufRef struct{ f *File }

func (r ggufRef) KVs() []gguf.KV { return r.f.KVs }

func (r ggufRef) Tensors() []RefTensor {
	out := make([]RefTensor, len(r.f.Tensors))
	for i, t := range r.f.Tensors {
		out[i] = RefTensor{Name: t.Name, Shape: t.Shape}
	}
	return out
}

func (r ggufRef) ReadRows(ctx context.Context, name string, row0, nrows int, dst []float32) error {
	info, ok := r.f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: no tensor %q", r.f.Name, name)
	}
	if err := decodeRows(r.f, info, row0, nrows, dst); err != nil {
		return fmt.Errorf("%s: %w", r.f.Name, err)
	}
	return ctx.Err()
}

// decodeRows decodes rows [row0, row0+nrows) of a GGUF tensor into dst
// (exactly nrows·ne0 values).
func decodeRows(f *File, info *gguf.TensorInfo, row0, nrows int, dst []float32) error {
	ne0 := 1
	if len(info.Shape) > 0 {
		ne0 = int(info.Shape[0])
	}
	rows := int(info.Rows())
	if row0 < 0 || nrows < 0 || row0 > rows-nrows || len(dst) != nrows*ne0 {
		return fmt.Errorf("tensor %s: rows %d+%d into %d values (%d rows of %d)", info.Name, row0, nrows, len(dst), rows, ne0)
	}
	rowSize, err := quantize.RowSize(info.Type, ne0)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", info.Name, err)
	}
	data, err := f.TensorData(info.Name)
	if err != nil {
		return err
	}
	if err := quantize.Decode(info.Type, dst, data[row0*rowSize:(row0+nrows)*rowSize], ne0); err != nil {
		return fmt.Errorf("tensor %s rows %d..%d: %w", info.Name, row0, row0+nrows, err)
	}
	return nil
}

// refWeights serves a Reference to the forward pass, row ranges read on use.
type refWeights struct {
	ctx    context.Context
	ref    Reference
	shapes map[string][]uint64
}

func newRefWeights(ctx context.Context, ref Reference) *refWeights {
	w := &refWeights{ctx: ctx, ref: ref, shapes: map[string][]uint64{}}
	for _, t := range ref.Tensors() {
		w.shapes[t.Name] = t.Shape
	}
	return w
}

func (w *refWeights) Tensor(name string) (forward.Tensor, bool) {
	shape, ok := w.shapes[name]
	if !ok {
		return nil, false
	}
	return &refTensor{w: w, name: name, shape: shape}, true
}

type refTensor struct {
	w     *refWeights
	name  string
	shape []uint64
}

func (t *refTensor) Shape() []int64 {
	s := make([]int64, len(t.shape))
	for i, d := range t.shape {
		s[i] = int64(d)
	}
	return s
}

func (t *refTensor) ReadRows(r0, n int, dst []float32) error {
	ne0 := 1
	if len(t.shape) > 0 {
		ne0 = int(t.shape[0])
	}
	if n < 0 || len(dst) < n*ne0 {
		return fmt.Errorf("reference tensor %s: %d rows into %d values", t.name, n, len(dst))
	}
	return t.w.ref.ReadRows(t.w.ctx, t.name, r0, n, dst[:n*ne0])
}

// noisyWeights serves weights with independent Gaussian noise added to
// every value, of standard deviation rel[name] times the RMS of the value's
// block of noiseBlock elements of its row: quantization error scales with
// each block's magnitude (ggml's block scales), so large-magnitude rows
// (frequent tokens, outlier channels) carry larger errors, and homogeneous
// noise would underrate that (by 7–14× in KL on the qwen2 fixture). The
// noise of a row depends only on the draw, the tensor's name and the row,
// so any way of reading gives the same model.
//
// Each tensor also reports the GGUF's type for it (forward.ProductTyped), so
// the products round their inputs as they do for the GGUF's weights (to
// Q8_0, Q8_K, F16 …, as ggml's vec_dot): the noise covers the forward
// pass's own rounding as well as the weights' errors.
type noisyWeights struct {
	w     forward.Weights
	rel   map[string]float64
	types map[string]gguf.Type
	draw  uint64
}

// noiseBlock is the block length of the legacy and 8-bit ggml types.
const noiseBlock = 32

func newNoisyWeights(w forward.Weights, rel map[string]float64, types map[string]gguf.Type, draw uint64) *noisyWeights {
	return &noisyWeights{w: w, rel: rel, types: types, draw: draw}
}

func (w *noisyWeights) Tensor(name string) (forward.Tensor, bool) {
	t, ok := w.w.Tensor(name)
	typ, typed := w.types[name]
	if !ok || (w.rel[name] == 0 && !typed) {
		return t, ok
	}
	if !typed {
		typ = gguf.F32
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return &noisyTensor{Tensor: t, rel: w.rel[name], typ: typ, seed: h.Sum64() ^ w.draw*0x9e3779b97f4a7c15}, true
}

type noisyTensor struct {
	forward.Tensor
	rel  float64
	typ  gguf.Type
	seed uint64
}

// ProductType is the GGUF's type for the tensor.
func (t *noisyTensor) ProductType() gguf.Type { return t.typ }

func (t *noisyTensor) ReadRows(r0, n int, dst []float32) error {
	if err := t.Tensor.ReadRows(r0, n, dst); err != nil {
		return err
	}
	if t.rel == 0 {
		return nil
	}
	ne0 := 1
	if s := t.Shape(); len(s) > 0 {
		ne0 = int(s[0])
	}
	for r := 0; r < n; r++ {
		rng := rand.New(rand.NewPCG(t.seed, uint64(r0+r)))
		row := dst[r*ne0 : (r+1)*ne0]
		for b := 0; b < len(row); b += noiseBlock {
			blk := row[b:min(b+noiseBlock, len(row))]
			var ss float64
			for _, x := range blk {
				ss += float64(x) * float64(x)
			}
			sigma := t.rel * math.Sqrt(ss/float64(len(blk)))
			for i := range blk {
				blk[i] += float32(sigma * rng.NormFloat64())
			}
		}
	}
	return nil
}
