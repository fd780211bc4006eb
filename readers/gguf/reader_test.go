package ggufread

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const testdata = "../../testdata/gguf"

func readTestFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func parseBytes(b []byte, name string) (*File, error) {
	return NewFile(bytes.NewReader(b), int64(len(b)), name)
}

// TestExpectedValues compares what we read from gguf-py's kvtypes files with
// what gguf-py itself read (expected.json): every KV and every tensor.
func TestExpectedValues(t *testing.T) {
	var exp struct {
		KVs []struct {
			Key   string          `json:"key"`
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"kvs"`
		Files map[string]struct {
			Version   uint32 `json:"gguf_version"`
			ByteOrder string `json:"byte_order"`
			Tensors   []struct {
				Name   string            `json:"name"`
				Type   string            `json:"ggml_type"`
				Dims   []uint64          `json:"gguf_dims"`
				Offset int64             `json:"data_offset_in_file"`
				Size   uint64            `json:"n_bytes"`
				Values []json.RawMessage `json:"values"`
			} `json:"tensors"`
		} `json:"files"`
	}
	if err := json.Unmarshal(readTestFile(t, "expected.json"), &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Files) != 3 || len(exp.KVs) == 0 {
		t.Fatalf("expected.json: %d files, %d kvs", len(exp.Files), len(exp.KVs))
	}
	for name, want := range exp.Files {
		t.Run(name, func(t *testing.T) {
			f, err := parseBytes(readTestFile(t, name), name)
			if err != nil {
				t.Fatal(err)
			}
			if f.Version != want.Version || byteOrderName(f.ByteOrder) != want.ByteOrder {
				t.Errorf("version %d %s, want %d %s", f.Version, byteOrderName(f.ByteOrder), want.Version, want.ByteOrder)
			}
			for _, kv := range exp.KVs {
				v, ok := f.KV(kv.Key)
				if !ok {
					t.Errorf("key %q missing", kv.Key)
					continue
				}
				got := strings.ToUpper(v.Type().String())
				if v.IsArray() {
					got = "ARRAY[" + strings.ToUpper(v.ElemType().String()) + "]"
				}
				if got != kv.Type {
					t.Errorf("key %q: type %s, want %s", kv.Key, got, kv.Type)
				}
				if !jsonEqual(t, v, kv.Value) {
					t.Errorf("key %q: value %#v differs from %s", kv.Key, v, kv.Value)
				}
			}
			if len(f.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want.Tensors))
			}
			for i, wt := range want.Tensors {
				ti := f.Tensors[i]
				if ti.Name != wt.Name || ti.Type.String() != wt.Type || !equalDims(ti.Shape, wt.Dims) ||
					f.DataOffset+int64(ti.Offset) != wt.Offset || f.TensorSize(i) != wt.Size {
					t.Errorf("tensor %d: %s %s %v @%d (%d B), want %s %s %v @%d (%d B)", i, ti.Name, ti.Type, ti.Shape,
						f.DataOffset+int64(ti.Offset), f.TensorSize(i), wt.Name, wt.Type, wt.Dims, wt.Offset, wt.Size)
				}
				data, err := f.TensorData(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				if got := rawValues(ti.Type, f.ByteOrder, data); got != nil {
					for j, w := range wt.Values {
						var want any
						d := json.NewDecoder(bytes.NewReader(w))
						d.UseNumber()
						d.Decode(&want)
						if !valueMatches(got[j], want) {
							t.Errorf("tensor %s value %d: %v, want %s", ti.Name, j, got[j], w)
						}
					}
				}
			}
		})
	}
}

func byteOrderName(o binary.ByteOrder) string {
	if o == binary.BigEndian {
		return "BIG"
	}
	return "LITTLE"
}

// rawValues decodes the element types whose bytes are plain numbers.
func rawValues(t gguf.Type, o binary.ByteOrder, b []byte) []any {
	var out []any
	switch t {
	case gguf.F32:
		for i := 0; i < len(b); i += 4 {
			out = append(out, math.Float32frombits(o.Uint32(b[i:])))
		}
	case gguf.F64:
		for i := 0; i < len(b); i += 8 {
			out = append(out, math.Float64frombits(o.Uint64(b[i:])))
		}
	case gguf.I8:
		for _, x := range b {
			out = append(out, int8(x))
		}
	case gguf.I16:
		for i := 0; i < len(b); i += 2 {
			out = append(out, int16(o.Uint16(b[i:])))
		}
	case gguf.I32:
		for i := 0; i < len(b); i += 4 {
			out = append(out, int32(o.Uint32(b[i:])))
		}
	case gguf.I64:
		for i := 0; i < len(b); i += 8 {
			out = append(out, int64(o.Uint64(b[i:])))
		}
	}
	return out
}

func equalDims(a, b []uint64) bool {
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

// jsonEqual compares a value with gguf-py's JSON rendering (integers of 2^53
// and above are strings there).
func jsonEqual(t *testing.T, v gguf.Value, raw json.RawMessage) bool {
	var want any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&want); err != nil {
		t.Fatal(err)
	}
	return valueMatches(v.Any(), want)
}

func valueMatches(got, want any) bool {
	switch w := want.(type) {
	case []any:
		gs := sliceOf(got)
		if gs == nil || len(gs) != len(w) {
			return len(w) == 0 && gs != nil
		}
		for i := range w {
			if !valueMatches(gs[i], w[i]) {
				return false
			}
		}
		return true
	case json.Number:
		f, _ := w.Float64()
		switch g := got.(type) {
		case float32:
			return g == float32(f)
		case float64:
			return g == f
		}
		return scalarString(got) == w.String()
	case string:
		if s, ok := got.(string); ok {
			return s == w
		}
		return scalarString(got) == w
	case bool:
		b, ok := got.(bool)
		return ok && b == w
	}
	return false
}

func sliceOf(x any) []any {
	switch s := x.(type) {
	case []uint8:
		return anys(s)
	case []int8:
		return anys(s)
	case []uint16:
		return anys(s)
	case []int16:
		return anys(s)
	case []uint32:
		return anys(s)
	case []int32:
		return anys(s)
	case []float32:
		return anys(s)
	case []bool:
		return anys(s)
	case []string:
		return anys(s)
	case []uint64:
		return anys(s)
	case []int64:
		return anys(s)
	case []float64:
		return anys(s)
	}
	return nil
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func scalarString(x any) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestRefused checks the real files that break gguf.cpp's rules.
func TestRefused(t *testing.T) {
	cases := []struct {
		file     string
		sentinel error
		msg      string
	}{
		{"test-be-v3.gguf", gguf.ErrFormat, `key "general.architecture" at offset`},
		{"test_model.gguf.gz", gguf.ErrFormat, `tensor "output_norm.weight" at offset 416: data offset 0, expected 512000`},
		{"ollama-test.gguf", gguf.ErrTruncated, "version needs 4 bytes, 2 left"},
		{"fuzz-corpus/bad-version.bin", gguf.ErrUnsupported, "version 1"},
		{"fuzz-corpus/huge-counts.bin", gguf.ErrTooLarge, "tensor count -1"},
		{"fuzz-corpus/kv-arr-huge-n.bin", gguf.ErrTooLarge, "array length 4294967295"},
		{"fuzz-corpus/kv-huge-strlen.bin", gguf.ErrTooLarge, "metadata count 1 cannot fit in the 8 bytes left"},
		{"fuzz-corpus/magic-only.bin", gguf.ErrTruncated, "version"},
		{"fuzz-corpus/trunc-magic.bin", gguf.ErrTruncated, "magic"},
		{"fuzz-corpus/tensor-huge-dims.bin", gguf.ErrFormat, "overflows"},
		{"fuzz-corpus/hdr-suppress-eos.gguf", gguf.ErrTooLarge, "exceeds the"},
		{"fuzz-corpus/hdr-wrap-first-offset.gguf", gguf.ErrFormat, "data offset"},
		{"fuzz-corpus/hdr-zero-first-dim.gguf", gguf.ErrFormat, "data offset 66304, expected 0"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, err := parseBytes(readTestFile(t, c.file), c.file)
			checkErr(t, err, c.sentinel, c.msg)
		})
	}
}

func checkErr(t *testing.T, err, sentinel error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want %v", sentinel)
	}
	var fe *gguf.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %q is not a *gguf.FormatError", err)
	}
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q, want %v containing %q", err, sentinel, msg)
	}
}

// builder assembles small GGUF files for the malformed-input table.
type builder struct {
	e *gguf.Encoder
}

func newBuilder(version uint32, nTensors, nKV uint64) *builder {
	b := &builder{e: gguf.NewEncoder(binary.LittleEndian)}
	b.e.Header(version, nTensors, nKV)
	return b
}

func (b *builder) kv(key string, v gguf.Value) *builder {
	b.e.KV(gguf.KV{Key: key, Value: v})
	return b
}

func (b *builder) tensor(name string, typ gguf.Type, off uint64, dims ...uint64) *builder {
	b.e.TensorInfo(gguf.TensorInfo{Name: name, Shape: dims, Type: typ, Offset: off})
	return b
}

// data pads to 32 and appends n zero bytes.
func (b *builder) data(n int) []byte {
	out := b.e.Bytes()
	pad := (32 - len(out)%32) % 32
	return append(out, make([]byte, pad+n)...)
}

func (b *builder) raw(f func(e *gguf.Encoder)) *builder { f(b.e); return b }

func TestMalformed(t *testing.T) {
	valid := readTestFile(t, "kvtypes-le-v3.gguf")
	f, err := parseBytes(valid, "kvtypes")
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name     string
		file     []byte
		sentinel error
		msg      string
	}
	cases := []tc{
		{"bad magic", append([]byte("GGUG"), valid[4:]...), gguf.ErrFormat, `bad magic "GGUG"`},
		{"version 0", newBuilder(0, 0, 0).data(0), gguf.ErrFormat, "bad version 0"},
		{"version 1", newBuilder(1, 0, 0).data(0), gguf.ErrUnsupported, "version 1 is no longer supported"},
		{"version 4", newBuilder(4, 0, 0).data(0), gguf.ErrUnsupported, "version 4 is newer"},
		{"huge tensor count", newBuilder(3, 1<<40, 0).data(0), gguf.ErrTooLarge, "tensor count 1099511627776"},
		{"negative kv count", newBuilder(3, 0, 1<<63).data(0), gguf.ErrTooLarge, "metadata count -9223372036854775808"},
		{"huge string", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) { e.Uint64(1 << 40) }).data(64), gguf.ErrTooLarge, "key length 1099511627776 exceeds the limit"},
		{"string past end", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) { e.Uint64(100) }).data(8), gguf.ErrTooLarge, "exceeds the"},
		{"huge array", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) {
			e.String("a")
			e.Uint32(uint32(gguf.TypeArray))
			e.Uint32(uint32(gguf.TypeUint32))
			e.Uint64(1 << 29)
		}).data(64), gguf.ErrTooLarge, "array of 536870912 uint32"},
		{"array over the limit", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) {
			e.String("a")
			e.Uint32(uint32(gguf.TypeArray))
			e.Uint32(uint32(gguf.TypeUint8))
			e.Uint64(1<<30 + 1)
		}).data(64), gguf.ErrTooLarge, "exceeds the limit of 1073741824"},
		{"array of arrays", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) {
			e.String("a")
			e.Uint32(uint32(gguf.TypeArray))
			e.Uint32(uint32(gguf.TypeArray))
			e.Uint64(0)
		}).data(0), gguf.ErrFormat, "arrays of arrays"},
		{"value type 13", newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) { e.String("a"); e.Uint32(13) }).data(8), gguf.ErrFormat, "invalid value type 13"},
		{"empty key", newBuilder(3, 0, 1).kv("", gguf.Uint8(1)).data(0), gguf.ErrFormat, "empty key"},
		{"duplicate key", newBuilder(3, 0, 2).kv("a", gguf.Uint8(1)).kv("a", gguf.Uint8(2)).data(0), gguf.ErrFormat, `key "a" at offset 38: duplicate key`},
		{"alignment int32", newBuilder(3, 0, 1).kv(gguf.KeyGeneralAlignment, gguf.Int32(32)).data(0), gguf.ErrFormat, "must be uint32, is int32"},
		{"alignment 0", newBuilder(3, 0, 1).kv(gguf.KeyGeneralAlignment, gguf.Uint32(0)).data(0), gguf.ErrFormat, "alignment 0 is not a power of 2"},
		{"alignment 48", newBuilder(3, 0, 1).kv(gguf.KeyGeneralAlignment, gguf.Uint32(48)).data(0), gguf.ErrFormat, "alignment 48 is not a power of 2"},
		{"duplicate tensor", newBuilder(3, 2, 0).tensor("t", gguf.F32, 0, 8).tensor("t", gguf.F32, 32, 8).data(64), gguf.ErrFormat, `tensor "t" at offset`},
		{"64-byte name", newBuilder(3, 1, 0).tensor(strings.Repeat("n", 64), gguf.F32, 0, 8).data(32), gguf.ErrFormat, "name is 64 bytes, the limit is 63"},
		{"5 dims", newBuilder(3, 1, 0).tensor("t", gguf.F32, 0, 1, 1, 1, 1, 1).data(32), gguf.ErrFormat, "5 dimensions, the limit is 4"},
		{"negative dim", newBuilder(3, 1, 0).tensor("t", gguf.F32, 0, 1<<63).data(32), gguf.ErrFormat, "dimension 0 is negative"},
		{"element overflow", newBuilder(3, 1, 0).tensor("t", gguf.F32, 0, 1<<32, 1<<32).data(32), gguf.ErrFormat, "overflows the element count"},
		{"byte size overflow", newBuilder(3, 1, 0).tensor("t", gguf.F64, 0, 1<<62).data(32), gguf.ErrFormat, "overflows the byte size"},
		{"removed type 4", newBuilder(3, 1, 0).tensor("t", gguf.Q4_2, 0, 32).data(32), gguf.ErrUnsupported, "type 4 (Q4_2) was removed"},
		{"removed type 31", newBuilder(3, 1, 0).tensor("t", gguf.Q4_0_4_4, 0, 32).data(32), gguf.ErrUnsupported, "type 31 (Q4_0_4_4) was removed"},
		{"removed type 36", newBuilder(3, 1, 0).tensor("t", gguf.IQ4_NL44, 0, 32).data(32), gguf.ErrUnsupported, "was removed"},
		{"unknown type 43", newBuilder(3, 1, 0).tensor("t", gguf.Type(43), 0, 32).data(32), gguf.ErrFormat, "unknown ggml type 43"},
		{"row not whole blocks", newBuilder(3, 1, 0).tensor("t", gguf.Q4_K, 0, 128, 2).data(144), gguf.ErrFormat, "row length 128 is not a multiple of Q4_K's block size 256"},
		{"misaligned offset", newBuilder(3, 2, 0).tensor("a", gguf.F32, 0, 3).tensor("b", gguf.F32, 12, 3).data(64), gguf.ErrFormat, `tensor "b" at offset 108: data offset 12, expected 32`},
		{"overlapping offsets", newBuilder(3, 2, 0).tensor("a", gguf.F32, 0, 8).tensor("b", gguf.F32, 0, 8).data(64), gguf.ErrFormat, "data offset 0, expected 32"},
		{"gap between tensors", newBuilder(3, 2, 0).tensor("a", gguf.F32, 0, 8).tensor("b", gguf.F32, 64, 8).data(128), gguf.ErrFormat, "data offset 64, expected 32"},
		{"data out of file", newBuilder(3, 1, 0).tensor("a", gguf.F32, 0, 64).data(255), gguf.ErrTruncated, "ends at"},
		{"data section out of file", newBuilder(3, 1, 0).tensor("a", gguf.F32, 0, 0).raw(func(*gguf.Encoder) {}).e.Bytes(), gguf.ErrTruncated, "aligned data section"},
	}
	// Truncation at every section boundary and inside each section.
	kvEnd := int(f.HeaderSize) - 1
	for _, n := range []int{0, 2, 4, 6, 8, 15, 16, 23, 24, 30, 60, kvEnd / 2, kvEnd, int(f.DataOffset) - 1, int(f.DataOffset) + 1, len(valid) - 17} {
		if n >= len(valid) || n < 0 {
			continue
		}
		cases = append(cases, tc{"truncated at " + itoa(n), valid[:n], nil, ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseBytes(c.file, "bad.gguf")
			if c.sentinel == nil {
				if !errors.Is(err, gguf.ErrTruncated) && !errors.Is(err, gguf.ErrTooLarge) {
					t.Fatalf("error %v, want a truncation", err)
				}
				return
			}
			checkErr(t, err, c.sentinel, c.msg)
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestMaxNameAccepted: 63 bytes is the longest name gguf.cpp accepts.
func TestMaxNameAccepted(t *testing.T) {
	b := newBuilder(3, 1, 0).tensor(strings.Repeat("n", 63), gguf.F32, 0, 8).data(32)
	if _, err := parseBytes(b, "ok"); err != nil {
		t.Fatal(err)
	}
}

// TestBoolNonZero: gguf.cpp reads any non-zero byte as true.
func TestBoolNonZero(t *testing.T) {
	b := newBuilder(3, 0, 1).raw(func(e *gguf.Encoder) { e.String("b"); e.Uint32(uint32(gguf.TypeBool)); e.Raw([]byte{7}) }).data(0)
	f, err := parseBytes(b, "bool")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.KV("b"); v.Any() != true {
		t.Fatalf("bool 7 read as %v", v.Any())
	}
}

func TestOpenMapsTensorData(t *testing.T) {
	f, err := Open(filepath.Join(testdata, "stories260K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.mapped == nil {
		t.Skip("no memory map on this platform")
	}
	ti, ok := f.Tensor("output_norm.weight")
	if !ok || ti.Type != gguf.F32 {
		t.Fatalf("output_norm.weight: %v %v", ti, ok)
	}
	data, err := f.TensorData(ti.Name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.TensorReader(ti.Name)
	if err != nil {
		t.Fatal(err)
	}
	copyData, _ := io.ReadAll(r)
	if !bytes.Equal(data, copyData) || len(data) != 64*4 {
		t.Fatal("mapped and read bytes differ")
	}
	x := math.Float32frombits(binary.LittleEndian.Uint32(data))
	if x == 0 || math.IsNaN(float64(x)) {
		t.Fatalf("norm weight %v", x)
	}
}
