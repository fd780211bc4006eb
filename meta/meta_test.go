package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

func open(t *testing.T, path string) *ggufread.File {
	t.Helper()
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestParseKV checks the typed and untyped KEY=VALUE forms.
func TestParseKV(t *testing.T) {
	in := open(t, "../testdata/gguf/kvtypes-le-v3.gguf")
	tests := []struct {
		spec string
		want gguf.Value
		err  bool
	}{
		{"new.key=text", gguf.String("text"), false},
		{"n:uint8=255", gguf.Uint8(255), false},
		{"n:uint8=256", gguf.Value{}, true},
		{"n:int16=-7", gguf.Int16(-7), false},
		{"n:uint64=18446744073709551615", gguf.Uint64(1<<64 - 1), false},
		{"n:float32=0.1", gguf.Float32(0.1), false},
		{"n:float64=1e300", gguf.Float64(1e300), false},
		{"n:bool=true", gguf.Bool(true), false},
		{"n:bool=yes", gguf.Value{}, true},
		{"n:string=a=b", gguf.String("a=b"), false},
		{"n:array[int32]=[1,-2]", gguf.Array([]int32{1, -2}), false},
		{`n:array[string]=["a,b","c"]`, gguf.Array([]string{"a,b", "c"}), false},
		{"n:array[bool]=[true,false]", gguf.Array([]bool{true, false}), false},
		{"n:array[uint8]=[1,300]", gguf.Value{}, true},
		{"n:array[array]=[]", gguf.Value{}, true},
		{"n:array[int32]=1,2", gguf.Value{}, true},
		{"n:float16=1", gguf.Value{}, true},
		{"=1", gguf.Value{}, true},
		{"novalue", gguf.Value{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			kv, err := ParseKV(in, tc.spec)
			if tc.err {
				if !errors.Is(err, ErrEdit) {
					t.Fatalf("got %v, %v; want an ErrEdit", kv, err)
				}
				return
			}
			if err != nil || !kv.Value.Equal(tc.want) {
				t.Fatalf("got %#v, %v; want %#v", kv.Value, err, tc.want)
			}
		})
	}
	// An existing key keeps its type.
	for _, kv := range in.KVs {
		if kv.Value.Type() == gguf.TypeUint32 {
			got, err := ParseKV(in, kv.Key+"=7")
			if err != nil || !got.Value.Equal(gguf.Uint32(7)) {
				t.Errorf("%s=7: %#v, %v", kv.Key, got.Value, err)
			}
			break
		}
	}
}

// TestPlanInPlace checks when an edit can be written over the header.
func TestPlanInPlace(t *testing.T) {
	in := open(t, "../testdata/gguf/stories260K-Q8_0.gguf")
	tests := []struct {
		name    string
		edits   Edits
		inPlace bool
	}{
		{"nothing", Edits{}, true},
		{"same-size number", Edits{Set: []gguf.KV{{Key: "llama.context_length", Value: gguf.Uint32(64)}}}, true},
		{"4 bytes more, within the padding", Edits{Set: []gguf.KV{{Key: "llama.context_length", Value: gguf.Uint64(64)}}}, true},
		{"a longer string", Edits{Set: []gguf.KV{{Key: gguf.KeyGeneralName, Value: gguf.String("a name well beyond the padding of the header")}}}, false},
		{"new key", Edits{Set: []gguf.KV{{Key: "x", Value: gguf.Uint8(1)}}}, false},
		{"dropped tensor", Edits{Drop: []string{"output_norm.weight"}}, false},
		{"alignment", Edits{Alignment: 64}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Plan(in, tc.edits)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.InPlace(in); got != tc.inPlace {
				t.Errorf("InPlace = %v, want %v", got, tc.inPlace)
			}
		})
	}
}

// FuzzParseKV checks ParseKV never panics and that what it accepts encodes
// and decodes back to the same pair.
func FuzzParseKV(f *testing.F) {
	in, err := ggufread.Open("../testdata/gguf/kvtypes-le-v3.gguf")
	if err != nil {
		f.Fatal(err)
	}
	defer in.Close()
	for _, s := range []string{"a=b", "n:uint8=7", "n:float32=1e-3", "n:array[int64]=[1,2]", `n:array[string]=["x"]`,
		"n:array[bool]=[]", "general.name=x", "n:bool=false", "n:array[float64]=[1e308,-0]"} {
		f.Add(s)
	}
	for _, kv := range in.KVs {
		f.Add(kv.Key + "=1")
	}
	f.Fuzz(func(t *testing.T, spec string) {
		kv, err := ParseKV(in, spec)
		if err != nil {
			if !errors.Is(err, ErrEdit) {
				t.Fatalf("%q: %v is no ErrEdit", spec, err)
			}
			return
		}
		e := gguf.NewEncoder(binary.LittleEndian)
		e.KV(kv)
		got, err := gguf.NewDecoder(bytes.NewReader(e.Bytes()), binary.LittleEndian, 0, int64(e.Len())).KV()
		if err != nil || got.Key != kv.Key || !got.Value.Equal(kv.Value) {
			t.Fatalf("%q: %#v read back as %#v, %v", spec, kv, got, err)
		}
	})
}
