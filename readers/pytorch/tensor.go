package pytorch

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/ggufkit/ggufkit/readers"
)

// storage is one torch storage: a run of bytes in the checkpoint that one
// or more tensors view.
type storage struct {
	key    string
	dtype  readers.DType // element type; U8 for an untyped storage
	nbytes int64
	// Where the bytes are: src (an io.ReaderAt over exactly nbytes bytes),
	// or, for a legacy storage view, parent's bytes from base on.
	src    io.ReaderAt
	parent *storage
	base   int64
	// swap: the bytes are big-endian (a zip "byteorder" record of "big").
	swap bool
}

// readAt fills p from byte off of the storage.
func (s *storage) readAt(p []byte, off int64) error {
	if off < 0 || int64(len(p)) > s.nbytes-off {
		return fmt.Errorf("%w: read of %d bytes at %d outside a %d-byte storage", ErrFormat, len(p), off, s.nbytes)
	}
	if s.parent != nil {
		return s.parent.readAt(p, s.base+off)
	}
	if s.src == nil {
		return fmt.Errorf("%w: storage %q has no data in the file", ErrFormat, s.key)
	}
	n, err := s.src.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// tensor is a view of a storage: dtype, shape and strides in elements, and
// an element offset, as torch's Tensor.set_ takes them.
type tensor struct {
	st     *storage
	dtype  readers.DType
	offset int64
	shape  []int64
	stride []int64
	// param: the tensor was an nn.Parameter.
	param        bool
	requiresGrad bool
}

// maxDims caps a tensor's rank (torch itself allows 64).
const maxDims = 64

// newTensor validates a view the way torch's set_ does before any data is
// read: sizes and strides are non-negative, the element count and the span
// do not overflow, and the view fits in its storage.
func newTensor(st *storage, dt readers.DType, offset int64, shape, stride []int64) (*tensor, error) {
	if len(shape) != len(stride) {
		return nil, failf(ErrFormat, "tensor has %d sizes but %d strides", len(shape), len(stride))
	}
	if len(shape) > maxDims {
		return nil, failf(ErrLimit, "tensor has %d dimensions (at most %d)", len(shape), maxDims)
	}
	if offset < 0 {
		return nil, failf(ErrFormat, "negative storage offset %d", offset)
	}
	es := int64(dt.Size())
	if es == 0 {
		return nil, failf(ErrUnsupported, "dtype %q", dt)
	}
	numel, err := readers.NumElements(shape)
	if err != nil {
		return nil, failf(ErrFormat, "sizes %v: %v", shape, err)
	}
	// The highest element index the view touches: offset + Σ (size-1)·stride.
	last := uint64(offset)
	for i, s := range stride {
		if s < 0 {
			return nil, failf(ErrFormat, "negative stride %d (sizes %v, strides %v)", s, shape, stride)
		}
		if shape[i] == 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(shape[i]-1), uint64(s))
		var c uint64
		last, c = bits.Add64(last, lo, 0)
		if hi != 0 || c != 0 || last > math.MaxInt64 {
			return nil, failf(ErrFormat, "view size overflows (sizes %v, strides %v)", shape, stride)
		}
	}
	if numel > 0 {
		// Bytes needed: (last+1)·es, overflow-checked.
		hi, need := bits.Mul64(last+1, uint64(es))
		if hi != 0 || need > uint64(st.nbytes) {
			return nil, failf(ErrFormat, "view (offset %d, sizes %v, strides %v) needs %d-byte elements up to index %d, but storage %q holds %d bytes",
				offset, shape, stride, es, last, st.key, st.nbytes)
		}
	}
	return &tensor{st: st, dtype: dt, offset: offset, shape: shape, stride: stride}, nil
}

// contiguous reports whether the view is row-major and dense (torch's
// is_contiguous: dimensions of size 1 may have any stride).
func (t *tensor) contiguous() bool {
	want := int64(1)
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] == 0 {
			return true
		}
		if t.shape[i] != 1 && t.stride[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// windowSize bounds the buffer a strided read goes through (a variable so
// that tests can make it tiny).
var windowSize int64 = 1 << 20

// readElems fills dst with the elements [first, first+count) of the tensor
// in row-major order, little-endian (len(dst) = count × element size).
// Contiguous views read straight into dst; strided views gather element by
// element through a bounded window of the storage.
func (t *tensor) readElems(ctx context.Context, dst []byte, first, count int64) error {
	es := int64(t.dtype.Size())
	if count == 0 {
		return nil
	}
	if int64(len(dst)) != count*es {
		return fmt.Errorf("%w: buffer of %d bytes for %d elements", readers.ErrShape, len(dst), count)
	}
	var err error
	if t.contiguous() {
		err = t.st.readAt(dst, (t.offset+first)*es)
	} else {
		err = t.gather(ctx, dst, first, count)
	}
	if err != nil {
		return err
	}
	if t.st.swap {
		unit := t.st.dtype.Size()
		if unit != int(es) && unit > 1 {
			return fmt.Errorf("%w: big-endian storage of %s viewed as %s", ErrUnsupported, t.st.dtype, t.dtype)
		}
		swapBytes(dst, unit)
	}
	return nil
}

// gather copies a strided view's elements [first, first+count) into dst. A
// 2-D view whose rows are closer together than its columns (a transposed
// matrix) is walked column by column over whole rows, so that each column
// is one run of the storage; everything else in row-major order.
func (t *tensor) gather(ctx context.Context, dst []byte, first, count int64) error {
	es := int64(t.dtype.Size())
	w := &window{st: t.st, buf: make([]byte, min(windowSize, t.st.nbytes))}
	n := len(t.shape)
	if n == 2 && t.stride[0] < t.stride[1] && first%t.shape[1] == 0 && count%t.shape[1] == 0 {
		cols, row0, nrows := t.shape[1], first/t.shape[1], count/t.shape[1]
		for c := range cols {
			if err := ctx.Err(); err != nil {
				return err
			}
			for r := range nrows {
				a := (t.offset + (row0+r)*t.stride[0] + c*t.stride[1]) * es
				b, err := w.at(a, es, readAhead(t.stride[0], nrows-r, es))
				if err != nil {
					return err
				}
				copy(dst[(r*cols+c)*es:], b)
			}
		}
		return nil
	}
	// Row-major odometer from element first.
	idx := make([]int64, n)
	rem := first
	for d := n - 1; d >= 0; d-- {
		idx[d] = rem % t.shape[d]
		rem /= t.shape[d]
	}
	a := t.offset
	for d := range n {
		a += idx[d] * t.stride[d]
	}
	cols, lastStride := int64(1), int64(0)
	if n > 0 {
		cols, lastStride = t.shape[n-1], t.stride[n-1]
	}
	for k := range count {
		if k%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		span := es
		if n > 0 {
			span = readAhead(lastStride, cols-idx[n-1], es)
		}
		b, err := w.at(a*es, es, span)
		if err != nil {
			return err
		}
		copy(dst[k*es:], b)
		for d := n - 1; d >= 0; d-- {
			idx[d]++
			a += t.stride[d]
			if idx[d] < t.shape[d] {
				break
			}
			a -= idx[d] * t.stride[d]
			idx[d] = 0
		}
	}
	return nil
}

// maxGap is the largest stride, in elements, that gather reads through in
// bulk: a run of elements maxGap apart costs at most maxGap times its size
// in I/O; farther apart, elements are read one by one.
const maxGap = 64

// readAhead is how many bytes to load for the next left elements stride
// apart: the run up to the last of them (the window caps it), or a single
// element when they are too far apart to read in bulk.
func readAhead(stride, left, es int64) int64 {
	if stride > maxGap || left <= 0 {
		return es
	}
	return ((left-1)*stride + 1) * es
}

// window caches a run of a storage's bytes for gather.
type window struct {
	st     *storage
	buf    []byte
	lo, hi int64
}

// at returns the n bytes at storage byte offset a. On a miss it loads the
// span bytes from a (at least n, at most the buffer), so callers say how
// far ahead they will read.
func (w *window) at(a, n, span int64) ([]byte, error) {
	if a >= w.lo && a+n <= w.hi {
		return w.buf[a-w.lo : a-w.lo+n], nil
	}
	size := min(max(span, n), int64(len(w.buf)), w.st.nbytes-a)
	if size < n {
		return nil, fmt.Errorf("%w: element at byte %d outside a %d-byte storage", ErrFormat, a, w.st.nbytes)
	}
	if err := w.st.readAt(w.buf[:size], a); err != nil {
		w.lo, w.hi = 0, 0
		return nil, err
	}
	w.lo, w.hi = a, a+size
	return w.buf[:n], nil
}

// swapBytes reverses every unit-byte element of b in place.
func swapBytes(b []byte, unit int) {
	if unit <= 1 {
		return
	}
	for i := 0; i+unit <= len(b); i += unit {
		e := b[i : i+unit]
		for j, k := 0, unit-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// intTuple reads a size or stride argument: a tuple (or torch.Size) of
// ints.
func intTuple(what string, v any) ([]int64, error) {
	items, ok := v.(pyTuple)
	if !ok {
		if l, isList := v.(*pyList); isList {
			items, ok = l.items, true
		}
	}
	if !ok {
		return nil, failf(ErrFormat, "%s is a %s, not a tuple of ints", what, typeName(v))
	}
	if len(items) > maxDims {
		return nil, failf(ErrLimit, "%s has %d dimensions (at most %d)", what, len(items), maxDims)
	}
	out := make([]int64, len(items))
	for i, e := range items {
		n, ok := e.(int64)
		if !ok {
			return nil, failf(ErrFormat, "%s item %d is a %s, not an int (sizes past int64 are refused)", what, i, typeName(e))
		}
		out[i] = n
	}
	return out, nil
}

// rebuildTensor implements torch._utils._rebuild_tensor(storage, offset,
// size, stride), _rebuild_tensor_v2(…, requires_grad, backward_hooks[,
// metadata]) and _rebuild_tensor_v3(…, requires_grad, backward_hooks,
// dtype[, metadata]).
func rebuildTensor(g *pyGlobal, args pyTuple) (any, error) {
	var err error
	switch g.kind {
	case gRebuildTensor:
		err = argCount(g, args, 4, 4)
	case gRebuildTensorV2:
		err = argCount(g, args, 6, 7)
	default:
		err = argCount(g, args, 7, 8)
	}
	if err != nil {
		return nil, err
	}
	st, ok := args[0].(*storage)
	if !ok {
		return nil, failf(ErrFormat, "%s: storage argument is a %s", g.name, typeName(args[0]))
	}
	offset, ok := args[1].(int64)
	if !ok {
		return nil, failf(ErrFormat, "%s: storage offset is a %s, not an int", g.name, typeName(args[1]))
	}
	shape, err := intTuple("size", args[2])
	if err != nil {
		return nil, err
	}
	stride, err := intTuple("stride", args[3])
	if err != nil {
		return nil, err
	}
	dt := st.dtype
	var requiresGrad bool
	if g.kind != gRebuildTensor {
		if requiresGrad, ok = args[4].(bool); !ok {
			return nil, failf(ErrFormat, "%s: requires_grad is a %s, not a bool", g.name, typeName(args[4]))
		}
		if _, ok := args[5].(*pyDict); !ok {
			return nil, failf(ErrFormat, "%s: backward_hooks is a %s, not a dict", g.name, typeName(args[5]))
		}
		meta := 6
		if g.kind == gRebuildTensorV3 {
			d, ok := args[6].(*pyDType)
			if !ok {
				return nil, failf(ErrFormat, "%s: dtype argument is a %s", g.name, typeName(args[6]))
			}
			dt, meta = d.dt, 7
		}
		if len(args) > meta {
			if err := checkTensorMetadata(args[meta]); err != nil {
				return nil, err
			}
		}
	}
	t, err := newTensor(st, dt, offset, shape, stride)
	if err != nil {
		return nil, err
	}
	t.requiresGrad = requiresGrad
	return t, nil
}

// checkTensorMetadata accepts _rebuild_tensor_v2's metadata (None or a dict
// of flags) unless it sets the conj or neg bit, which would change the
// values read.
func checkTensorMetadata(v any) error {
	switch m := v.(type) {
	case nil:
		return nil
	case *pyDict:
		for i, k := range m.keys {
			if set, _ := m.vals[i].(bool); set {
				return failf(ErrUnsupported, "tensor metadata flag %s is set", shortRepr(k))
			}
		}
		return nil
	}
	return failf(ErrFormat, "tensor metadata is a %s, not a dict", typeName(v))
}

// newParameter is nn.Parameter(data[, requires_grad]).
func newParameter(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 1, 2); err != nil {
		return nil, err
	}
	return asParameter(g, args[0], args[1:])
}

// rebuildParameter is _rebuild_parameter(data, requires_grad,
// backward_hooks) and _rebuild_parameter_with_state(…, state); the state
// (Python attributes of a Parameter subclass) is not kept.
func rebuildParameter(g *pyGlobal, args pyTuple) (any, error) {
	n := 3
	if g.kind == gRebuildParameterWithState {
		n = 4
	}
	if err := argCount(g, args, n, n); err != nil {
		return nil, err
	}
	if _, ok := args[2].(*pyDict); !ok {
		return nil, failf(ErrFormat, "%s: backward_hooks is a %s, not a dict", g.name, typeName(args[2]))
	}
	return asParameter(g, args[0], args[1:2])
}

func asParameter(g *pyGlobal, data any, rest pyTuple) (any, error) {
	t, ok := data.(*tensor)
	if !ok {
		return nil, failf(ErrFormat, "%s: data is a %s, not a tensor", g.name, typeName(data))
	}
	p := *t
	p.param, p.requiresGrad = true, true
	if len(rest) > 0 {
		if p.requiresGrad, ok = rest[0].(bool); !ok {
			return nil, failf(ErrFormat, "%s: requires_grad is a %s, not a bool", g.name, typeName(rest[0]))
		}
	}
	return &p, nil
}

// rebuildFromType is torch._tensor._rebuild_from_type_v2(func, new_type,
// args, state): func(*args) viewed as new_type, which must be torch.Tensor
// or nn.Parameter; the state (Python attributes) is not kept.
func rebuildFromType(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 4, 4); err != nil {
		return nil, err
	}
	fn, ok := args[0].(*pyGlobal)
	if !ok {
		return nil, failf(ErrForbidden, "%s: func is a %s, not an allowed callable", g.name, typeName(args[0]))
	}
	typ, ok := args[1].(*pyGlobal)
	if !ok || (typ.kind != gTensorClass && typ.kind != gParameterClass) {
		return nil, failf(ErrUnsupported, "%s: new_type %s is not torch.Tensor or Parameter", g.name, typeName(args[1]))
	}
	inner, ok := args[2].(pyTuple)
	if !ok {
		return nil, failf(ErrFormat, "%s: args is a %s, not a tuple", g.name, typeName(args[2]))
	}
	v, err := fn.call(inner)
	if err != nil {
		return nil, err
	}
	t, ok := v.(*tensor)
	if !ok {
		return nil, failf(ErrFormat, "%s: %s returned a %s, not a tensor", g.name, fn.name, typeName(v))
	}
	out := *t
	out.param = typ.kind == gParameterClass
	return &out, nil
}
