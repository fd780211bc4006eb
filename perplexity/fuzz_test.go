package perplexity

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenBase feeds arbitrary bytes to the base-file reader and, when the
// header is accepted, compares a small model with it: errors, never a panic
// or an allocation beyond the file's size.
func FuzzOpenBase(f *testing.F) {
	f.Add([]byte(baseMagic + "\x04\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00" + "\x00\x00\x80\x3f\x00\x00\x00\xc0\x01\x00\x02\x00\x03\x00\x00\x00"))
	f.Add([]byte(baseMagic + "\xff\xff\xff\x7f\xff\xff\xff\x7f\xff\xff\xff\x7f"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "b")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		b, err := OpenBase(fh)
		if err != nil {
			return
		}
		if b.Context > 64 || b.Vocab > 64 || b.Chunks > 8 {
			return
		}
		m := &tableModel{vocab: b.Vocab, logit: func(pos, prev, v int) float32 { return float32((pos + prev + v) % 5) }}
		Compare(context.Background(), m, b, Options{Vocab: b.Vocab})
	})
}
