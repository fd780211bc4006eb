package verify

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// Reference is what a verification compares a GGUF against: the metadata and
// tensors a correct conversion would have, under GGUF names, in GGUF (ggml)
// element order, as float32.
//
// A source checkpoint becomes a Reference through the conversion plan (each
// GGUF tensor's source tensors with the plan's transform applied in float32);
// a GGUF read back (GGUFReference) is one too, e.g. the F32 conversion
// against which a quantized file is checked.
type Reference interface {
	// KVs are the hyperparameter and tokenizer pairs the conversion should
	// carry (general.* descriptive keys may be missing or differ).
	KVs() []gguf.KV
	// Tensors lists every tensor the conversion should hold.
	Tensors() []RefTensor
	// ReadTensor writes the named tensor's values into dst, whose length is
	// the tensor's element count. It must be safe for concurrent use.
	ReadTensor(ctx context.Context, name string, dst []float32) error
}

// RefTensor names a reference tensor and gives its shape in ggml order
// (ne0, the row length, first).
type RefTensor struct {
	Name  string
	Shape []uint64
}

// Elements is the product of the dimensions.
func (t RefTensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// GGUFReference makes a Reference of a GGUF: its metadata and its tensors
// decoded to float32.
func GGUFReference(f *ggufread.File) Reference { return ggufRef{f} }

type ggufRef struct{ f *ggufread.File }

func (r ggufRef) KVs() []gguf.KV { return r.f.KVs }

func (r ggufRef) Tensors() []RefTensor {
	out := make([]RefTensor, len(r.f.Tensors))
	for i, t := range r.f.Tensors {
		out[i] = RefTensor{Name: t.Name, Shape: t.Shape}
	}
	return out
}

func (r ggufRef) ReadTensor(ctx context.Context, name string, dst []float32) error {
	info, ok := r.f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: no tensor %q", r.f.Name, name)
	}
	if n, _ := info.NumElements(); uint64(len(dst)) != n {
		return fmt.Errorf("%s: tensor %s has %d elements, not %d", r.f.Name, name, n, len(dst))
	}
	data, err := r.f.TensorData(name)
	if err != nil {
		return err
	}
	ne0 := 1
	if len(info.Shape) > 0 {
		ne0 = int(info.Shape[0])
	}
	if err := quantize.Decode(info.Type, dst, data, ne0); err != nil {
		return fmt.Errorf("%s: tensor %s: %w", r.f.Name, name, err)
	}
	return ctx.Err()
}

// refWeights serves a Reference to the forward pass, reading each tensor
// whole on first use and keeping it.
type refWeights struct {
	ctx    context.Context
	ref    Reference
	shapes map[string][]uint64

	mu      sync.Mutex
	tensors map[string]*refTensor
}

func newRefWeights(ctx context.Context, ref Reference) *refWeights {
	w := &refWeights{ctx: ctx, ref: ref, shapes: map[string][]uint64{}, tensors: map[string]*refTensor{}}
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
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tensors[name]
	if t == nil {
		t = &refTensor{w: w, name: name, shape: shape}
		w.tensors[name] = t
	}
	return t, true
}

type refTensor struct {
	w     *refWeights
	name  string
	shape []uint64
	once  sync.Once
	data  []float32
	err   error
}

func (t *refTensor) Shape() []int64 {
	s := make([]int64, len(t.shape))
	for i, d := range t.shape {
		s[i] = int64(d)
	}
	return s
}

func (t *refTensor) ReadRows(r0, n int, dst []float32) error {
	t.once.Do(func() {
		t.data = make([]float32, RefTensor{Shape: t.shape}.Elements())
		t.err = t.w.ref.ReadTensor(t.w.ctx, t.name, t.data)
	})
	if t.err != nil {
		return t.err
	}
	ne0 := 1
	if len(t.shape) > 0 {
		ne0 = int(t.shape[0])
	}
	if r0 < 0 || n < 0 || (r0+n)*ne0 > len(t.data) || len(dst) < n*ne0 {
		return fmt.Errorf("reference tensor %s: rows %d+%d out of range", t.name, r0, n)
	}
	copy(dst, t.data[r0*ne0:(r0+n)*ne0])
	return nil
}

// noisyWeights serves weights with independent Gaussian noise added to
// every value, of standard deviation rel[name] times the RMS of the value's
// block of noiseBlock elements of its row: quantization error scales with
// each block's magnitude (ggml's block scales), so large-magnitude rows
// (frequent tokens, outlier channels) carry larger errors, and homogeneous
// noise would underrate that (by 7–14× in KL on the qwen2 fixture). The
// noise of a row depends only on the draw, the tensor's name and the row,
// so any way of reading gives the same model.
type noisyWeights struct {
	w    forward.Weights
	rel  map[string]float64
	draw uint64
}

// noiseBlock is the block length of the legacy and 8-bit ggml types.
const noiseBlock = 32

func newNoisyWeights(w forward.Weights, rel map[string]float64, draw uint64) *noisyWeights {
	return &noisyWeights{w: w, rel: rel, draw: draw}
}

func (w *noisyWeights) Tensor(name string) (forward.Tensor, bool) {
	t, ok := w.w.Tensor(name)
	if !ok || w.rel[name] == 0 {
		return t, ok
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return &noisyTensor{Tensor: t, rel: w.rel[name], seed: h.Sum64() ^ w.draw*0x9e3779b97f4a7c15}, true
}

type noisyTensor struct {
	forward.Tensor
	rel  float64
	seed uint64
}

func (t *noisyTensor) ReadRows(r0, n int, dst []float32) error {
	if err := t.Tensor.ReadRows(r0, n, dst); err != nil {
		return err
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
