package verify

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// TensorResult compares one GGUF tensor, decoded to float32, with its
// reference.
type TensorResult struct {
	Name     string
	Type     gguf.Type
	Elements int64
	// RMSE and MaxAbs are the root-mean-square and largest absolute
	// difference; Cosine the cosine similarity; RelError is RMSE over the
	// reference's RMS (0 when both are zero, +Inf when only the reference is).
	RMSE, MaxAbs, Cosine, RelError float64
	// RefRMS is the reference's root-mean-square value.
	RefRMS float64
	// Limit is the largest RelError the tensor's type allows (TensorLimit).
	Limit float64
	OK    bool
}

// errStats accumulates the comparison of a tensor with its reference.
type errStats struct {
	n                     int64
	d2, g2, r2, gr, maxAb float64
}

func (s *errStats) add(got, ref []float32) {
	for i, g := range got {
		r := float64(ref[i])
		d := float64(g) - r
		s.d2 += d * d
		s.g2 += float64(g) * float64(g)
		s.r2 += r * r
		s.gr += float64(g) * r
		s.maxAb = max(s.maxAb, math.Abs(d))
	}
	s.n += int64(len(got))
}

func (s *errStats) result(name string, t gguf.Type, limit float64) TensorResult {
	res := TensorResult{Name: name, Type: t, Elements: s.n, MaxAbs: s.maxAb, Limit: limit}
	if s.n > 0 {
		res.RMSE = math.Sqrt(s.d2 / float64(s.n))
		res.RefRMS = math.Sqrt(s.r2 / float64(s.n))
	}
	switch {
	case s.d2 == 0:
		res.RelError = 0
	case s.r2 == 0:
		res.RelError = math.Inf(1)
	default:
		res.RelError = math.Sqrt(s.d2 / s.r2)
	}
	switch {
	case s.g2 == 0 && s.r2 == 0:
		res.Cosine = 1
	case s.g2 == 0 || s.r2 == 0:
		res.Cosine = 0
	default:
		res.Cosine = s.gr / math.Sqrt(s.g2*s.r2)
	}
	res.OK = res.RelError <= limit
	return res
}

// decodeTensor decodes a GGUF tensor into dst, rows split over threads.
func decodeTensor(ctx context.Context, f *ggufread.File, info *gguf.TensorInfo, dst []float32, threads int) error {
	data, err := f.TensorData(info.Name)
	if err != nil {
		return err
	}
	ne0 := 1
	if len(info.Shape) > 0 {
		ne0 = int(info.Shape[0])
	}
	rowSize, err := quantize.RowSize(info.Type, ne0)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", info.Name, err)
	}
	rows := int(info.Rows())
	const rowsPerTask = 256
	tasks := (rows + rowsPerTask - 1) / rowsPerTask
	return parallelFor(ctx, threads, tasks, func(i int) error {
		r0 := i * rowsPerTask
		r1 := min(rows, r0+rowsPerTask)
		if err := quantize.Decode(info.Type, dst[r0*ne0:r1*ne0], data[r0*rowSize:r1*rowSize], ne0); err != nil {
			return fmt.Errorf("tensor %s rows %d..%d: %w", info.Name, r0, r1, err)
		}
		return nil
	})
}

// firstNonFinite returns the index of the first NaN or infinity, or -1.
func firstNonFinite(xs []float32) int {
	for i, x := range xs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}

// checkTensors decodes every tensor of f, flags non-finite values and, with
// a reference, compares each tensor with it.
func (v *verifier) checkTensors(ctx context.Context) error {
	var refShapes map[string][]uint64
	if v.ref != nil {
		refShapes = map[string][]uint64{}
		for _, t := range v.ref.Tensors() {
			refShapes[t.Name] = t.Shape
		}
		for _, t := range v.ref.Tensors() {
			if _, ok := v.f.Tensor(t.Name); !ok {
				v.fail(CheckReference, t.Name, "tensor of the reference is missing from the GGUF")
			}
		}
	}
	var got, want []float32
	for i := range v.f.Tensors {
		info := &v.f.Tensors[i]
		n, ok := info.NumElements()
		if !ok || n > maxTensorElements {
			v.fail(CheckValues, info.Name, fmt.Sprintf("%d elements is more than verify handles", n))
			v.broken = true
			continue
		}
		got = grow(got, int(n))
		if err := decodeTensor(ctx, v.f, info, got, v.opts.threads()); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v.fail(CheckValues, info.Name, err.Error())
			v.broken = true
			continue
		}
		if j := firstNonFinite(got); j >= 0 {
			v.fail(CheckValues, info.Name, fmt.Sprintf("non-finite value %v at element %d", got[j], j))
			v.broken = true
			continue
		}
		if v.ref == nil {
			continue
		}
		shape, ok := refShapes[info.Name]
		if !ok {
			v.fail(CheckReference, info.Name, "tensor is not in the reference")
			continue
		}
		if !sameShape(shape, info.Shape) {
			v.fail(CheckReference, info.Name, fmt.Sprintf("shape %v, reference %v", info.Shape, shape))
			continue
		}
		want = grow(want, int(n))
		if err := v.ref.ReadTensor(ctx, info.Name, want); err != nil {
			return fmt.Errorf("reference tensor %s: %w", info.Name, err)
		}
		limit, err := TensorLimit(info.Type)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", info.Name, err)
		}
		var st errStats
		st.add(got, want)
		res := st.result(info.Name, info.Type, limit)
		if !res.OK {
			v.fail(CheckReference, info.Name, fmt.Sprintf("relative error %.3g exceeds %.3g for %s (rmse %.3g, max abs %.3g, cosine %.6f)",
				res.RelError, limit, info.Type, res.RMSE, res.MaxAbs, res.Cosine))
		}
		v.rep.Tensors = append(v.rep.Tensors, res)
	}
	return nil
}

// maxTensorElements bounds the float32 buffers of one tensor (16 GiB each).
const maxTensorElements = 1 << 32

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// sameShape compares ggml shapes, ignoring trailing 1s.
func sameShape(a, b []uint64) bool {
	trim := func(s []uint64) []uint64 {
		for len(s) > 1 && s[len(s)-1] == 1 {
			s = s[:len(s)-1]
		}
		return s
	}
	a, b = trim(a), trim(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Worst returns the n tensors with the largest relative error relative to
// their limit, worst first.
func (r *Report) Worst(n int) []TensorResult {
	ts := append([]TensorResult(nil), r.Tensors...)
	score := func(t TensorResult) float64 {
		if t.Limit == 0 {
			return t.RelError
		}
		return t.RelError / t.Limit
	}
	sort.SliceStable(ts, func(i, j int) bool { return score(ts[i]) > score(ts[j]) })
	return ts[:min(n, len(ts))]
}
