package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/fixture"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// TestVerifyEncoder: ggufkit verify runs the reranker fixture's F32
// conversion (exit 0, rank pooling) and fails a copy whose pooling type
// says mean (exit 1, naming the key and the pooling).
func TestVerifyEncoder(t *testing.T) {
	src := "../../testdata/convert/xlmrreranker"
	m, err := fixture.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := fixture.Assemble(src, m, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "xlmrreranker-F32.gguf")
	if _, err := convert.Run(context.Background(), dir, convert.Options{OutType: "f32", OutFile: good, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCmd(t, "verify", good)
	if code != 0 || !strings.Contains(stdout, "rank pooling") {
		t.Fatalf("good file: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	bad := withPooling(t, good, 1)
	stdout, stderr, code = runCmd(t, "verify", "--source", good, bad)
	if code != 1 {
		t.Fatalf("wrong pooling type: exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"bert.pooling_type", "the file pools with mean, the reference with rank"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report does not say %q:\n%s", want, stdout)
		}
	}
}

// withPooling copies a GGUF with bert.pooling_type set to p.
func withPooling(t *testing.T, path string, p uint32) string {
	t.Helper()
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), "pooling.gguf")
	w, err := writer.Create(context.Background(), out, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KVs {
		w.SetKV(kv.Key, kv.Value)
	}
	w.SetKV("bert.pooling_type", gguf.Uint32(p))
	for _, ti := range f.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteTensor(ti.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
