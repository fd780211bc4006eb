package gguf

import (
	"fmt"
	"math"
)

// Value is one metadata value: a scalar (uint8 … float64, bool, string) or a
// homogeneous array of scalars. Arrays of arrays are not representable, as in
// gguf.cpp, which refuses them.
//
// The zero Value is invalid; build values with the constructors (Uint32,
// String, Array …) or decode them with a Decoder.
type Value struct {
	typ  ValueType
	elem ValueType // element type when typ == TypeArray
	v    any       // a Go scalar of the matching type, or a slice of them
}

// Scalar is the set of Go types that map onto a GGUF scalar value type.
type Scalar interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~float32 |
		~bool | ~string | ~uint64 | ~int64 | ~float64
}

// Uint8 returns a uint8 value.
func Uint8(x uint8) Value { return Value{typ: TypeUint8, v: x} }

// Int8 returns an int8 value.
func Int8(x int8) Value { return Value{typ: TypeInt8, v: x} }

// Uint16 returns a uint16 value.
func Uint16(x uint16) Value { return Value{typ: TypeUint16, v: x} }

// Int16 returns an int16 value.
func Int16(x int16) Value { return Value{typ: TypeInt16, v: x} }

// Uint32 returns a uint32 value.
func Uint32(x uint32) Value { return Value{typ: TypeUint32, v: x} }

// Int32 returns an int32 value.
func Int32(x int32) Value { return Value{typ: TypeInt32, v: x} }

// Float32 returns a float32 value.
func Float32(x float32) Value { return Value{typ: TypeFloat32, v: x} }

// Bool returns a bool value.
func Bool(x bool) Value { return Value{typ: TypeBool, v: x} }

// String returns a string value.
func String(x string) Value { return Value{typ: TypeString, v: x} }

// Uint64 returns a uint64 value.
func Uint64(x uint64) Value { return Value{typ: TypeUint64, v: x} }

// Int64 returns an int64 value.
func Int64(x int64) Value { return Value{typ: TypeInt64, v: x} }

// Float64 returns a float64 value.
func Float64(x float64) Value { return Value{typ: TypeFloat64, v: x} }

// Array returns an array value holding xs (not copied). The element type
// follows from the Go type: []uint32 is an array of uint32, []string of string.
func Array[T Scalar](xs []T) Value {
	var zero T
	return Value{typ: TypeArray, elem: scalarType(any(zero)), v: xs}
}

func scalarType(x any) ValueType {
	switch x.(type) {
	case uint8:
		return TypeUint8
	case int8:
		return TypeInt8
	case uint16:
		return TypeUint16
	case int16:
		return TypeInt16
	case uint32:
		return TypeUint32
	case int32:
		return TypeInt32
	case float32:
		return TypeFloat32
	case bool:
		return TypeBool
	case string:
		return TypeString
	case uint64:
		return TypeUint64
	case int64:
		return TypeInt64
	case float64:
		return TypeFloat64
	}
	panic(fmt.Sprintf("gguf: %T is not a GGUF scalar", x)) // unreachable: Scalar constrains T
}

// Type is the value's type tag.
func (v Value) Type() ValueType { return v.typ }

// ElemType is the element type of an array value (meaningless otherwise).
func (v Value) ElemType() ValueType { return v.elem }

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.typ == TypeArray }

// Valid reports whether v holds a value.
func (v Value) Valid() bool { return v.v != nil }

// Any returns the Go value: a scalar (uint8 … float64, bool, string) or a
// slice of one of them for arrays.
func (v Value) Any() any { return v.v }

// Len is the element count of an array value, and 1 for a scalar.
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	}
	return 1
}

// Int returns an integer scalar of any width as int64; ok is false for other
// types and for a uint64 above math.MaxInt64.
func (v Value) Int() (n int64, ok bool) {
	switch x := v.v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float32 or float64 scalar as float64.
func (v Value) Float() (f float64, ok bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Str returns a string scalar.
func (v Value) Str() (s string, ok bool) {
	s, ok = v.v.(string)
	return s, ok
}

// BoolValue returns a bool scalar.
func (v Value) BoolValue() (b, ok bool) {
	b, ok = v.v.(bool)
	return b, ok
}

// Strings returns a string array.
func (v Value) Strings() ([]string, bool) {
	s, ok := v.v.([]string)
	return s, ok
}

// Ints returns an integer array of any element width as int64s (a copy).
func (v Value) Ints() ([]int64, bool) {
	switch x := v.v.(type) {
	case []uint8:
		return widen(x), true
	case []int8:
		return widen(x), true
	case []uint16:
		return widen(x), true
	case []int16:
		return widen(x), true
	case []uint32:
		return widen(x), true
	case []int32:
		return widen(x), true
	case []int64:
		return append([]int64(nil), x...), true
	case []uint64:
		out := make([]int64, len(x))
		for i, e := range x {
			if e > math.MaxInt64 {
				return nil, false
			}
			out[i] = int64(e)
		}
		return out, true
	}
	return nil, false
}

func widen[T uint8 | int8 | uint16 | int16 | uint32 | int32](xs []T) []int64 {
	out := make([]int64, len(xs))
	for i, e := range xs {
		out[i] = int64(e)
	}
	return out
}

// Float32s returns a float32 array.
func (v Value) Float32s() ([]float32, bool) {
	f, ok := v.v.([]float32)
	return f, ok
}

// Equal reports whether a and b have the same type and the same value, bit for
// bit for floats (so NaN equals the same NaN and -0 differs from +0).
func (v Value) Equal(o Value) bool {
	if v.typ != o.typ || (v.typ == TypeArray && v.elem != o.elem) {
		return false
	}
	e1, e2 := NewEncoder(nil), NewEncoder(nil)
	e1.Value(v)
	e2.Value(o)
	return string(e1.Bytes()) == string(e2.Bytes())
}

// GoString formats v for error messages and debugging.
func (v Value) GoString() string {
	if v.typ == TypeArray {
		return fmt.Sprintf("array[%s](%d)", v.elem, v.Len())
	}
	return fmt.Sprintf("%s(%v)", v.typ, v.v)
}

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}
