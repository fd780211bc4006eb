package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// runApp runs "ggufkit ARGS" and returns stdout, stderr and the exit status.
func runApp(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ggufkit"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func sha256File(t *testing.T, path string) (string, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMetaGolden applies the edits of testdata/metaedit/expected.json and
// compares each output with the sha256 of what gguf-py's
// gguf_new_metadata.py (a new file) or gguf_set_metadata.py (in place) wrote
// for the same edits; gguf-py's reading of the edited keys is recorded there
// too.
func TestMetaGolden(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/metaedit/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name    string
		Input   string
		Args    []string
		InPlace bool `json:"in_place"`
		Size    int64
		SHA256  string
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"meta"}
			for _, a := range tc.Args {
				if strings.HasPrefix(a, "testdata/") {
					a = "../../" + a
				}
				args = append(args, a)
			}
			in, out := "../../"+tc.Input, filepath.Join(dir, "out.gguf")
			if tc.InPlace {
				copyFile(t, in, out)
				args = append(args, out)
			} else {
				args = append(args, in, out)
			}
			stdout, stderr, code := runApp(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s%s", code, stdout, stderr)
			}
			if tc.InPlace != strings.HasPrefix(stdout, "edited in place") {
				t.Errorf("in place %v, output %q", tc.InPlace, stdout)
			}
			if sum, n := sha256File(t, out); sum != tc.SHA256 || n != tc.Size {
				t.Errorf("output %s (%d bytes); gguf-py wrote %s (%d bytes)", sum, n, tc.SHA256, tc.Size)
			}
		})
	}
}

// TestMetaRewrite covers the edits gguf-py's scripts cannot make and the
// in-place edit that has to become a rewrite: each result is read back.
func TestMetaRewrite(t *testing.T) {
	const src = "../../testdata/gguf/stories260K-Q8_0.gguf"
	tests := []struct {
		name    string
		args    []string
		inPlace bool
		check   func(t *testing.T, f *ggufread.File)
	}{
		{"string grows", []string{"--general-name", "a much longer name than the one it had before"}, false, func(t *testing.T, f *ggufread.File) {
			if v, _ := f.KV(gguf.KeyGeneralName); v.Any() != "a much longer name than the one it had before" {
				t.Errorf("general.name = %v", v.Any())
			}
		}},
		{"typed array", []string{"--set", "x.ids:array[int32]=[1,-2,3]", "--set", `x.names:array[string]=["a","b"]`, "--set", "x.f:float64=0.5"}, false, func(t *testing.T, f *ggufread.File) {
			if v, _ := f.KV("x.ids"); v.ElemType() != gguf.TypeInt32 || v.Len() != 3 {
				t.Errorf("x.ids = %#v", v)
			}
			if v, _ := f.KV("x.names"); v.ElemType() != gguf.TypeString || v.Len() != 2 {
				t.Errorf("x.names = %#v", v)
			}
			if v, _ := f.KV("x.f"); v.Any() != 0.5 {
				t.Errorf("x.f = %#v", v)
			}
		}},
		{"alignment", []string{"--alignment", "64"}, false, func(t *testing.T, f *ggufread.File) {
			if f.Alignment != 64 || f.DataOffset%64 != 0 {
				t.Errorf("alignment %d, data at %d", f.Alignment, f.DataOffset)
			}
		}},
		{"tensors", []string{"--rename-tensor", "output_norm.weight=out.w", "--drop-tensor", "token_embd.weight"}, false, func(t *testing.T, f *ggufread.File) {
			if _, ok := f.Tensor("out.w"); !ok {
				t.Error("out.w missing")
			}
			if _, ok := f.Tensor("token_embd.weight"); ok {
				t.Error("token_embd.weight kept")
			}
			if len(f.Tensors) != 46 {
				t.Errorf("%d tensors", len(f.Tensors))
			}
		}},
		{"same-size string in place", []string{"--set", "general.architecture=llama"}, true, func(t *testing.T, f *ggufread.File) {}},
	}
	orig, err := ggufread.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			copyFile(t, src, path)
			stdout, stderr, code := runApp(t, append(append([]string{"meta"}, tc.args...), path)...)
			if code != 0 || tc.inPlace != strings.HasPrefix(stdout, "edited in place") {
				t.Fatalf("exit %d, in place %v: %s%s", code, tc.inPlace, stdout, stderr)
			}
			f, err := ggufread.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tc.check(t, f)
			for _, ti := range f.Tensors {
				name := ti.Name
				if name == "out.w" {
					name = "output_norm.weight"
				}
				a, _ := f.TensorData(ti.Name)
				b, _ := orig.TensorData(name)
				if !bytes.Equal(a, b) {
					t.Errorf("tensor %s: data differs", ti.Name)
				}
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("%d files left in the folder", len(entries))
			}
		})
	}
}

// sparseGGUF writes a GGUF with one F32 tensor of n elements whose data is
// a hole: reading it would cost n*4 bytes of memory.
func sparseGGUF(t *testing.T, path string, n uint64) {
	t.Helper()
	e := gguf.NewEncoder(binary.LittleEndian)
	e.Header(gguf.Version, 1, 2)
	e.KV(gguf.KV{Key: gguf.KeyGeneralArchitecture, Value: gguf.String("llama")})
	e.KV(gguf.KV{Key: gguf.KeyGeneralName, Value: gguf.String("sparse")})
	e.TensorInfo(gguf.TensorInfo{Name: "big", Type: gguf.F32, Shape: []uint64{n}})
	head, _ := gguf.AlignUp(uint64(e.Len()), gguf.DefaultAlignment)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(head + 4*n)); err != nil {
		t.Fatal(err)
	}
}

// TestMetaNeverLoadsData edits a file with an 8 GiB tensor in place and
// rewrites one with a 64 MiB tensor, and checks the memory allocated stays
// far below the tensor's size.
func TestMetaNeverLoadsData(t *testing.T) {
	tests := []struct {
		name    string
		n       uint64
		args    []string
		inPlace bool
	}{
		{"in place, 8 GiB", 2 << 30, []string{"--general-name", "SPARSE"}, true},
		{"rewrite, 64 MiB", 16 << 20, []string{"--general-name", "a name long enough to need a larger header than before"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sparse.gguf")
			sparseGGUF(t, path, tc.n)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			stdout, stderr, code := runApp(t, append(append([]string{"meta"}, tc.args...), path)...)
			runtime.ReadMemStats(&after)
			if code != 0 || tc.inPlace != strings.HasPrefix(stdout, "edited in place") {
				t.Fatalf("exit %d: %s%s", code, stdout, stderr)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("%d bytes allocated for a %d-byte tensor", alloc, 4*tc.n)
			}
			f, err := ggufread.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if v, _ := f.KV(gguf.KeyGeneralName); v.Any() != tc.args[1] {
				t.Errorf("general.name = %v", v.Any())
			}
		})
	}
}

// TestMetaErrors checks refused edits leave the input untouched.
func TestMetaErrors(t *testing.T) {
	const src = "../../testdata/gguf/stories260K-Q8_0.gguf"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no arguments", nil, 2, "expected IN.gguf [OUT.gguf]"},
		{"remove a missing key", []string{"--remove-metadata", "no.such"}, 1, `no key "no.such"`},
		{"bad type", []string{"--set", "x:float16=1"}, 1, `unknown type "float16"`},
		{"bad value", []string{"--set", "llama.context_length=-1"}, 1, "llama.context_length"},
		{"unknown special token", []string{"--special-token-by-id", "boss=1"}, 1, `unknown special token "boss"`},
		{"token id out of range", []string{"--special-token-by-id", "bos=99999"}, 1, "not within the token list"},
		{"missing token text", []string{"--special-token", "bos=<nope>"}, 1, `no token "<nope>"`},
		{"alignment", []string{"--alignment", "48"}, 1, "not a power of 2"},
		{"drop a missing tensor", []string{"--drop-tensor", "nope"}, 1, `no tensor "nope"`},
		{"rename onto another", []string{"--rename-tensor", "output_norm.weight=token_embd.weight"}, 1, "two tensors would be named"},
		{"named templates", []string{"--chat-template", `[{"name":"a","template":"b"}]`}, 2, "not supported"},
	}
	want, _ := sha256File(t, src)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			copyFile(t, src, path)
			args := append([]string{"meta"}, tc.args...)
			if tc.args != nil {
				args = append(args, path)
			}
			_, stderr, code := runApp(t, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
			if got, _ := sha256File(t, path); got != want {
				t.Error("the input changed")
			}
		})
	}
}
