package verify

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
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

// chunkValues bounds the float32 values of one tensor held at a time (per
// side of the comparison): 4 MiB each, whatever the tensor's size.
const chunkValues = 1 << 20

// decodeChunk decodes rows [row0, row0+nrows) of a GGUF tensor into dst,
// split over threads.
func decodeChunk(ctx context.Context, f *File, info *gguf.TensorInfo, row0, nrows, ne0 int, dst []float32, threads int) error {
	per := max(1, (nrows+threads-1)/threads)
	tasks := (nrows + per - 1) / per
	return parallelFor(ctx, threads, tasks, func(i int) error {
		r0 := row0 + i*per
		r1 := min(row0+nrows, r0+per)
		return decodeRows(f, info, r0, r1-r0, dst[(r0-row0)*ne0:(r1-row0)*ne0])
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

// checkTensors decodes every tensor of f, a bounded number of rows at a
// time, flags non-finite values and, with a reference, compares each tensor
// with it.
func (v *verifier) checkTensors(ctx context.Context) error {
	var refShapes map[string][]uint64
	if v.ref != nil {
		refShapes = map[string][]uint64{}
		for _, t := range v.ref.Tensors() {
			refShapes[t.Name] = t.Shape
			if _, ok := v.f.Tensor(t.Name); !ok {
				v.fail(CheckReference, t.Name, "tensor of the reference is missing from the GGUF")
			}
		}
	}
	for i := range v.f.Tensors {
		info := &v.f.Tensors[i]
		compare := false
		if v.ref != nil {
			shape, ok := refShapes[info.Name]
			switch {
			case !ok:
				v.fail(CheckReference, info.Name, "tensor is not in the reference")
			case !gguf.SameShape(shape, info.Shape):
				v.fail(CheckReference, info.Name, fmt.Sprintf("shape %v, reference %v", info.Shape, shape))
			default:
				compare = true
			}
		}
		st, err := v.scanTensor(ctx, info, compare)
		if err != nil {
			return err
		}
		if st == nil || !compare {
			continue
		}
		limit, err := TensorLimit(info.Type)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", info.Name, err)
		}
		res := st.result(info.Name, info.Type, limit)
		if !res.OK {
			v.fail(CheckReference, info.Name, fmt.Sprintf("relative error %.3g exceeds %.3g for %s (rmse %.3g, max abs %.3g, cosine %.6f)",
				res.RelError, limit, info.Type, res.RMSE, res.MaxAbs, res.Cosine))
		}
		v.rep.Tensors = append(v.rep.Tensors, res)
	}
	return nil
}

// scanTensor decodes one tensor chunk by chunk, checks its values are
// finite and, with compare, accumulates its difference from the
// reference. A tensor that does not decode or holds a non-finite value is
// reported and gives nil statistics.
func (v *verifier) scanTensor(ctx context.Context, info *gguf.TensorInfo, compare bool) (*errStats, error) {
	if _, ok := info.NumElements(); !ok {
		v.fail(CheckValues, info.Name, "element count overflows")
		v.broken = true
		return nil, nil
	}
	ne0 := 1
	if len(info.Shape) > 0 {
		ne0 = int(info.Shape[0])
	}
	rows := int(info.Rows())
	if !compare && v.finiteAsStored(info, rows, ne0) {
		return &errStats{}, nil
	}
	per := max(1, chunkValues/max(1, ne0))
	got := make([]float32, min(rows, per)*ne0)
	var want []float32
	if compare {
		want = make([]float32, len(got))
	}
	st := &errStats{}
	for r0 := 0; r0 < rows; r0 += per {
		n := min(per, rows-r0)
		g := got[:n*ne0]
		if err := decodeChunk(ctx, v.f, info, r0, n, ne0, g, v.opts.threads()); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			v.fail(CheckValues, info.Name, err.Error())
			v.broken = true
			return nil, nil
		}
		// quantize.CheckFinite screens 16 values per branch; the plain
		// loop then finds the one to report.
		if quantize.CheckFinite(g, ne0, r0) != nil {
			j := firstNonFinite(g)
			v.fail(CheckValues, info.Name, fmt.Sprintf("non-finite value %v at element %d", g[j], r0*ne0+j))
			v.broken = true
			return nil, nil
		}
		if compare {
			w := want[:n*ne0]
			if err := v.ref.ReadRows(ctx, info.Name, r0, n, w); err != nil {
				return nil, fmt.Errorf("reference tensor %s: %w", info.Name, err)
			}
			st.add(g, w)
		}
	}
	return st, nil
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

// finiteAsStored reports whether the tensor is known to decode to finite
// values from its stored scales alone (storedFinite), which spares decoding
// it when nothing is compared. False means "decode and see": the decoding
// loop then finds and reports the value, as before.
func (v *verifier) finiteAsStored(info *gguf.TensorInfo, rows, ne0 int) bool {
	rowSize, err := quantize.RowSize(info.Type, ne0)
	if err != nil {
		return false
	}
	data, err := v.f.TensorData(info.Name)
	if err != nil || len(data) != rows*rowSize {
		return false
	}
	finite, known := storedFinite(info.Type, data)
	return finite && known
}
