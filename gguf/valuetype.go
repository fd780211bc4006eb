package gguf

import "fmt"

// ValueType is the type tag of a metadata value (enum gguf_type).
type ValueType uint32

// The thirteen metadata value types, numbered as in gguf.h.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
	valueTypeCount
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// valueTypeSizes holds the encoded size of each fixed-size type (0 for string and array).
var valueTypeSizes = [...]int{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// Valid reports whether t is one of the thirteen defined value types.
func (t ValueType) Valid() bool { return t < valueTypeCount }

// String returns GGUF's lower-case name of t ("uint32", "array" …).
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Size is the encoded size in bytes of a fixed-size type, and 0 for string and array.
func (t ValueType) Size() int {
	if t.Valid() {
		return valueTypeSizes[t]
	}
	return 0
}

// ParseValueType resolves a lower-case GGUF value type name.
func ParseValueType(name string) (ValueType, error) {
	for i, n := range valueTypeNames {
		if n == name {
			return ValueType(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown value type %q", ErrUnsupported, name)
}
