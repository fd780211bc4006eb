// Package diff compares two GGUF files: their metadata key by key (type and
// value), their tensors by name (missing, extra, other type or shape), and
// the numbers of each tensor both hold with the same shape, decoded to
// float32 (RMSE, largest absolute difference, relative error, cosine
// similarity). Tensors are read a bounded number of rows at a time from the
// memory-mapped files, so memory does not grow with the model.
package diff

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// chunkValues bounds the values decoded at once per file.
const chunkValues = 1 << 20

// Status says how a key or tensor differs.
type Status string

// The statuses of keys and tensors.
const (
	OnlyInA Status = "only_in_a" // removed in B
	OnlyInB Status = "only_in_b" // added in B
	Changed Status = "changed"   // a key's type or value, a tensor's type, shape or data
)

// KVDiff is one key whose presence, type or value differs.
type KVDiff struct {
	Key    string `json:"key"`
	Status Status `json:"status"`
	// AType and BType are the types as gguf_dump.py names them (uint32,
	// [string] for an array of strings); empty on the side that lacks the key.
	AType string `json:"a_type,omitempty"`
	BType string `json:"b_type,omitempty"`
	// A and B are scalar values; arrays are described by ALen, BLen and
	// FirstDiff (the first index where they differ).
	A         any  `json:"a,omitempty"`
	B         any  `json:"b,omitempty"`
	ALen      *int `json:"a_len,omitempty"`
	BLen      *int `json:"b_len,omitempty"`
	FirstDiff *int `json:"first_diff,omitempty"`
}

// Error is the numeric difference of a tensor's values, B against A.
type Error struct {
	RMSE     float64 `json:"rmse"`
	MaxAbs   float64 `json:"max_abs"`
	Relative float64 `json:"relative"` // ‖B−A‖ / ‖A‖
	Cosine   float64 `json:"cosine"`   // A·B / (‖A‖‖B‖); 1 for two zero tensors
}

// TensorDiff is one tensor that is missing from a file or differs.
type TensorDiff struct {
	Name   string   `json:"name"`
	Status Status   `json:"status"`
	AType  string   `json:"a_type,omitempty"`
	BType  string   `json:"b_type,omitempty"`
	AShape []uint64 `json:"a_shape,omitempty"`
	BShape []uint64 `json:"b_shape,omitempty"`
	// Error is set when both have the same shape and both types decode.
	Error *Error `json:"error,omitempty"`
	// Note says why there is no Error for a changed tensor.
	Note string `json:"note,omitempty"`
}

// Report is the comparison of two files.
type Report struct {
	Equal bool `json:"equal"`
	// SameTensors counts the tensors both files hold byte for byte.
	SameTensors int          `json:"same_tensors"`
	KVs         []KVDiff     `json:"metadata"`
	Tensors     []TensorDiff `json:"tensors"`
}

// Compare compares a with b. Keys are listed in A's order, then those only
// in B; tensors likewise.
func Compare(ctx context.Context, a, b *ggufread.File) (*Report, error) {
	r := &Report{KVs: []KVDiff{}, Tensors: []TensorDiff{}}
	for _, kv := range a.KVs {
		bv, ok := b.KV(kv.Key)
		switch {
		case !ok:
			d := KVDiff{Key: kv.Key, Status: OnlyInA, AType: TypeName(kv.Value)}
			d.A, d.ALen = describe(kv.Value)
			r.KVs = append(r.KVs, d)
		case !kv.Value.Equal(bv):
			r.KVs = append(r.KVs, changedKV(kv.Key, kv.Value, bv))
		}
	}
	for _, kv := range b.KVs {
		if _, ok := a.KV(kv.Key); !ok {
			d := KVDiff{Key: kv.Key, Status: OnlyInB, BType: TypeName(kv.Value)}
			d.B, d.BLen = describe(kv.Value)
			r.KVs = append(r.KVs, d)
		}
	}
	for _, ta := range a.Tensors {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tb, ok := b.Tensor(ta.Name)
		if !ok {
			r.Tensors = append(r.Tensors, TensorDiff{Name: ta.Name, Status: OnlyInA, AType: ta.Type.String(), AShape: ta.Shape})
			continue
		}
		d, same, err := compareTensor(a, b, ta, *tb)
		if err != nil {
			return nil, err
		}
		if same {
			r.SameTensors++
		} else {
			r.Tensors = append(r.Tensors, d)
		}
	}
	for _, tb := range b.Tensors {
		if _, ok := a.Tensor(tb.Name); !ok {
			r.Tensors = append(r.Tensors, TensorDiff{Name: tb.Name, Status: OnlyInB, BType: tb.Type.String(), BShape: tb.Shape})
		}
	}
	r.Equal = len(r.KVs) == 0 && len(r.Tensors) == 0
	return r, nil
}

// TypeName is a value's type as gguf_dump.py names it: uint32, or [string]
// for an array of strings.
func TypeName(v gguf.Value) string {
	if v.IsArray() {
		return "[" + v.ElemType().String() + "]"
	}
	return v.Type().String()
}

// describe returns a scalar's value (floats that JSON cannot hold as
// strings), or an array's length.
func describe(v gguf.Value) (any, *int) {
	if v.IsArray() {
		n := v.Len()
		return nil, &n
	}
	if f, ok := v.Float(); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return fmt.Sprint(f), nil
	}
	return v.Any(), nil
}

func changedKV(key string, a, b gguf.Value) KVDiff {
	d := KVDiff{Key: key, Status: Changed, AType: TypeName(a), BType: TypeName(b)}
	d.A, d.ALen = describe(a)
	d.B, d.BLen = describe(b)
	if a.IsArray() && b.IsArray() && a.ElemType() == b.ElemType() {
		n := min(a.Len(), b.Len())
		i := 0
		for i < n && elem(a, i) == elem(b, i) {
			i++
		}
		d.FirstDiff = &i
	}
	return d
}

// elem returns item i of an array value (comparable: a scalar).
func elem(v gguf.Value, i int) any {
	switch xs := v.Any().(type) {
	case []uint8:
		return xs[i]
	case []int8:
		return xs[i]
	case []uint16:
		return xs[i]
	case []int16:
		return xs[i]
	case []uint32:
		return xs[i]
	case []int32:
		return xs[i]
	case []uint64:
		return xs[i]
	case []int64:
		return xs[i]
	case []float32:
		return math.Float32bits(xs[i])
	case []float64:
		return math.Float64bits(xs[i])
	case []bool:
		return xs[i]
	case []string:
		return xs[i]
	}
	return nil
}

// compareTensor compares a tensor both files hold. same reports identical
// type, shape and bytes.
func compareTensor(a, b *ggufread.File, ta, tb gguf.TensorInfo) (d TensorDiff, same bool, err error) {
	d = TensorDiff{Name: ta.Name, Status: Changed, AType: ta.Type.String(), BType: tb.Type.String(), AShape: ta.Shape, BShape: tb.Shape}
	da, err := a.TensorData(ta.Name)
	if err != nil {
		return d, false, err
	}
	db, err := b.TensorData(tb.Name)
	if err != nil {
		return d, false, err
	}
	sameShape := slices.Equal(trimOnes(ta.Shape), trimOnes(tb.Shape))
	if ta.Type == tb.Type && sameShape && bytes.Equal(da, db) {
		return d, true, nil
	}
	switch {
	case !sameShape:
		d.Note = "shapes differ"
	case !quantize.CanDecode(ta.Type) || !quantize.CanDecode(tb.Type):
		d.Note = "no decoder for " + ta.Type.String() + " or " + tb.Type.String()
	default:
		e, err := tensorError(ta, tb, da, db)
		if err != nil {
			return d, false, fmt.Errorf("diff: tensor %q: %w", ta.Name, err)
		}
		d.Error = e
	}
	return d, false, nil
}

// trimOnes drops trailing dimensions of 1, which do not change a tensor.
func trimOnes(s []uint64) []uint64 {
	n := len(s)
	for n > 1 && s[n-1] == 1 {
		n--
	}
	return s[:n]
}

// tensorError decodes both tensors a chunk of rows at a time and
// accumulates the error in float64.
func tensorError(ta, tb gguf.TensorInfo, da, db []byte) (*Error, error) {
	ncols := uint64(1)
	if len(ta.Shape) > 0 {
		ncols = ta.Shape[0]
	}
	n, _ := ta.NumElements()
	if ncols == 0 || n == 0 {
		return &Error{Cosine: 1}, nil
	}
	rowA, _ := ta.Type.RowSize(ncols)
	rowB, _ := tb.Type.RowSize(ncols)
	rows := n / ncols
	step := max(1, chunkValues/ncols)
	bufA := make([]float32, min(rows, step)*ncols)
	bufB := make([]float32, len(bufA))
	var sq, dot, na, nb, maxAbs float64
	for r0 := uint64(0); r0 < rows; r0 += step {
		k := min(step, rows-r0)
		va, vb := bufA[:k*ncols], bufB[:k*ncols]
		if err := quantize.Decode(ta.Type, va, da[r0*rowA:(r0+k)*rowA], int(ncols)); err != nil {
			return nil, err
		}
		if err := quantize.Decode(tb.Type, vb, db[r0*rowB:(r0+k)*rowB], int(ncols)); err != nil {
			return nil, err
		}
		for i := range va {
			x, y := float64(va[i]), float64(vb[i])
			dlt := y - x
			sq += dlt * dlt
			dot += x * y
			na += x * x
			nb += y * y
			if ad := math.Abs(dlt); ad > maxAbs || math.IsNaN(ad) {
				maxAbs = ad
			}
		}
	}
	e := &Error{RMSE: math.Sqrt(sq / float64(n)), MaxAbs: maxAbs}
	switch {
	case na == 0 && nb == 0:
		e.Cosine = 1
	case na == 0 || nb == 0:
		e.Cosine = 0
	default:
		e.Cosine = dot / math.Sqrt(na*nb)
	}
	if na > 0 {
		e.Relative = math.Sqrt(sq / na)
	} else if sq > 0 {
		e.Relative = math.Inf(1)
	}
	return e, nil
}

// MarshalJSON writes the figures as JSON numbers, a NaN or an infinity as
// a string ("NaN", "+Inf").
func (e Error) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	for i, f := range []struct {
		name string
		v    float64
	}{{"rmse", e.RMSE}, {"max_abs", e.MaxAbs}, {"relative", e.Relative}, {"cosine", e.Cosine}} {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			fmt.Fprintf(&b, "%q:%q", f.name, fmt.Sprint(f.v))
		} else {
			fmt.Fprintf(&b, "%q:%s", f.name, strconv.FormatFloat(f.v, 'g', -1, 64))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
