package imatrix

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRewriteReference merges llama-imatrix's own files into empty
// statistics and writes them again: the same bytes in both formats, so the
// writers lay files out as llama-imatrix does.
func TestRewriteReference(t *testing.T) {
	const dir = "../../testdata/stories260K/quantized/"
	t.Run("gguf", func(t *testing.T) {
		s := NewStats(128)
		if err := s.Merge(dir + "imatrix.gguf"); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out.gguf")
		if err := s.WriteGGUF(context.Background(), out, false); err != nil {
			t.Fatal(err)
		}
		same(t, out, dir+"imatrix.gguf")
	})
	t.Run("dat", func(t *testing.T) {
		s := NewStats(128)
		if err := s.Merge(dir + "imatrix.dat"); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := s.WriteLegacy(&b); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out.dat")
		os.WriteFile(out, b.Bytes(), 0o644)
		same(t, out, dir+"imatrix.dat")
	})
}

func same(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		n := 0
		for n < min(len(a), len(b)) && a[n] == b[n] {
			n++
		}
		t.Errorf("%s: %d bytes, %s: %d; first difference at offset %d", got, len(a), want, len(b), n)
	}
}

func TestCollect(t *testing.T) {
	s := NewStats(4)
	x := [][]float32{{1, 2}, {3, -4}}
	for range 3 {
		if err := s.AddDense("blk.0.ffn_up.weight", x); err != nil {
			t.Fatal(err)
		}
	}
	e, _ := s.Entry("blk.0.ffn_up.weight")
	if e.Sums[0] != 30 || e.Sums[1] != 60 || len(e.Counts) != 1 || e.Counts[0] != 6 || s.LastChunk != 1 {
		t.Errorf("dense: %+v, last chunk %d", e, s.LastChunk)
	}
	if err := s.AddDense("blk.0.ffn_up.weight", [][]float32{{1, 2, 3}}); err == nil {
		t.Error("a row of another width was accepted")
	}
	if err := s.AddExpert("blk.0.ffn_down_exps.weight", 2, 3, [][]float32{{2, 0}}); err != nil {
		t.Fatal(err)
	}
	s.AddExpert("blk.0.ffn_down_exps.weight", 0, 3, [][]float32{{1, 1}, {1, 1}})
	e, _ = s.Entry("blk.0.ffn_down_exps.weight")
	if want := []float32{2, 2, 0, 0, 4, 0}; !equal(e.Sums, want) || e.Counts[0] != 2 || e.Counts[1] != 0 || e.Counts[2] != 1 {
		t.Errorf("experts: %+v", e)
	}
	if err := s.AddExpert("blk.0.ffn_down_exps.weight", 3, 3, x); err == nil {
		t.Error("expert 3 of 3 accepted")
	}
	if err := s.AddDense("blk.1.attn_q.weight", [][]float32{{float32(math.Inf(1)), 0}}); !errors.Is(err, ErrNonFinite) {
		t.Errorf("infinite activation: %v", err)
	}

	// Written and loaded again: the quantizers' weights are sums / counts,
	// 1 for an expert without data; the legacy file has no partial entry.
	s.Datasets = []string{"text.txt"}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := s.WriteGGUF(context.Background(), path, false); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Weights["blk.0.ffn_down_exps.weight"]; !equal(w, []float32{1, 1, 1, 1, 4, 0}) || !m.HasMetadata || m.ChunkSize != 4 {
		t.Errorf("loaded %v, metadata %v, chunk size %d", w, m.HasMetadata, m.ChunkSize)
	}
	if w := m.Weights["blk.0.ffn_up.weight"]; !equal(w, []float32{5, 10}) {
		t.Errorf("dense weights %v", w)
	}
	// Merging the file doubles everything.
	s2 := NewStats(4)
	s2.Merge(path)
	s2.Merge(path)
	if e, _ := s2.Entry("blk.0.ffn_up.weight"); e.Sums[0] != 60 || e.Counts[0] != 12 {
		t.Errorf("merged twice: %+v", e)
	}
	if len(s2.Datasets) != 2 || s2.LastChunk != 3 {
		t.Errorf("datasets %v, last chunk %d", s2.Datasets, s2.LastChunk)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestShowStatistics prints the reference matrix's statistics and compares
// them with llama-imatrix --show-statistics' output, character for
// character.
func TestShowStatistics(t *testing.T) {
	s := NewStats(128)
	if err := s.Merge("../../testdata/stories260K/quantized/imatrix.gguf"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteStatistics(&b, "imatrix.gguf", s.Statistics())
	want, err := os.ReadFile("testdata/show-statistics.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.TrimPrefix(b.Bytes(), []byte("\n"))
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, llama-imatrix %d", len(gl), len(wl))
	}
}
