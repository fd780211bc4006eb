package writer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestCopyFrom fills two tensors from a source file by CopyFrom in pieces,
// concurrently, through the kernel copy and through the buffered one: the
// output holds exactly the source's bytes, and a copy out of bounds or past
// the source's end fails and leaves nothing.
func TestCopyFrom(t *testing.T) {
	dir := t.TempDir()
	src := make([]byte, 3<<20)
	for i := range src {
		src[i] = byte(i*7 + i>>11)
	}
	srcPath := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(srcPath, src, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, kernel := range []bool{true, false} {
		t.Run(map[bool]string{true: "kernel", false: "buffered"}[kernel], func(t *testing.T) {
			if !kernel {
				saved := copyFileRange
				copyFileRange = func(*os.File, int64, *os.File, int64, int64) (int64, error) { return 0, nil }
				defer func() { copyFileRange = saved }()
			}
			out := filepath.Join(t.TempDir(), "out.gguf")
			w, err := Create(context.Background(), out, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			// 1.5 MiB of F16 values and 1 MiB of I8, from two ranges of src.
			if err := w.AddTensor("a", gguf.F16, []uint64{1024, 768}); err != nil {
				t.Fatal(err)
			}
			if err := w.AddTensor("b", gguf.I8, []uint64{1 << 20}); err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			ta, _ := w.TensorWriterAt("a")
			tb, _ := w.TensorWriterAt("b")
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for piece := range int64(3) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- ta.CopyFrom(f, 100+piece*(1<<19), piece*(1<<19), 1<<19)
				}()
			}
			wg.Add(1)
			go func() { defer wg.Done(); errs <- tb.CopyFrom(f, 2<<20, 0, 1<<20) }()
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			a := got[w.DataOffset() : w.DataOffset()+3<<19]
			b := got[w.DataOffset()+3<<19:]
			if !bytes.Equal(a, src[100:100+3<<19]) || !bytes.Equal(b[:1<<20], src[2<<20:3<<20]) {
				t.Fatal("copied bytes differ from the source")
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.gguf")
		w, err := Create(context.Background(), out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor("a", gguf.I8, []uint64{64}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		tw, _ := w.TensorWriterAt("a")
		if err := tw.CopyFrom(f, 0, 32, 64); err == nil {
			t.Error("a copy past the tensor's end succeeds")
		}
		if err := tw.CopyFrom(f, int64(len(src))-10, 0, 64); err == nil {
			t.Error("a copy past the source's end succeeds")
		}
		if err := w.Close(); err == nil {
			t.Error("Close succeeds after a failed copy")
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("output exists after a failed copy (%v)", err)
		}
	})
}
