package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Decoder reads GGUF primitives, values, key/value pairs and tensor infos
// from a stream of known total size. Every declared length is checked
// against the bytes left (and against the format's hard limits) before
// anything is allocated, so a hostile header cannot make it allocate more
// than the input holds. Errors are *FormatError values naming File, Field
// and the byte offset.
//
// The decoder buffers its input itself (do not wrap r in a bufio.Reader) and
// parses from that buffer, so small reads cost no calls.
type Decoder struct {
	// File and Field name the input and the structure being read, for errors.
	File  string
	Field string

	r      io.Reader
	order  binary.ByteOrder
	buf    []byte // unread input is buf[pos:]
	pos    int
	off    int64 // absolute offset of buf[pos]
	remain int64 // bytes left in the input from off on, buffered ones included
	pool   []byte
}

// decoderChunk is how much input the decoder reads at a time.
const decoderChunk = 64 << 10

// NewDecoder returns a Decoder reading r, whose next byte is at absolute
// offset off and which holds remain more bytes.
func NewDecoder(r io.Reader, order binary.ByteOrder, off, remain int64) *Decoder {
	return &Decoder{r: r, order: order, off: off, remain: remain}
}

// Offset is the absolute offset of the next byte to be read.
func (d *Decoder) Offset() int64 { return d.off }

// Remaining is the number of bytes left.
func (d *Decoder) Remaining() int64 { return d.remain }

// SetByteOrder changes the byte order of subsequent reads.
func (d *Decoder) SetByteOrder(order binary.ByteOrder) { d.order = order }

// Errorf builds a *FormatError at the decoder's current offset.
func (d *Decoder) Errorf(sentinel error, format string, args ...any) error {
	return d.errorAt(d.off, sentinel, format, args...)
}

func (d *Decoder) errorAt(off int64, sentinel error, format string, args ...any) error {
	return &FormatError{File: d.File, Field: d.Field, Offset: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// take returns the next n bytes (valid until the next call) and consumes
// them, failing with ErrTruncated when fewer than n are left.
func (d *Decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || int64(n) > d.remain {
		return nil, d.Errorf(ErrTruncated, "%s needs %d bytes, %d left", what, n, d.remain)
	}
	if len(d.buf)-d.pos < n {
		if err := d.fill(n, what); err != nil {
			return nil, err
		}
	}
	p := d.buf[d.pos : d.pos+n]
	d.pos += n
	d.off += int64(n)
	d.remain -= int64(n)
	return p, nil
}

// fill makes at least n bytes available in buf (n ≤ remain was checked, so
// the buffer never grows beyond the input's size).
func (d *Decoder) fill(n int, what string) error {
	have := copy(d.buf, d.buf[d.pos:])
	d.buf, d.pos = d.buf[:have], 0
	want := int64(max(n, decoderChunk))
	want = min(want, d.remain)
	if int64(cap(d.buf)) < want {
		nb := make([]byte, have, want)
		copy(nb, d.buf)
		d.buf = nb
	}
	m, err := io.ReadAtLeast(d.r, d.buf[have:want], n-have)
	d.buf = d.buf[:have+m]
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return d.errorAt(d.off+int64(have+m), ErrTruncated, "%s: input ends early", what)
		}
		return d.Errorf(err, "%s: %v", what, err)
	}
	return nil
}

// Bytes reads n raw bytes into a new slice.
func (d *Decoder) Bytes(n int, what string) ([]byte, error) {
	p, err := d.take(n, what)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), p...), nil
}

// Skip discards n bytes.
func (d *Decoder) Skip(n int64, what string) error {
	if n < 0 || n > d.remain {
		return d.Errorf(ErrTruncated, "%s needs %d bytes, %d left", what, n, d.remain)
	}
	for n > 0 {
		step := int(min(n, decoderChunk))
		if _, err := d.take(step, what); err != nil {
			return err
		}
		n -= int64(step)
	}
	return nil
}

// Uint8 reads one byte.
func (d *Decoder) Uint8(what string) (uint8, error) {
	p, err := d.take(1, what)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// Uint16 reads a 16-bit integer.
func (d *Decoder) Uint16(what string) (uint16, error) {
	p, err := d.take(2, what)
	if err != nil {
		return 0, err
	}
	return d.order.Uint16(p), nil
}

// Uint32 reads a 32-bit integer.
func (d *Decoder) Uint32(what string) (uint32, error) {
	p, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return d.order.Uint32(p), nil
}

// Uint64 reads a 64-bit integer.
func (d *Decoder) Uint64(what string) (uint64, error) {
	p, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return d.order.Uint64(p), nil
}

// stringBytes reads a length-prefixed string (u64 length, then bytes; no
// NUL) and returns its bytes, valid until the next read.
func (d *Decoder) stringBytes(what string) ([]byte, error) {
	start := d.off
	n, err := d.Uint64("string length")
	if err != nil {
		return nil, err
	}
	if n > MaxStringLength {
		return nil, d.errorAt(start, ErrTooLarge, "%s length %d exceeds the limit of %d bytes", what, n, MaxStringLength)
	}
	if n > uint64(d.remain) {
		return nil, d.errorAt(start, ErrTooLarge, "%s length %d exceeds the %d bytes left", what, n, d.remain)
	}
	return d.take(int(n), what)
}

// String reads a length-prefixed string.
func (d *Decoder) String(what string) (string, error) {
	p, err := d.stringBytes(what)
	return string(p), err
}

// ValueType reads a 32-bit value type tag and checks it is defined.
func (d *Decoder) ValueType(what string) (ValueType, error) {
	start := d.off
	t, err := d.Uint32(what)
	if err != nil {
		return 0, err
	}
	if !ValueType(t).Valid() {
		return 0, d.errorAt(start, ErrFormat, "invalid value type %d", t)
	}
	return ValueType(t), nil
}

// Value reads a value of type t (for arrays: element type, count, elements).
// Arrays of arrays are refused, as gguf.cpp refuses them.
func (d *Decoder) Value(t ValueType) (Value, error) {
	if t != TypeArray {
		return d.scalar(t)
	}
	start := d.off
	et, err := d.ValueType("array element type")
	if err != nil {
		return Value{}, err
	}
	if et == TypeArray {
		return Value{}, d.errorAt(start, ErrFormat, "arrays of arrays are not allowed")
	}
	n, err := d.Uint64("array length")
	if err != nil {
		return Value{}, err
	}
	if n > MaxArrayLength {
		return Value{}, d.errorAt(start, ErrTooLarge, "array length %d exceeds the limit of %d", n, MaxArrayLength)
	}
	minSize := uint64(et.Size())
	if et == TypeString {
		minSize = 8 // each string has at least its length prefix
	}
	if n*minSize > uint64(d.remain) {
		return Value{}, d.errorAt(start, ErrTooLarge, "array of %d %s needs at least %d bytes, %d left", n, et, n*minSize, d.remain)
	}
	return d.array(et, int(n))
}

func (d *Decoder) scalar(t ValueType) (Value, error) {
	const what = "value"
	switch t {
	case TypeUint8:
		x, err := d.Uint8(what)
		return Uint8(x), err
	case TypeInt8:
		x, err := d.Uint8(what)
		return Int8(int8(x)), err
	case TypeUint16:
		x, err := d.Uint16(what)
		return Uint16(x), err
	case TypeInt16:
		x, err := d.Uint16(what)
		return Int16(int16(x)), err
	case TypeUint32:
		x, err := d.Uint32(what)
		return Uint32(x), err
	case TypeInt32:
		x, err := d.Uint32(what)
		return Int32(int32(x)), err
	case TypeFloat32:
		x, err := d.Uint32(what)
		return Float32(math.Float32frombits(x)), err
	case TypeBool:
		// gguf.cpp: any non-zero byte is true.
		x, err := d.Uint8(what)
		return Bool(x != 0), err
	case TypeString:
		x, err := d.String("string value")
		return String(x), err
	case TypeUint64:
		x, err := d.Uint64(what)
		return Uint64(x), err
	case TypeInt64:
		x, err := d.Uint64(what)
		return Int64(int64(x)), err
	case TypeFloat64:
		x, err := d.Uint64(what)
		return Float64(math.Float64frombits(x)), err
	}
	return Value{}, d.Errorf(ErrFormat, "invalid value type %d", uint32(t))
}

// array reads n elements of the fixed-size or string type et; the caller has
// checked n against the bytes left.
func (d *Decoder) array(et ValueType, n int) (Value, error) {
	if et == TypeString {
		// All elements share one backing string: two allocations for the
		// whole array instead of one per element (vocabularies hold 10^5).
		ends := make([]int, n)
		d.pool = d.pool[:0]
		for i := range ends {
			p, err := d.stringBytes("array string")
			if err != nil {
				return Value{}, err
			}
			d.pool = append(d.pool, p...)
			ends[i] = len(d.pool)
		}
		all := string(d.pool)
		if cap(d.pool) > 1<<20 {
			d.pool = nil // don't keep a large scratch buffer alive
		}
		xs := make([]string, n)
		start := 0
		for i, end := range ends {
			xs[i] = all[start:end]
			start = end
		}
		return Array(xs), nil
	}
	raw, err := d.take(n*et.Size(), "array data")
	if err != nil {
		return Value{}, err
	}
	o := d.order
	switch et {
	case TypeUint8:
		return Array(append([]uint8(nil), raw...)), nil
	case TypeInt8:
		return Array(conv(raw, 1, func(b []byte) int8 { return int8(b[0]) })), nil
	case TypeUint16:
		return Array(conv(raw, 2, o.Uint16)), nil
	case TypeInt16:
		return Array(conv(raw, 2, func(b []byte) int16 { return int16(o.Uint16(b)) })), nil
	case TypeUint32:
		return Array(conv(raw, 4, o.Uint32)), nil
	case TypeInt32:
		return Array(conv(raw, 4, func(b []byte) int32 { return int32(o.Uint32(b)) })), nil
	case TypeFloat32:
		return Array(conv(raw, 4, func(b []byte) float32 { return math.Float32frombits(o.Uint32(b)) })), nil
	case TypeBool:
		return Array(conv(raw, 1, func(b []byte) bool { return b[0] != 0 })), nil
	case TypeUint64:
		return Array(conv(raw, 8, o.Uint64)), nil
	case TypeInt64:
		return Array(conv(raw, 8, func(b []byte) int64 { return int64(o.Uint64(b)) })), nil
	case TypeFloat64:
		return Array(conv(raw, 8, func(b []byte) float64 { return math.Float64frombits(o.Uint64(b)) })), nil
	}
	return Value{}, d.Errorf(ErrFormat, "invalid array element type %d", uint32(et))
}

func conv[T any](raw []byte, size int, f func([]byte) T) []T {
	out := make([]T, len(raw)/size)
	for i := range out {
		out[i] = f(raw[i*size : i*size+size])
	}
	return out
}

// KV reads one key/value pair: key string, value type, value.
func (d *Decoder) KV() (KV, error) {
	key, err := d.String("key")
	if err != nil {
		return KV{}, err
	}
	t, err := d.ValueType("value type")
	if err != nil {
		return KV{Key: key}, err
	}
	v, err := d.Value(t)
	return KV{Key: key, Value: v}, err
}

// Encoder appends GGUF primitives, values, key/value pairs and tensor infos
// to a byte slice in the chosen byte order.
type Encoder struct {
	order binary.AppendByteOrder
	b     []byte
}

// NewEncoder returns an encoder in the given byte order (little-endian when nil).
func NewEncoder(order binary.AppendByteOrder) *Encoder {
	if order == nil {
		order = binary.LittleEndian
	}
	return &Encoder{order: order}
}

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.b }

// Len is the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.b) }

// Reset empties the buffer, keeping its storage.
func (e *Encoder) Reset() { e.b = e.b[:0] }

// Raw appends raw bytes.
func (e *Encoder) Raw(p []byte) { e.b = append(e.b, p...) }

// Uint32 appends a 32-bit integer.
func (e *Encoder) Uint32(x uint32) { e.b = e.order.AppendUint32(e.b, x) }

// Uint64 appends a 64-bit integer.
func (e *Encoder) Uint64(x uint64) { e.b = e.order.AppendUint64(e.b, x) }

// String appends a length-prefixed string.
func (e *Encoder) String(s string) {
	e.Uint64(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Value appends v's payload (for arrays: element type, count, elements);
// the type tag itself is written by KV.
func (e *Encoder) Value(v Value) {
	o := e.order
	switch x := v.v.(type) {
	case uint8:
		e.b = append(e.b, x)
	case int8:
		e.b = append(e.b, byte(x))
	case uint16:
		e.b = o.AppendUint16(e.b, x)
	case int16:
		e.b = o.AppendUint16(e.b, uint16(x))
	case uint32:
		e.b = o.AppendUint32(e.b, x)
	case int32:
		e.b = o.AppendUint32(e.b, uint32(x))
	case float32:
		e.b = o.AppendUint32(e.b, math.Float32bits(x))
	case bool:
		e.b = append(e.b, boolByte(x))
	case string:
		e.String(x)
	case uint64:
		e.b = o.AppendUint64(e.b, x)
	case int64:
		e.b = o.AppendUint64(e.b, uint64(x))
	case float64:
		e.b = o.AppendUint64(e.b, math.Float64bits(x))
	default:
		e.array(v)
	}
}

func (e *Encoder) array(v Value) {
	o := e.order
	e.Uint32(uint32(v.elem))
	e.Uint64(uint64(v.Len()))
	switch x := v.v.(type) {
	case []uint8:
		e.b = append(e.b, x...)
	case []int8:
		for _, y := range x {
			e.b = append(e.b, byte(y))
		}
	case []uint16:
		for _, y := range x {
			e.b = o.AppendUint16(e.b, y)
		}
	case []int16:
		for _, y := range x {
			e.b = o.AppendUint16(e.b, uint16(y))
		}
	case []uint32:
		for _, y := range x {
			e.b = o.AppendUint32(e.b, y)
		}
	case []int32:
		for _, y := range x {
			e.b = o.AppendUint32(e.b, uint32(y))
		}
	case []float32:
		for _, y := range x {
			e.b = o.AppendUint32(e.b, math.Float32bits(y))
		}
	case []bool:
		for _, y := range x {
			e.b = append(e.b, boolByte(y))
		}
	case []string:
		for _, y := range x {
			e.String(y)
		}
	case []uint64:
		for _, y := range x {
			e.b = o.AppendUint64(e.b, y)
		}
	case []int64:
		for _, y := range x {
			e.b = o.AppendUint64(e.b, uint64(y))
		}
	case []float64:
		for _, y := range x {
			e.b = o.AppendUint64(e.b, math.Float64bits(y))
		}
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// KV appends a key/value pair: key, type tag, value.
func (e *Encoder) KV(kv KV) {
	e.String(kv.Key)
	e.Uint32(uint32(kv.Value.typ))
	e.Value(kv.Value)
}

// TensorInfo appends a tensor info: name, n_dims, dims, type, offset.
func (e *Encoder) TensorInfo(t TensorInfo) {
	e.String(t.Name)
	e.Uint32(uint32(len(t.Shape)))
	for _, d := range t.Shape {
		e.Uint64(d)
	}
	e.Uint32(uint32(t.Type))
	e.Uint64(t.Offset)
}

// Header appends the fixed header: magic, version, tensor count, KV count.
// The magic is always the bytes "GGUF", whatever the byte order.
func (e *Encoder) Header(version uint32, nTensors, nKV uint64) {
	e.b = append(e.b, Magic...)
	e.Uint32(version)
	e.Uint64(nTensors)
	e.Uint64(nKV)
}
