package safetensors

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// tensor is a test tensor: F32 values of the given shape, filled 0, 1, 2 …
// plus an offset so tensors differ.
type tensor struct {
	name  string
	shape []int64
	base  float32
}

// build writes a valid F32 safetensors file holding the tensors.
func build(ts ...tensor) []byte {
	h := &Header{}
	var data []byte
	for _, t := range ts {
		n, _ := readers.NumElements(t.shape)
		begin := int64(len(data))
		for i := range n {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(t.base+float32(i)))
		}
		h.Tensors = append(h.Tensors, Entry{Name: t.name, DType: readers.F32, Shape: t.shape, Begin: begin, End: int64(len(data))})
	}
	return encode(h, data)
}

func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func indexJSON(m map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": m})
	return b
}

func names(s *Source) []string {
	var out []string
	for _, t := range s.Tensors() {
		out = append(out, t.File+":"+t.Name)
	}
	return out
}

// TestOpenOrder: which files a folder contributes and in what order, as
// llama.cpp's index_tensors would visit them.
func TestOpenOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		open  string // relative to the folder; "" = the folder
		want  []string
	}{
		{"single file sorted by name",
			map[string][]byte{"model.safetensors": build(tensor{"z", []int64{1}, 0}, tensor{"a", []int64{2}, 0}, tensor{"m.1", []int64{1}, 0})},
			"", []string{"model.safetensors:a", "model.safetensors:m.1", "model.safetensors:z"}},
		{"shards sorted, names sorted per shard",
			map[string][]byte{
				"model-00002-of-00002.safetensors": build(tensor{"b", []int64{1}, 0}, tensor{"a", []int64{1}, 0}),
				"model-00001-of-00002.safetensors": build(tensor{"z", []int64{1}, 0}, tensor{"y", []int64{1}, 0}),
			},
			"", []string{"model-00001-of-00002.safetensors:y", "model-00001-of-00002.safetensors:z",
				"model-00002-of-00002.safetensors:a", "model-00002-of-00002.safetensors:b"}},
		{"model* files only when present",
			map[string][]byte{"model.safetensors": build(tensor{"w", []int64{1}, 0}), "adapter_model.safetensors": build(tensor{"lora", []int64{1}, 0})},
			"", []string{"model.safetensors:w"}},
		{"any *.safetensors without model*",
			map[string][]byte{"weights-b.safetensors": build(tensor{"b", []int64{1}, 0}), "weights-a.safetensors": build(tensor{"a", []int64{1}, 0}), "notes.txt": []byte("x")},
			"", []string{"weights-a.safetensors:a", "weights-b.safetensors:b"}},
		{"index preferred over glob",
			map[string][]byte{
				"model-a.safetensors":     build(tensor{"x", []int64{1}, 0}),
				"model-b.safetensors":     build(tensor{"y", []int64{1}, 0}),
				"model-stray.safetensors": build(tensor{"stray", []int64{1}, 0}),
				IndexName:                 indexJSON(map[string]string{"y": "model-b.safetensors", "x": "model-a.safetensors"}),
			},
			"", []string{"model-a.safetensors:x", "model-b.safetensors:y"}},
		{"one file of a folder",
			map[string][]byte{"model.safetensors": build(tensor{"w", []int64{1}, 0}), "other.safetensors": build(tensor{"o", []int64{1}, 0})},
			"other.safetensors", []string{"other.safetensors:o"}},
		{"index path",
			map[string][]byte{"s/part.safetensors": build(tensor{"w", []int64{1}, 0}), "s/x.index.json": indexJSON(map[string]string{"w": "part.safetensors"})},
			"s/x.index.json", []string{"part.safetensors:w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			s, err := Open(filepath.Join(dir, tc.open))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := names(s); !slices.Equal(got, tc.want) {
				t.Errorf("tensors %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	one := build(tensor{"w", []int64{2}, 0})
	var many []tensor
	for i := range 8 {
		many = append(many, tensor{fmt.Sprintf("t%d", i), []int64{1}, 0})
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		is    error
		msg   []string
	}{
		{"empty folder", map[string][]byte{"config.json": []byte("{}")}, ErrNoFiles, []string{"no .safetensors file"}},
		{"same tensor in two files", map[string][]byte{"model-1.safetensors": one, "model-2.safetensors": one}, ErrFormat,
			[]string{`tensor "w"`, "model-2.safetensors", "also stored in", "model-1.safetensors"}},
		{"index names a missing shard", map[string][]byte{"model-1.safetensors": one,
			IndexName: indexJSON(map[string]string{"w": "model-1.safetensors", "v": "model-2.safetensors"})},
			ErrIndex, []string{IndexName, "1 shard(s) named by the index are missing: model-2.safetensors"}},
		{"index tensor missing from its shard", map[string][]byte{"model-1.safetensors": one,
			IndexName: indexJSON(map[string]string{"w": "model-1.safetensors", "v": "model-1.safetensors"})},
			ErrIndex, []string{`"v" (in no shard; index says model-1.safetensors)`}},
		{"index tensor in another shard", map[string][]byte{"model-1.safetensors": one, "model-2.safetensors": build(tensor{"v", []int64{1}, 0}),
			IndexName: indexJSON(map[string]string{"w": "model-2.safetensors", "v": "model-2.safetensors", "x": "model-1.safetensors"})},
			ErrIndex, []string{`"w" (in model-1.safetensors; index says model-2.safetensors)`}},
		{"shard tensor missing from the index", map[string][]byte{"model-1.safetensors": build(tensor{"w", []int64{1}, 0}, tensor{"extra", []int64{1}, 0}),
			IndexName: indexJSON(map[string]string{"w": "model-1.safetensors"})},
			ErrIndex, []string{`1 shard tensor(s) are not in the index: "extra" (in model-1.safetensors)`}},
		{"many offenders listed briefly", map[string][]byte{"model-1.safetensors": build(many...),
			IndexName: indexJSON(map[string]string{"t0": "model-1.safetensors"})},
			ErrIndex, []string{"7 shard tensor(s)", `"t1"`, `"t5"`, "… and 2 more"}},
		{"index without weight_map", map[string][]byte{"model-1.safetensors": one, IndexName: []byte(`{"metadata":{}}`)},
			ErrIndex, []string{`no "weight_map"`}},
		{"index not JSON", map[string][]byte{"model-1.safetensors": one, IndexName: []byte(`{"weight_map":`)},
			ErrIndex, []string{"invalid index JSON"}},
		{"index weight_map values not strings", map[string][]byte{"model-1.safetensors": one, IndexName: []byte(`{"weight_map":{"w":1}}`)},
			ErrIndex, []string{"invalid index JSON"}},
		{"index escapes the folder", map[string][]byte{"model-1.safetensors": one,
			IndexName: indexJSON(map[string]string{"w": "../model-1.safetensors"})},
			ErrIndex, []string{`shard name "../model-1.safetensors" is not a file inside the model folder`}},
		{"index as LFS pointer", map[string][]byte{IndexName: []byte("version https://git-lfs.github.com/spec/v1\n")},
			readers.ErrLFSPointer, []string{"git lfs pull"}},
		{"bad shard", map[string][]byte{"model-1.safetensors": one, "model-2.safetensors": one[:len(one)-1]},
			ErrFormat, []string{"model-2.safetensors", `tensor "w"`, "run past the end of the file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			s, err := Open(dir)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("%v does not wrap %v", err, tc.is)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
		})
	}
}

// openBoth opens a file mapped and through ReadAt, for differential tests.
func openBoth(t *testing.T, path string) (mapped, plain *File) {
	t.Helper()
	mapped, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mapped.Close() })
	plain, err = openFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	if !mapped.Mapped() || plain.Mapped() {
		t.Fatalf("mapped %v / %v", mapped.Mapped(), plain.Mapped())
	}
	return mapped, plain
}

// TestReadRows: any row range reads the same values as the whole tensor,
// mapped or not, RawBytes gives the stored bytes, and ReadRows the same
// bytes by row range.
func TestReadRows(t *testing.T) {
	ctx := context.Background()
	mapped, plain := openBoth(t, "testdata/dtypes.safetensors")
	for _, e := range mapped.Header().Tensors {
		t.Run(e.Name, func(t *testing.T) {
			rows, cols := readers.Rows(e.Shape)
			all := make([]float32, rows*cols)
			if err := mapped.ReadFloat32(ctx, e.Name, all, 0, int(rows)); err != nil {
				t.Fatal(err)
			}
			raw, err := mapped.RawBytes(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			rawPlain, err := plain.RawBytes(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(raw)) != e.End-e.Begin || !slices.Equal(raw, rawPlain) {
				t.Fatalf("RawBytes: %d bytes, want %d, equal %v", len(raw), e.End-e.Begin, slices.Equal(raw, rawPlain))
			}
			want := make([]float32, len(all))
			if err := readers.ToFloat32(want, raw, e.DType); err != nil {
				t.Fatal(err)
			}
			same := func(a, b []float32) bool {
				return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
			}
			if !same(all, want) {
				t.Fatal("ReadFloat32 differs from ToFloat32(RawBytes)")
			}
			size := int64(e.DType.Size())
			for _, f := range []*File{mapped, plain} {
				for r0 := int64(0); r0 < rows; r0 += 3 {
					n := min(5, rows-r0)
					got := make([]float32, n*cols)
					if err := f.ReadFloat32(ctx, e.Name, got, int(r0), int(n)); err != nil {
						t.Fatal(err)
					}
					if !same(got, all[r0*cols:(r0+n)*cols]) {
						t.Fatalf("mapped=%v rows [%d,%d) differ", f.Mapped(), r0, r0+n)
					}
					stored := make([]byte, n*cols*size)
					if err := f.ReadRows(ctx, e.Name, stored, int(r0), int(n)); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(stored, raw[r0*cols*size:(r0+n)*cols*size]) {
						t.Fatalf("mapped=%v ReadRows [%d,%d) differs from RawBytes", f.Mapped(), r0, r0+n)
					}
				}
				if err := f.ReadRows(ctx, e.Name, make([]byte, cols*size+1), 0, 1); err == nil && size > 1 {
					t.Error("ReadRows accepts a buffer that is not whole values")
				}
				if err := f.ReadRows(ctx, e.Name, make([]byte, cols*size), int(rows), 1); err == nil {
					t.Error("ReadRows reads past the last row")
				}
			}
		})
	}
}

// TestReadBigTensor crosses the conversion chunk size, mapped and not.
func TestReadBigTensor(t *testing.T) {
	const rows, cols = 3, convertChunk/2 + 5
	dir := writeFiles(t, map[string][]byte{"model.safetensors": build(tensor{"big", []int64{rows, cols}, 1})})
	mapped, plain := openBoth(t, filepath.Join(dir, "model.safetensors"))
	for _, f := range []*File{mapped, plain} {
		got := make([]float32, rows*cols)
		if err := f.ReadFloat32(context.Background(), "big", got, 0, rows); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != 1+float32(i) {
				t.Fatalf("mapped=%v value %d = %g, want %g", f.Mapped(), i, v, 1+float32(i))
			}
		}
	}
}

func TestReadErrors(t *testing.T) {
	s, err := Open("testdata/dtypes.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		tensor      string
		dst         int
		row0, nrows int
		is          error
	}{
		{"unknown tensor", ctx, "nope", 1, 0, 1, readers.ErrNotFound},
		{"row past the end", ctx, "f32.edge", 2, 4, 1, readers.ErrShape},
		{"range past the end", ctx, "f32.edge", 4, 3, 2, readers.ErrShape},
		{"negative row", ctx, "f32.edge", 2, -1, 1, readers.ErrShape},
		{"negative count", ctx, "f32.edge", 0, 0, -1, readers.ErrShape},
		{"short buffer", ctx, "f32.edge", 3, 0, 2, readers.ErrShape},
		{"long buffer", ctx, "scalar", 2, 0, 1, readers.ErrShape},
		{"canceled", canceled, "f16.all", 256, 0, 1, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.ReadFloat32(tc.ctx, tc.tensor, make([]float32, tc.dst), tc.row0, tc.nrows)
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
		})
	}
	if _, err := s.RawBytes("nope"); !errors.Is(err, readers.ErrNotFound) {
		t.Errorf("RawBytes error %v, want ErrNotFound", err)
	}
}

func TestReadAfterClose(t *testing.T) {
	f, err := OpenFile("testdata/dtypes.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.ReadFloat32(context.Background(), "scalar", make([]float32, 1), 0, 1); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read after close: %v, want os.ErrClosed", err)
	}
}

func TestMetadata(t *testing.T) {
	s, err := Open("testdata/torch-bert/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Format() != "safetensors" || s.Root() != "testdata/torch-bert" || len(s.Files()) != 1 {
		t.Fatalf("format %q root %q files %d", s.Format(), s.Root(), len(s.Files()))
	}
	if got := s.Files()[0].Header().Metadata["format"]; got != "pt" {
		t.Errorf(`__metadata__["format"] = %q, want "pt"`, got)
	}
}

// TestConcurrentReads reads every tensor of the sharded stories260K from 8
// goroutines at once (run with -race) and compares with one reader.
func TestConcurrentReads(t *testing.T) {
	s, err := Open("../../testdata/stories260K/source-sharded")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	want := map[string]string{}
	for _, ti := range s.Tensors() {
		if want[ti.Name], err = readers.Checksum(ctx, s, ti); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			tensors := s.Tensors()
			for i := range tensors {
				ti := tensors[(i+g*5)%len(tensors)]
				got, err := readers.Checksum(ctx, s, ti)
				if err == nil && got != want[ti.Name] {
					err = fmt.Errorf("%s: digest %s, want %s", ti.Name, got, want[ti.Name])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
