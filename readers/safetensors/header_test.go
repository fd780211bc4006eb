package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// file assembles a safetensors file from a raw header text and data bytes.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// encode writes a valid file holding the entries and data of h: the header
// is re-serialised (entries in data order, space-padded to 8 bytes like the
// reference writer) and the data copied.
func encode(h *Header, data []byte) []byte {
	m := map[string]any{}
	if h.Metadata != nil {
		m["__metadata__"] = h.Metadata
	}
	for _, e := range h.Tensors {
		m[e.Name] = map[string]any{"dtype": e.DType, "shape": e.Shape, "data_offsets": []int64{e.Begin, e.End}}
	}
	js, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	js = append(js, bytes.Repeat([]byte(" "), (8-len(js)%8)%8)...)
	return file(string(js), data)
}

func TestReadHeaderValid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    []byte
		tensors []string // in data order
		meta    map[string]string
	}{
		{"empty object", file("{}", nil), nil, nil},
		{"padded", file(`{}      `, nil), nil, nil},
		{"leading whitespace", file(` {"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}), []string{"a"}, nil},
		{"metadata only", file(`{"__metadata__":{"format":"pt"}}`, nil), nil, map[string]string{"format": "pt"}},
		{"sorted by offsets", file(`{"b":{"dtype":"F32","shape":[],"data_offsets":[4,8]},"a":{"dtype":"I16","shape":[1,2],"data_offsets":[0,4]}}`, make([]byte, 8)), []string{"a", "b"}, nil},
		{"zero-size tensors", file(`{"z":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{9}), []string{"z", "a"}, nil},
		{"extra fields ignored", file(`{"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1],"x":1}}`, []byte{1}), []string{"a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ReadHeader(bytes.NewReader(tc.file), int64(len(tc.file)), "t.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range h.Tensors {
				names = append(names, e.Name)
			}
			if !slices.Equal(names, tc.tensors) {
				t.Errorf("tensors %q, want %q", names, tc.tensors)
			}
			if !maps.Equal(h.Metadata, tc.meta) {
				t.Errorf("metadata %v, want %v", h.Metadata, tc.meta)
			}
		})
	}
}

// TestReadHeaderMalformed: every malformed header is an *Error naming the
// file, wrapping the right sentinel, with a message that says what is
// wrong and names the tensor or the byte offset.
func TestReadHeaderMalformed(t *testing.T) {
	f32x2 := make([]byte, 8)
	lenOnly := func(n uint64, rest string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
	}
	for _, tc := range []struct {
		name   string
		file   []byte
		is     error
		tensor string
		offset int64 // -2: do not check
		msg    string
	}{
		{"empty file", nil, ErrFormat, "", 0, "shorter than the 8-byte"},
		{"truncated length", []byte{1, 0, 0}, ErrFormat, "", 0, "shorter than the 8-byte"},
		{"header over 100MB", lenOnly(100_000_001, "{}"), ErrHeaderTooLarge, "", 0, "exceeds the 100000000-byte limit"},
		{"header length 2^64-1", lenOnly(^uint64(0), "{}"), ErrHeaderTooLarge, "", 0, "exceeds"},
		{"lying length", lenOnly(50, "{}"), ErrFormat, "", 0, "runs past the end of the 10-byte file"},
		{"not JSON", file("hello", nil), ErrFormat, "", -2, "not valid JSON"},
		{"JSON array", file("[1,2]", nil), ErrFormat, "", 8, "not a JSON object"},
		{"JSON string", file(`"x"`, nil), ErrFormat, "", 8, "not a JSON object"},
		{"invalid UTF-8", file("{\"a\xff\":1}", nil), ErrFormat, "", 11, "not valid UTF-8"},
		{"truncated JSON", file(`{"a":{"dtype":"F32"`, nil), ErrFormat, "", -2, "JSON"},
		{"trailing garbage", file(`{} x`, nil), ErrFormat, "", 11, "trailing bytes"},
		{"two objects", file(`{}{}`, nil), ErrFormat, "", 10, "trailing bytes"},
		{"unknown dtype", file(`{"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, []byte{0}), ErrFormat, "w", 9, `unknown dtype "F4"`},
		{"torch dtype name", file(`{"w":{"dtype":"float32","shape":[1],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `unknown dtype "float32"`},
		{"missing dtype", file(`{"w":{"shape":[1],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `missing "dtype"`},
		{"missing shape", file(`{"w":{"dtype":"F32","data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `missing "shape"`},
		{"missing offsets", file(`{"w":{"dtype":"F32","shape":[1]}}`, f32x2[:4]), ErrFormat, "w", -2, `missing "data_offsets"`},
		{"null shape", file(`{"w":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `missing "shape"`},
		{"negative dim", file(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, "invalid entry"},
		{"fractional dim", file(`{"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, "invalid entry"},
		{"entry not an object", file(`{"w":[1]}`, nil), ErrFormat, "w", -2, "invalid entry"},
		{"three offsets", file(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, f32x2), ErrFormat, "w", -2, "data_offsets has 3 numbers"},
		{"end before begin", file(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, f32x2[:4]), ErrFormat, "w", -2, "end before they begin"},
		{"shape and length disagree", file(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, f32x2), ErrFormat, "w", -2, "dtype F32 × shape [3] is 3 elements of 4 bytes but data_offsets [0, 8] span 8 bytes"},
		{"shape overflow", file(`{"w":{"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]}}`, nil), ErrFormat, "w", -2, "overflows"},
		{"huge offsets", file(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}}`, nil), ErrFormat, "w", -2, "out of range"},
		{"field names are case-sensitive", file(`{"w":{"DTYPE":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `missing "dtype"`},
		{"repeated field", file(`{"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2[:4]), ErrFormat, "w", -2, `duplicate field "dtype"`},
		{"element count × size overflows", file(`{"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}`, nil), ErrFormat, "w", -2, "4611686018427387904 elements of 8 bytes"},
		{"duplicate name", file(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2), ErrFormat, "w", -2, "duplicate name"},
		{"metadata not strings", file(`{"__metadata__":{"n":1}}`, nil), ErrFormat, "", 9, "__metadata__ must map strings to strings"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, f32x2[:6]),
			ErrFormat, "b", -2, `overlap tensor "a", which ends at 4`},
		{"same offsets twice", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2[:4]),
			ErrFormat, "b", -2, "overlap"},
		{"gap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[1],"data_offsets":[6,7]}}`, f32x2[:7]),
			ErrFormat, "b", -2, "2-byte gap"},
		{"first tensor not at 0", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2), ErrFormat, "a", -2, "4-byte gap"},
		{"offsets outside the file", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32x2[:5]), ErrFormat, "a", -2, "run past the end of the file (5 data bytes"},
		{"trailing data", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2), ErrFormat, "", -2, "4 bytes after the last tensor's data"},
		{"data but no tensors", file(`{}`, []byte{1}), ErrFormat, "", 10, "1 bytes after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHeader(bytes.NewReader(tc.file), int64(len(tc.file)), "bad.safetensors")
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not an *Error", err)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("%v does not wrap %v", err, tc.is)
			}
			if e.File != "bad.safetensors" || e.Tensor != tc.tensor {
				t.Errorf("file %q tensor %q, want bad.safetensors and %q", e.File, e.Tensor, tc.tensor)
			}
			if tc.offset != -2 && e.Offset != tc.offset {
				t.Errorf("offset %d, want %d", e.Offset, tc.offset)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			if tc.tensor != "" && !strings.Contains(err.Error(), `tensor "`+tc.tensor+`"`) {
				t.Errorf("error %q does not name tensor %q", err, tc.tensor)
			}
		})
	}
}

// TestHeaderLengthAllocation: a header length up to the limit, declared in
// a tiny file, is refused before anything that size is allocated.
func TestHeaderLengthAllocation(t *testing.T) {
	b := binary.LittleEndian.AppendUint64(nil, MaxHeaderSize)
	b = append(b, "{}"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "tiny")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("error %v, want ErrFormat", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("allocated %d bytes for a %d-byte file", d, len(b))
	}
}

// TestLFSPointer: a Git LFS pointer in place of a weights file says to
// run git lfs pull.
func TestLFSPointer(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	ptr := "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	if err := os.WriteFile(p, []byte(ptr), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if !errors.Is(err, readers.ErrLFSPointer) || !strings.Contains(err.Error(), "git lfs pull") || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v, want an LFS-pointer error naming %s", err, p)
	}
}

// shrink keeps the small tensors of a valid file (the fuzzer slows to a
// crawl on inputs of hundreds of KB) and re-encodes them contiguously.
func shrink(f *testing.F, b []byte) []byte {
	h, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "seed")
	if err != nil {
		f.Fatal(err)
	}
	var kept []Entry
	var data []byte
	for _, e := range h.Tensors {
		if e.End-e.Begin > 512 {
			continue
		}
		data = append(data, b[h.DataStart()+e.Begin:h.DataStart()+e.End]...)
		e.Begin, e.End = int64(len(data))-(e.End-e.Begin), int64(len(data))
		kept = append(kept, e)
	}
	h.Tensors = kept
	return encode(h, data)
}

// FuzzHeader parses arbitrary bytes as a safetensors file. Whatever parses
// must tile its data exactly, survive a re-encode → parse round trip with
// the same entries and metadata, and convert every tensor without error.
func FuzzHeader(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.safetensors")
	more, _ := filepath.Glob("testdata/*/*.safetensors")
	for _, p := range append(seeds, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(shrink(f, b))
	}
	f.Add(file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, make([]byte, 6)))
	f.Add(file(`{"__metadata__":{"k":"v"},"x":{"dtype":"BF16","shape":[2,1],"data_offsets":[0,4]}}  `, []byte{1, 2, 3, 4}))
	f.Add(file(`{"s":{"dtype":"F8_E4M3","shape":[],"data_offsets":[0,1]}}`, []byte{0x7f}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !(errors.Is(err, ErrFormat) || errors.Is(err, ErrHeaderTooLarge)) {
				t.Fatalf("error %v is not a typed format error", err)
			}
			return
		}
		data := b[h.DataStart():]
		var end int64
		for _, e := range h.Tensors {
			if e.Begin != end {
				t.Fatalf("tensor %q begins at %d, previous ends at %d", e.Name, e.Begin, end)
			}
			end = e.End
		}
		if end != int64(len(data)) {
			t.Fatalf("tensors end at %d of %d data bytes", end, len(data))
		}
		re := encode(h, data)
		h2, err := ReadHeader(bytes.NewReader(re), int64(len(re)), "re-encoded")
		if err != nil {
			t.Fatalf("re-encoded header: %v", err)
		}
		if !maps.Equal(h.Metadata, h2.Metadata) || !slices.EqualFunc(h.Tensors, h2.Tensors, func(a, b Entry) bool {
			return a.Name == b.Name && a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && a.Begin == b.Begin && a.End == b.End
		}) {
			t.Fatalf("round trip changed the header:\n%+v\n%+v", h, h2)
		}
		file, err := NewFile(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Tensors {
			rows, cols := readers.Rows(e.Shape)
			if rows*cols > 1<<20 {
				continue
			}
			dst := make([]float32, rows*cols)
			if err := file.ReadFloat32(t.Context(), e.Name, dst, 0, int(rows)); err != nil {
				t.Fatalf("tensor %q: %v", e.Name, err)
			}
		}
	})
}
