package load

import (
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// kvList collects KVs with the semantics of gguf-py's GGUFWriter
// (gguf_writer.py L277-331): a key set again keeps its first position and
// takes the new value (gguf.KVList); add_string skips "" and add_array
// skips empty arrays (nothing is written, an existing key is left alone).
type kvList struct{ gguf.KVList }

func newKVList() *kvList { return &kvList{} }

// list returns a copy of the KVs in order.
func (l *kvList) list() []gguf.KV { return append([]gguf.KV(nil), l.KVs()...) }

// str is add_string.
func (l *kvList) str(key, s string) {
	if s != "" {
		l.Set(key, gguf.String(s))
	}
}

// boolean is add_bool.
func (l *kvList) boolean(key string, b bool) { l.Set(key, gguf.Bool(b)) }

// u32 is add_uint32; Python's struct.pack("I") refuses values outside
// [0, 2^32).
func (l *kvList) u32(key string, v int64) error {
	if v < 0 || v > math.MaxUint32 {
		return fmt.Errorf("%w: %s = %d does not fit a uint32", ErrFormat, key, v)
	}
	l.Set(key, gguf.Uint32(uint32(v)))
	return nil
}

// array is add_array. gguf-py picks the element type from the Python
// values: str → STRING, float → FLOAT32, int (and IntEnum token types) →
// INT32, bytes → UINT8; the Go slice type says the same.
func array[T gguf.Scalar](l *kvList, key string, xs []T) {
	if len(xs) > 0 {
		l.Set(key, gguf.Array(xs))
	}
}
