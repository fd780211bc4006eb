package writer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// interopKVs covers every value type, empty and long arrays, UTF-8 and empty
// strings, and extreme values.
func interopKVs() []gguf.KV {
	long := make([]int32, 5000)
	for i := range long {
		long[i] = int32(i*7919) - 1<<20
	}
	words := make([]string, 1000)
	for i := range words {
		words[i] = strings.Repeat("▁x", i%7)
	}
	return []gguf.KV{
		{Key: gguf.KeyGeneralArchitecture, Value: gguf.String("interop")},
		{Key: gguf.KeyGeneralAlignment, Value: gguf.Uint32(64)},
		{Key: "t.u8", Value: gguf.Uint8(255)},
		{Key: "t.i8", Value: gguf.Int8(-128)},
		{Key: "t.u16", Value: gguf.Uint16(65535)},
		{Key: "t.i16", Value: gguf.Int16(-32768)},
		{Key: "t.u32", Value: gguf.Uint32(4294967295)},
		{Key: "t.i32", Value: gguf.Int32(-2147483648)},
		{Key: "t.f32", Value: gguf.Float32(-1.5e-38)},
		{Key: "t.bool", Value: gguf.Bool(true)},
		{Key: "t.str", Value: gguf.String("héllo 🦙 \x00 nul")},
		{Key: "t.str_empty", Value: gguf.String("")},
		{Key: "t.u64", Value: gguf.Uint64(math.MaxUint64)},
		{Key: "t.i64", Value: gguf.Int64(math.MinInt64)},
		{Key: "t.f64", Value: gguf.Float64(math.SmallestNonzeroFloat64)},
		{Key: "t.arr_empty_i32", Value: gguf.Array([]int32{})},
		{Key: "t.arr_empty_str", Value: gguf.Array([]string{})},
		{Key: "t.arr_u8", Value: gguf.Array([]uint8{0, 1, 255})},
		{Key: "t.arr_i8", Value: gguf.Array([]int8{-128, 0, 127})},
		{Key: "t.arr_u16", Value: gguf.Array([]uint16{0, 65535})},
		{Key: "t.arr_i16", Value: gguf.Array([]int16{-32768, 32767})},
		{Key: "t.arr_u32", Value: gguf.Array([]uint32{0, 4294967295})},
		{Key: "t.arr_i32_long", Value: gguf.Array(long)},
		{Key: "t.arr_f32", Value: gguf.Array([]float32{0.5, -1.25, float32(math.Inf(1))})},
		{Key: "t.arr_bool", Value: gguf.Array([]bool{true, false, true})},
		{Key: "t.arr_str_long", Value: gguf.Array(words)},
		{Key: "t.arr_u64", Value: gguf.Array([]uint64{0, math.MaxUint64})},
		{Key: "t.arr_i64", Value: gguf.Array([]int64{math.MinInt64, math.MaxInt64})},
		{Key: "t.arr_f64", Value: gguf.Array([]float64{1e-300, -2.5})},
	}
}

type interopTensor struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Shape []uint64 `json:"shape"`
}

var interopTensors = []interopTensor{
	{"f32", "F32", []uint64{5, 3}},
	{"f16", "F16", []uint64{7}},
	{"bf16", "BF16", []uint64{3, 2}},
	{"q8_0", "Q8_0", []uint64{64, 2}},
	{"q4_k", "Q4_K", []uint64{256, 1, 2}},
	{"i32", "I32", []uint64{3, 1, 1, 2}},
	{"mxfp4", "MXFP4", []uint64{32}},
}

// writeInterop writes the interop file and returns its expected description.
func writeInterop(t *testing.T, path string) map[string]any {
	w, err := writer.Create(context.Background(), path, writer.Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range interopKVs() {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, it := range interopTensors {
		typ, err := gguf.ParseType(it.Type)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(it.Name, typ, it.Shape); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var tensors []map[string]any
	for i, ti := range w.Tensors() {
		size, _ := ti.Size()
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(i*31 + j*7) // arbitrary but fixed bytes
		}
		if ti.Type == gguf.F16 || ti.Type == gguf.BF16 || ti.Type == gguf.F32 {
			for j := range data {
				data[j] &= 0x3f // keep floats finite
			}
		}
		if err := w.WriteTensor(ti.Name, data); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		tensors = append(tensors, map[string]any{
			"name": ti.Name, "type": ti.Type.String(), "shape": ti.Shape,
			"offset": ti.Offset, "sha256": hex.EncodeToString(h[:]),
		})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var kvs []map[string]any
	for _, kv := range interopKVs() {
		e := map[string]any{"key": kv.Key, "type": kv.Value.Type().String()}
		if kv.Value.IsArray() {
			e["element_type"] = kv.Value.ElemType().String()
		}
		e["value"] = jsonSafe(kv.Value.Any())
		kvs = append(kvs, e)
	}
	return map[string]any{"alignment": 64, "kvs": kvs, "tensors": tensors}
}

// jsonSafe renders values JSON cannot hold exactly (64-bit integers, non-finite
// floats, byte slices) as strings or lists the checker understands.
func jsonSafe(x any) any {
	switch v := x.(type) {
	case uint64, int64:
		b, _ := json.Marshal(v)
		return string(b)
	case float32:
		return floatRepr(float64(v), 32)
	case float64:
		return floatRepr(v, 64)
	case []uint8:
		out := make([]int, len(v))
		for i, e := range v {
			out[i] = int(e)
		}
		return out
	case []float32:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = floatRepr(float64(e), 32)
		}
		return out
	case []float64:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = floatRepr(e, 64)
		}
		return out
	case []uint64:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = jsonSafe(e).(string)
		}
		return out
	case []int64:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = jsonSafe(e).(string)
		}
		return out
	}
	return x
}

// floatRepr is the hex bit pattern, so the comparison is exact.
func floatRepr(f float64, bits int) string {
	if bits == 32 {
		return "f32:" + hex.EncodeToString(binaryBE32(math.Float32bits(float32(f))))
	}
	return "f64:" + hex.EncodeToString(binaryBE64(math.Float64bits(f)))
}

func binaryBE32(x uint32) []byte { return []byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)} }
func binaryBE64(x uint64) []byte {
	return append(binaryBE32(uint32(x>>32)), binaryBE32(uint32(x))...)
}

// TestInteropGolden writes the interop file and checks it equals the
// committed testdata/interop.gguf, which .ci/run reads back with gguf-py
// (testdata/check_interop.py) against testdata/interop.json. With -update
// both files are rewritten.
func TestInteropGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "interop.gguf")
	desc := writeInterop(t, path)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	descJSON, _ := json.MarshalIndent(desc, "", " ")
	if *update {
		os.WriteFile("testdata/interop.gguf", got, 0o644)
		os.WriteFile("testdata/interop.json", append(descJSON, '\n'), 0o644)
	}
	want, err := os.ReadFile("testdata/interop.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("writer output differs from testdata/interop.gguf (run with -update if the change is intended)")
	}
	wantDesc, _ := os.ReadFile("testdata/interop.json")
	if string(bytes.TrimSpace(wantDesc)) != string(descJSON) {
		t.Fatal("description differs from testdata/interop.json")
	}
	// Our own reader agrees too.
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, kv := range interopKVs() {
		if f.KVs[i].Key != kv.Key || !f.KVs[i].Value.Equal(kv.Value) {
			t.Errorf("KV %d (%s) reads back differently", i, kv.Key)
		}
	}
}
