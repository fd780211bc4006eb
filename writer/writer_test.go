package writer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// rewrite writes f back through the writer: same version, byte order,
// alignment, KVs, tensor infos and data, tensors written in reverse order and
// concurrently to exercise WriteAt.
func rewrite(t testing.TB, f *ggufread.File, dst string) {
	t.Helper()
	w, err := writer.Create(context.Background(), dst, writer.Options{
		Overwrite:    true,
		ByteOrder:    f.ByteOrder.(binary.AppendByteOrder),
		Version:      f.Version,
		Alignment:    uint32(f.Alignment),
		OmitFinalPad: !f.EndsPadded(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KVs {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.Tensors))
	for i := len(f.Tensors) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := f.TensorData(f.Tensors[i].Name)
			if err == nil {
				err = w.WriteTensor(f.Tensors[i].Name, data)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// roundTrip checks that reading path and writing it back gives the same bytes.
func roundTrip(t *testing.T, path string) {
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dst := filepath.Join(t.TempDir(), "out.gguf")
	rewrite(t, f, dst)
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, orig) {
		for i := range min(len(got), len(orig)) {
			if got[i] != orig[i] {
				t.Fatalf("differs from the original at byte %d (of %d / %d)", i, len(got), len(orig))
			}
		}
		t.Fatalf("length %d, original %d", len(got), len(orig))
	}
}

func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../testdata/gguf/*.gguf")
	files = append(files, "../testdata/gguf/fuzz-corpus/v3-empty.bin")
	var n int
	for _, p := range files {
		switch filepath.Base(p) {
		case "test-be-v3.gguf", "ollama-test.gguf": // invalid: refused by the reader
			continue
		}
		n++
		t.Run(filepath.Base(p), func(t *testing.T) { roundTrip(t, p) })
	}
	if n < 10 {
		t.Fatalf("only %d files found", n)
	}
}

// TestRoundTripShared round-trips every valid GGUF of the reference data
// beside the project. .ci/run sets GGUFKIT_SHARED; without it there is
// nothing to read (the files are too large to copy into testdata).
func TestRoundTripShared(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	var files []string
	for _, pat := range []string{"data/llamacpp-vocab/*.gguf", "data/gguf-other-writer/*/*.gguf", "reference/*/gguf/*.gguf", "reference/*/quantized/*.gguf"} {
		m, _ := filepath.Glob(filepath.Join(shared, pat))
		files = append(files, m...)
	}
	invalid := map[string]bool{"test_model.gguf": true, "test-be-v3.gguf": true, "test.gguf": true}
	for _, p := range files {
		if invalid[filepath.Base(p)] {
			continue
		}
		rel, _ := filepath.Rel(shared, p)
		t.Run(rel, func(t *testing.T) { roundTrip(t, p) })
	}
	if len(files) < 40 {
		t.Fatalf("only %d files under %s", len(files), shared)
	}
}

func TestDestinationRefused(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(dst, []byte("keep"), 0o644)
	if _, err := writer.Create(context.Background(), dst, writer.Options{}); !errors.Is(err, writer.ErrExists) {
		t.Fatalf("err %v, want ErrExists", err)
	}
	w, err := writer.Create(context.Background(), dst, writer.Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKV("general.architecture", gguf.String("llama"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func newWriter(t *testing.T, ctx context.Context) (*writer.Writer, string) {
	dst := filepath.Join(t.TempDir(), "out.gguf")
	w, err := writer.Create(ctx, dst, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKV("general.architecture", gguf.String("test"))
	if err := w.AddTensor("a", gguf.F32, []uint64{3}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("b", gguf.Q8_0, []uint64{32, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w, dst
}

// noPartialOutput checks neither the destination nor a temporary file is left.
func noPartialOutput(t *testing.T, dst string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

func TestIncompleteRefused(t *testing.T) {
	w, dst := newWriter(t, context.Background())
	w.WriteTensor("a", make([]byte, 12))
	tw, _ := w.TensorWriterAt("b")
	tw.WriteAt(make([]byte, 34), 34) // second block only
	err := w.Close()
	if !errors.Is(err, writer.ErrIncomplete) || !strings.Contains(err.Error(), `tensor "b" has 34 of 68 bytes`) {
		t.Fatalf("err %v", err)
	}
	noPartialOutput(t, dst)
}

func TestMetadataSizeChangeRefused(t *testing.T) {
	w, dst := newWriter(t, context.Background())
	w.WriteTensor("a", make([]byte, 12))
	w.WriteTensor("b", make([]byte, 68))
	w.SetKV("general.architecture", gguf.String("tests")) // one byte longer
	if err := w.Close(); !errors.Is(err, writer.ErrMetadataSize) {
		t.Fatalf("err %v, want ErrMetadataSize", err)
	}
	noPartialOutput(t, dst)
}

func TestSameSizeChangeAccepted(t *testing.T) {
	w, dst := newWriter(t, context.Background())
	w.WriteTensor("a", make([]byte, 12))
	w.WriteTensor("b", make([]byte, 68))
	w.SetKV("general.architecture", gguf.String("best")) // same length
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Architecture() != "best" || f.Tensors[1].Offset != 32 {
		t.Fatalf("arch %q, offset %d", f.Architecture(), f.Tensors[1].Offset)
	}
}

func TestCancelRemovesTemp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, dst := newWriter(t, ctx)
	w.WriteTensor("a", make([]byte, 12))
	cancel()
	if err := w.WriteTensor("b", make([]byte, 68)); err == nil {
		t.Fatal("write after cancel succeeded")
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	noPartialOutput(t, dst)
}

func TestAbort(t *testing.T) {
	w, dst := newWriter(t, context.Background())
	w.Abort()
	if err := w.Close(); err == nil {
		t.Fatal("Close after Abort succeeded")
	}
	noPartialOutput(t, dst)
}

func TestBoundsChecked(t *testing.T) {
	w, _ := newWriter(t, context.Background())
	defer w.Abort()
	tw, _ := w.TensorWriterAt("a")
	if _, err := tw.WriteAt(make([]byte, 8), 8); err == nil {
		t.Fatal("write past the tensor accepted")
	}
	if err := w.WriteTensor("nope", nil); err == nil {
		t.Fatal("undeclared tensor accepted")
	}
	if err := w.AddTensor("c", gguf.F32, []uint64{1}); !errors.Is(err, writer.ErrState) {
		t.Fatalf("AddTensor after Start: %v", err)
	}
}

func TestAlignment(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "a.gguf")
	w, _ := writer.Create(context.Background(), dst, writer.Options{Alignment: 64})
	w.SetKV(gguf.KeyGeneralAlignment, gguf.Uint32(64))
	w.AddTensor("a", gguf.F32, []uint64{3})
	w.AddTensor("b", gguf.F32, []uint64{3})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if w.DataOffset()%64 != 0 || w.Tensors()[1].Offset != 64 || w.Size() != w.DataOffset()+128 {
		t.Fatalf("data at %d, b at %d, size %d", w.DataOffset(), w.Tensors()[1].Offset, w.Size())
	}
	w.WriteTensor("a", make([]byte, 12))
	w.WriteTensor("b", make([]byte, 12))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Alignment != 64 {
		t.Fatalf("alignment %d", f.Alignment)
	}

	w2, _ := writer.Create(context.Background(), filepath.Join(t.TempDir(), "b.gguf"), writer.Options{Alignment: 64})
	defer w2.Abort()
	w2.SetKV(gguf.KeyGeneralAlignment, gguf.Uint32(32))
	if err := w2.Start(); err == nil {
		t.Fatal("conflicting general.alignment accepted")
	}
}
