package writer

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ggufkit/ggufkit/gguf"
)

// names lists a folder.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestTempInvisible checks that on Linux a file being written has no name
// until Close publishes it (so a SIGKILL leaves nothing), with and without
// Overwrite.
func TestTempInvisible(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("O_TMPFILE is Linux's")
	}
	for _, overwrite := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.gguf")
		w, err := Create(context.Background(), path, Options{Overwrite: overwrite})
		if err != nil {
			t.Fatal(err)
		}
		if w.tmpName != "" {
			t.Skipf("the file system of %s has no O_TMPFILE", dir)
		}
		w.SetKV(gguf.KeyGeneralArchitecture, gguf.String("llama"))
		if err := w.AddTensor("t", gguf.F32, []uint64{8}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteTensor("t", make([]byte, 32)); err != nil {
			t.Fatal(err)
		}
		if got := names(t, dir); len(got) != 0 {
			t.Fatalf("overwrite %v: %v visible while writing", overwrite, got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := names(t, dir); !slices.Equal(got, []string{"out.gguf"}) {
			t.Fatalf("overwrite %v: %v after Close", overwrite, got)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v", fi.Mode())
		}
	}
}

// TestRemoveStale checks which temporary files a new writer to the same
// destination removes: ours, older than the run and unlocked; and that it
// names them.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := processStart.Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(".out.gguf.123456.partial", old)
	mk(".out.gguf.abc.partial", old)                       // not a name CreateTemp makes
	mk(".other.gguf.123.partial", old)                     // another destination
	mk(".out.gguf.777.partial", time.Now().Add(time.Hour)) // written during this run
	locked := mk(".out.gguf.999.partial", old)
	if runtime.GOOS != "windows" {
		f, err := os.OpenFile(locked, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lockTemp(f)
	}
	var reported []string
	ctx := WithStaleReporter(context.Background(), func(p string) { reported = append(reported, p) })
	w, err := Create(ctx, filepath.Join(dir, "out.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if !slices.Equal(reported, []string{stale}) {
		t.Errorf("reported %v, want %v", reported, []string{stale})
	}
	want := []string{".other.gguf.123.partial", ".out.gguf.777.partial", ".out.gguf.abc.partial"}
	if runtime.GOOS != "windows" {
		want = append(want, ".out.gguf.999.partial")
		slices.Sort(want)
	}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}

// TestNamedTempLocked checks the fallback's named temporary file is locked
// while written and removed on Abort.
func TestNamedTempLocked(t *testing.T) {
	dir := t.TempDir()
	f, name, err := createNamedTemp(dir, "out.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && !tempInUse(name) {
		t.Error("the temporary file is not locked")
	}
	f.Close()
	if tempInUse(name) {
		t.Error("still locked after Close")
	}
	os.Remove(name)
}
