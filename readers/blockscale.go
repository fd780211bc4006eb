package readers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// ErrScale is wrapped by the errors about the scale tensor of a
// block-quantized (FP8) weight: missing, of the wrong shape, or holding a
// value that is not finite.
var ErrScale = errors.New("readers: unusable quantization scale")

// Scaled is a Source whose FP8 (or other block-quantized) weights read as
// the float32 values llama.cpp's converter dequantizes them to
// (ModelBase.dequant_model, quant_method "fp8", dequant_simple): each
// weight W that has a companion scale tensor W+"_scale_inv" (or, in
// Mistral's layout, ….qscale_weight beside ….weight) reads as
// float32(W) × float32(scale) — one float32 multiply per value, the scale
// of the value's block (its row index / block rows, its column / block
// columns); the scale tensors themselves, and the unused activation
// scales, are not listed. A dequantized weight is listed as F32, the dtype
// of the converter's product.
type Scaled struct {
	src     Source
	tensors []TensorInfo
	scaled  map[string]*scaledTensor
}

// scaledRows adds RowReader to a Scaled over a source that has it.
type scaledRows struct {
	*Scaled
	rr RowReader
}

// scaledTensor is one dequantized weight.
type scaledTensor struct {
	weight TensorInfo
	scale  TensorInfo
	// br, bc are the block's rows and columns; 0 means the whole
	// dimension (no weight_block_size: a per-tensor or per-row scale).
	br, bc int64
	// lead is the number of matrices (the product of the dimensions
	// before the last two) and rows, cols the matrix shape; nr, nc the
	// scale's blocks per matrix.
	lead, rows, cols, nr, nc int64
	// whole: the scale is read whole (no blocks: it may be 1-D or 0-D).
	whole bool
}

// activationScaleSuffixes are the tensors dequant_model drops unused.
var activationScaleSuffixes = []string{".activation_scale", "_activation_scale", ".qscale_act"}

// NewScaled wraps src for a checkpoint whose config.json declares
// quantization_config.quant_method "fp8", with its weight_block_size
// (nil: none, the scale is per tensor or per row). Every scale must have
// its weight and the shape that covers it exactly (ceil(rows/block) ×
// ceil(columns/block), per leading dimension), and every F8 tensor that is
// a weight must have a scale; otherwise the error, wrapping ErrScale,
// names the tensor. Values are checked when read.
func NewScaled(src Source, block []int64) (Source, error) {
	if block != nil && (len(block) != 2 || block[0] <= 0 || block[1] <= 0) {
		return nil, fmt.Errorf("%w: weight_block_size %v is not two positive sizes", ErrScale, block)
	}
	byName := map[string]TensorInfo{}
	for _, t := range src.Tensors() {
		byName[t.Name] = t
	}
	s := &Scaled{src: src, scaled: map[string]*scaledTensor{}}
	drop := map[string]bool{}
	for _, t := range src.Tensors() {
		var weight string
		switch {
		case strings.HasSuffix(t.Name, "_scale_inv"):
			weight = strings.TrimSuffix(t.Name, "_scale_inv")
		case strings.HasSuffix(t.Name, ".qscale_weight"):
			weight = strings.TrimSuffix(t.Name, "qscale_weight") + "weight"
		default:
			if hasSuffix(t.Name, activationScaleSuffixes) {
				drop[t.Name] = true
			}
			continue
		}
		w, ok := byName[weight]
		if !ok {
			return nil, fmt.Errorf("%w: scale tensor %q has no weight %q", ErrScale, t.Name, weight)
		}
		st, err := newScaledTensor(w, t, block)
		if err != nil {
			return nil, err
		}
		s.scaled[weight] = st
		drop[t.Name] = true
	}
	for _, t := range src.Tensors() {
		if drop[t.Name] {
			continue
		}
		if st, ok := s.scaled[t.Name]; ok {
			t.DType = F32
			// The stored bytes are not the listed dtype: no file range.
			t.File = ""
			st.weight.DType = byName[t.Name].DType
		} else if (t.DType == F8E4M3 || t.DType == F8E5M2) && len(t.Shape) >= 2 {
			return nil, fmt.Errorf("%w: %s tensor %q has no scale tensor %q", ErrScale, t.DType, t.Name, t.Name+"_scale_inv")
		}
		s.tensors = append(s.tensors, t)
	}
	if rr, ok := src.(RowReader); ok {
		return &scaledRows{Scaled: s, rr: rr}, nil
	}
	return s, nil
}

func hasSuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// newScaledTensor checks the scale's shape against the weight's: with
// blocks, [lead…, ceil(rows/br), ceil(cols/bc)]; without, one value or
// one per row (the shape of the weight's leading dimensions, as
// dequant_simple broadcasts it after unsqueezing trailing dimensions).
func newScaledTensor(w, s TensorInfo, block []int64) (*scaledTensor, error) {
	if _, err := NumElements(w.Shape); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", w.Name, err)
	}
	ns, err := NumElements(s.Shape)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", s.Name, err)
	}
	st := &scaledTensor{weight: w, scale: s}
	bad := func(want string) error {
		return fmt.Errorf("%w: scale tensor %q has shape %v, want %s for weight %q of shape %v", ErrScale, s.Name, s.Shape, want, w.Name, w.Shape)
	}
	if block == nil {
		st.whole = true
		st.lead, st.rows, st.cols = 1, 1, 1
		if len(w.Shape) > 0 {
			st.rows, st.cols = Rows(w.Shape)
		}
		switch {
		case ns == 1:
			st.nr, st.nc, st.br, st.bc = 1, 1, st.rows, st.cols
		case ns == st.rows && len(s.Shape) <= len(w.Shape) && shapePrefix(s.Shape, w.Shape):
			st.nr, st.nc, st.br, st.bc = st.rows, 1, 1, st.cols
		default:
			return nil, bad("one value or one per row")
		}
		if st.br == 0 {
			st.br = 1
		}
		if st.bc == 0 {
			st.bc = 1
		}
		return st, nil
	}
	if len(w.Shape) < 2 || len(s.Shape) != len(w.Shape) {
		return nil, bad(fmt.Sprintf("as many dimensions as the weight (blocks of %d×%d)", block[0], block[1]))
	}
	n := len(w.Shape)
	st.br, st.bc = block[0], block[1]
	st.rows, st.cols = w.Shape[n-2], w.Shape[n-1]
	st.nr, st.nc = (st.rows+st.br-1)/st.br, (st.cols+st.bc-1)/st.bc
	st.lead = 1
	want := make([]int64, n)
	for i := range n - 2 {
		want[i] = w.Shape[i]
		st.lead *= w.Shape[i]
	}
	want[n-2], want[n-1] = st.nr, st.nc
	for i := range want {
		if s.Shape[i] != want[i] {
			return nil, bad(fmt.Sprintf("%v (blocks of %d×%d)", want, block[0], block[1]))
		}
	}
	return st, nil
}

// shapePrefix reports whether s is p's leading dimensions, possibly
// followed by dimensions of 1.
func shapePrefix(s, w []int64) bool {
	for i, d := range s {
		if d != w[i] && d != 1 {
			return false
		}
		if d == 1 && w[i] != 1 {
			for _, e := range s[i:] {
				if e != 1 {
					return false
				}
			}
			return true
		}
	}
	return true
}

func (s *Scaled) Format() string        { return s.src.Format() }
func (s *Scaled) Tensors() []TensorInfo { return s.tensors }
func (s *Scaled) Close() error          { return s.src.Close() }

// Unwrap returns the wrapped source.
func (s *Scaled) Unwrap() Source { return s.src }

// ReadFloat32 reads a dequantized weight's rows as the product of the
// stored values and their blocks' scales, any other tensor as stored.
func (s *Scaled) ReadFloat32(ctx context.Context, name string, dst []float32, row0, nrows int) error {
	st, ok := s.scaled[name]
	if !ok {
		return s.src.ReadFloat32(ctx, name, dst, row0, nrows)
	}
	if err := s.src.ReadFloat32(ctx, name, dst, row0, nrows); err != nil {
		return err
	}
	return st.apply(ctx, s.src, dst, int64(row0), int64(nrows))
}

// apply multiplies rows [row0, row0+nrows) of the weight (counted as
// Rows counts them) by their scales, reading the scale rows they need.
func (st *scaledTensor) apply(ctx context.Context, src Source, dst []float32, row0, nrows int64) error {
	if nrows == 0 {
		return nil
	}
	// Global row g is matrix g / rows, row g % rows; its scale row is
	// matrix·nr + (g % rows)/br, increasing with g.
	srow := func(g int64) int64 { return (g/st.rows)*st.nr + (g%st.rows)/st.br }
	s0, s1 := srow(row0), srow(row0+nrows-1)
	var scales []float32
	if st.whole {
		all := make([]float32, st.nr*st.nc)
		rows, _ := Rows(st.scale.Shape)
		if err := src.ReadFloat32(ctx, st.scale.Name, all, 0, int(rows)); err != nil {
			return fmt.Errorf("scale tensor %q: %w", st.scale.Name, err)
		}
		scales = all[s0*st.nc : (s1+1)*st.nc]
	} else {
		scales = make([]float32, (s1-s0+1)*st.nc)
		if err := src.ReadFloat32(ctx, st.scale.Name, scales, int(s0), int(s1-s0+1)); err != nil {
			return fmt.Errorf("scale tensor %q: %w", st.scale.Name, err)
		}
	}
	for i, v := range scales {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			r, c := s0+int64(i)/st.nc, int64(i)%st.nc
			return fmt.Errorf("%w: scale tensor %q: block [%d, %d] is %v", ErrScale, st.scale.Name, r, c, v)
		}
	}
	for k := range nrows {
		row := dst[k*st.cols : (k+1)*st.cols]
		sr := scales[(srow(row0+k)-s0)*st.nc:]
		for j := range row {
			row[j] *= sr[int64(j)/st.bc]
		}
	}
	return nil
}

// scaledChunk bounds the values VisitRows dequantizes at once.
const scaledChunk = 1 << 16

// VisitRows hands out a dequantized weight's rows as little-endian F32
// bytes, any other tensor's as stored.
func (s *scaledRows) VisitRows(ctx context.Context, name string, row0, nrows int, fn func(first int64, b []byte) error) error {
	st, ok := s.scaled[name]
	if !ok {
		return s.rr.VisitRows(ctx, name, row0, nrows, fn)
	}
	step := max(1, scaledChunk/st.cols)
	vals := make([]float32, min(step, int64(nrows))*st.cols)
	buf := make([]byte, 4*len(vals))
	for r := int64(0); r < int64(nrows); r += step {
		n := min(step, int64(nrows)-r)
		v := vals[:n*st.cols]
		if err := s.ReadFloat32(ctx, name, v, row0+int(r), int(n)); err != nil {
			return err
		}
		b := buf[:4*len(v)]
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		if err := fn(r*st.cols, b); err != nil {
			return err
		}
	}
	return nil
}

// FileRange is the wrapped source's for tensors stored as listed.
func (s *scaledRows) FileRange(name string) (*os.File, int64, int64, error) {
	fr, ok := s.src.(FileRanger)
	if _, scaled := s.scaled[name]; scaled || !ok {
		return nil, 0, 0, fmt.Errorf("readers: tensor %q is not stored as listed", name)
	}
	return fr.FileRange(name)
}
