package ggufread

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpenMetadata opens the 32000-token llama-spm vocabulary GGUF
// (tokens, scores and types: about 0.7 MB of metadata) and parses its whole
// header. BenchmarkReadFile is the baseline: reading the same bytes into
// memory with no parsing.
func BenchmarkOpenMetadata(b *testing.B) {
	path := filepath.Join(testdata, "ggml-vocab-llama-spm.gguf")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(f.KVs) == 0 {
			b.Fatal("no metadata")
		}
		f.Close()
	}
}

func BenchmarkReadFile(b *testing.B) {
	path := filepath.Join(testdata, "ggml-vocab-llama-spm.gguf")
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
