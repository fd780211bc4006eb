package imatrix

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// Stats are the statistics llama-imatrix collects
// (IMatrixCollector of tools/imatrix/imatrix.cpp, llama.cpp 0c1e570): per
// weight matrix, the sums of the squared activations that multiplied each
// of its columns, one row of sums per expert for stacked expert tensors,
// and how many activation rows went into each. Stats are safe for
// concurrent use.
type Stats struct {
	// ChunkSize is the tokens per chunk (n_ctx / n_parallel).
	ChunkSize int
	// Datasets are the texts of merged files, then this run's.
	Datasets []string
	// LastChunk is the chunk count the statistics stand for.
	LastChunk int

	mu      sync.Mutex
	entries map[string]*Entry
}

// Entry is one weight matrix's statistics.
type Entry struct {
	// Sums holds len(Counts) rows of column sums of squares.
	Sums []float32
	// Counts is the number of activation rows summed, per expert (one
	// value for a dense matrix).
	Counts []int64
}

// ErrNonFinite is returned when activations make a sum infinite or NaN
// (llama-imatrix stops there too).
var ErrNonFinite = errors.New("imatrix: non-finite values")

// NewStats starts empty statistics for chunks of chunkSize tokens.
func NewStats(chunkSize int) *Stats {
	return &Stats{ChunkSize: chunkSize, entries: map[string]*Entry{}}
}

// Entries returns the entry names, sorted.
func (s *Stats) Entries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.entries))
	for n := range s.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Entry returns a copy of one entry.
func (s *Stats) Entry(name string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[name]
	if !ok {
		return Entry{}, false
	}
	return Entry{Sums: slices.Clone(e.Sums), Counts: slices.Clone(e.Counts)}, true
}

// AddDense accumulates the input rows x of a dense matrix product with
// weight name (collect_imatrix's GGML_OP_MUL_MAT branch): one count per row.
func (s *Stats) AddDense(name string, x [][]float32) error {
	if len(x) == 0 {
		return nil
	}
	ne0 := len(x[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[name]
	if e == nil {
		e = &Entry{Sums: make([]float32, ne0), Counts: []int64{0}}
		s.entries[name] = e
	}
	// A single count per dense tensor (an older file may have given
	// several equal ones).
	if len(e.Counts) > 1 && allEqual(e.Counts) {
		e.Counts = e.Counts[:1]
	}
	if len(e.Sums) == 0 {
		e.Sums = make([]float32, ne0)
		e.Counts = []int64{0}
	} else if len(e.Sums) != ne0 {
		return fmt.Errorf("imatrix: inconsistent size for %s (%d vs %d)", name, len(e.Sums), ne0)
	}
	acc := e.Sums[:ne0]
	for _, r := range x {
		for j, v := range r[:ne0] {
			acc[j] += float32(v * v)
		}
	}
	if !finite(acc) {
		return fmt.Errorf("%w in %s", ErrNonFinite, name)
	}
	for i := range e.Counts {
		e.Counts[i] += int64(len(x))
		s.advance(e.Counts[i])
	}
	return nil
}

// AddExpert accumulates the input rows x that expert ex of nExperts
// multiplied (collect_imatrix's GGML_OP_MUL_MAT_ID branch, one expert's
// share): each row adds to that expert's sums and count.
func (s *Stats) AddExpert(name string, ex, nExperts int, x [][]float32) error {
	if len(x) == 0 {
		return nil
	}
	ne0 := len(x[0])
	if ex < 0 || ex >= nExperts {
		return fmt.Errorf("imatrix: %s: expert %d of %d", name, ex, nExperts)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[name]
	if e == nil {
		e = &Entry{}
		s.entries[name] = e
	}
	if len(e.Counts) == 1 && nExperts > 1 {
		c := e.Counts[0] // broadcast, when loading an old imatrix
		e.Counts = make([]int64, nExperts)
		for i := range e.Counts {
			e.Counts[i] = c
		}
	}
	switch {
	case len(e.Sums) == 0:
		e.Sums = make([]float32, ne0*nExperts)
		e.Counts = make([]int64, nExperts)
	case len(e.Sums) != ne0*nExperts:
		return fmt.Errorf("imatrix: inconsistent size for %s (%d vs %d)", name, len(e.Sums), ne0*nExperts)
	case len(e.Counts) != nExperts:
		return fmt.Errorf("imatrix: inconsistent expert count for %s (%d vs %d)", name, len(e.Counts), nExperts)
	}
	acc := e.Sums[ex*ne0 : (ex+1)*ne0]
	for _, r := range x {
		for j, v := range r[:ne0] {
			acc[j] += float32(v * v)
		}
	}
	e.Counts[ex] += int64(len(x))
	if !finite(acc) {
		return fmt.Errorf("%w in %s", ErrNonFinite, name)
	}
	s.advance(e.Counts[ex])
	return nil
}

// advance moves LastChunk to count's chunk.
func (s *Stats) advance(count int64) {
	if s.ChunkSize > 0 {
		if n := int(count / int64(s.ChunkSize)); n > s.LastChunk {
			s.LastChunk = n
		}
	}
}

func allEqual(c []int64) bool {
	for _, v := range c[1:] {
		if v != c[0] {
			return false
		}
	}
	return true
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// Merge adds a saved importance matrix (either format) to the statistics,
// as llama-imatrix --in-file does: a GGUF file's raw sums and counts are
// added; a legacy file's stored means (times its call count) are scaled
// back by ChunkSize.
func (s *Stats) Merge(path string) error {
	sums, counts, datasets, legacy, err := loadRaw(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		e := s.entries[name]
		if e == nil {
			e = &Entry{}
			s.entries[name] = e
		}
		es, ec := sums[name], counts[name]
		if legacy {
			if len(e.Sums) == 0 {
				e.Sums = make([]float32, len(es))
				e.Counts = []int64{0}
			} else if len(e.Sums) != len(es) {
				return fmt.Errorf("%s: mismatched sums size for %s: %d != %d", path, name, len(es), len(e.Sums))
			}
			for j, v := range es {
				e.Sums[j] += v * float32(s.ChunkSize)
			}
			for j := range e.Counts {
				e.Counts[j] += ec[0] * int64(s.ChunkSize)
			}
			continue
		}
		switch {
		case len(e.Sums) == 0:
			e.Sums = make([]float32, len(es))
		case len(e.Sums) != len(es):
			return fmt.Errorf("%s: mismatched sums size for %s: %d != %d", path, name, len(es), len(e.Sums))
		}
		switch {
		case len(e.Counts) == 0:
			e.Counts = make([]int64, len(ec))
		case len(e.Counts) == 1 && len(ec) > 1:
			c := e.Counts[0]
			e.Counts = make([]int64, len(ec))
			for i := range e.Counts {
				e.Counts[i] = c
			}
		case len(e.Counts) != len(ec):
			return fmt.Errorf("%s: mismatched counts size for %s: %d != %d", path, name, len(ec), len(e.Counts))
		}
		for j, v := range es {
			e.Sums[j] += v
		}
		for j, v := range ec {
			e.Counts[j] += v
		}
	}
	s.Datasets = append(s.Datasets, datasets...)
	var maxCount int64
	for _, e := range s.entries {
		for _, c := range e.Counts {
			maxCount = max(maxCount, c)
		}
	}
	if s.ChunkSize > 0 {
		s.LastChunk = int(maxCount / int64(s.ChunkSize))
	}
	return nil
}

// loadRaw reads an importance matrix's raw statistics
// (common_imatrix_load): for GGUF the stored sums and counts (counts
// rounded with lround); for the legacy format the stored values and the
// call count.
func loadRaw(path string) (sums map[string][]float32, counts map[string][]int64, datasets []string, legacy bool, err error) {
	sums, counts = map[string][]float32{}, map[string][]int64{}
	f, err := ggufread.Open(path)
	if err == nil {
		defer f.Close()
		if ds, ok := f.KV(gguf.KeyIMatrixDatasets); ok {
			datasets, _ = ds.Strings()
		}
		for _, ti := range f.Tensors {
			name, ok := strings.CutSuffix(ti.Name, ".in_sum2")
			if !ok {
				continue
			}
			if _, ok := f.Tensor(name + ".counts"); !ok {
				return nil, nil, nil, false, fmt.Errorf("%w: %s: %q has sums but no counts", ErrFormat, path, name)
			}
			s, err := f32s(f, ti.Name)
			if err != nil {
				return nil, nil, nil, false, err
			}
			c, err := f32s(f, name+".counts")
			if err != nil {
				return nil, nil, nil, false, err
			}
			if len(c) == 0 || len(s)%len(c) != 0 {
				return nil, nil, nil, false, fmt.Errorf("%w: %s: %q has %d sums for %d counts", ErrFormat, path, name, len(s), len(c))
			}
			ci := make([]int64, len(c))
			for i, v := range c {
				ci[i] = lround(v)
			}
			sums[name], counts[name] = s, ci
		}
		if len(sums) == 0 {
			return nil, nil, nil, false, fmt.Errorf("%w: %s: no in_sum2 tensors", ErrFormat, path)
		}
		return sums, counts, datasets, false, nil
	}
	var fe *gguf.FormatError
	if !errors.As(err, &fe) {
		return nil, nil, nil, false, err
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, nil, nil, false, rerr
	}
	m, lerr := parseLegacyRaw(data, path)
	if lerr != nil {
		if len(data) >= 4 && string(data[:4]) == gguf.Magic {
			return nil, nil, nil, false, fmt.Errorf("imatrix: %w", err) // a broken GGUF: its error says more
		}
		return nil, nil, nil, false, lerr
	}
	return m.sums, m.counts, m.datasets, true, nil
}

// WriteGGUF writes the statistics to path as llama-imatrix's GGUF file:
// general.type "imatrix", imatrix.datasets, imatrix.chunk_count,
// imatrix.chunk_size, and per entry (sorted by name) F32 tensors
// <name>.in_sum2 [ne0, n_mat] and <name>.counts [1, n_mat]. The file is
// written atomically.
func (s *Stats) WriteGGUF(ctx context.Context, path string, overwrite bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := writer.Create(ctx, path, writer.Options{Overwrite: overwrite})
	if err != nil {
		return err
	}
	defer w.Abort()
	w.SetKV(gguf.KeyGeneralType, gguf.String("imatrix"))
	w.SetKV(gguf.KeyIMatrixDatasets, gguf.Array(s.Datasets))
	w.SetKV(gguf.KeyIMatrixChunkCount, gguf.Uint32(uint32(s.LastChunk)))
	w.SetKV(gguf.KeyIMatrixChunkSize, gguf.Uint32(uint32(s.ChunkSize)))
	type out struct {
		name string
		data []float32
	}
	var outs []out
	for _, name := range s.sortedLocked() {
		e := s.entries[name]
		nmat := len(e.Counts)
		if nmat == 0 || len(e.Sums) == 0 {
			continue
		}
		counts := make([]float32, nmat)
		for i, c := range e.Counts {
			counts[i] = float32(c)
		}
		if err := w.AddTensor(name+".in_sum2", gguf.F32, nDims(uint64(len(e.Sums)/nmat), uint64(nmat))); err != nil {
			return err
		}
		if err := w.AddTensor(name+".counts", gguf.F32, nDims(1, uint64(nmat))); err != nil {
			return err
		}
		outs = append(outs, out{name + ".in_sum2", e.Sums}, out{name + ".counts", counts})
	}
	if err := w.Start(); err != nil {
		return err
	}
	for _, o := range outs {
		b := make([]byte, 4*len(o.data))
		for i, v := range o.data {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if err := w.WriteTensor(o.name, b); err != nil {
			return err
		}
	}
	return w.Close()
}

// nDims drops trailing dimensions of 1, as ggml_n_dims does when gguf.cpp
// writes a tensor's shape (a [64, 1] tensor is stored as [64]).
func nDims(shape ...uint64) []uint64 {
	for len(shape) > 1 && shape[len(shape)-1] == 1 {
		shape = shape[:len(shape)-1]
	}
	return shape
}

func (s *Stats) sortedLocked() []string {
	names := make([]string, 0, len(s.entries))
	for n := range s.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// WriteLegacy writes llama-imatrix's .dat format (save_imatrix_legacy):
// entries without any data are skipped; per entry the name, the call count
// (the largest count divided by ChunkSize, rounded up), and each sum
// divided by its expert's count times the call count (1 where an expert
// has no data); then the chunk count and the last dataset's name.
func (s *Stats) WriteLegacy(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	chunk := int64(max(1, s.ChunkSize))
	var out []byte
	put32 := func(v int32) { out = binary.LittleEndian.AppendUint32(out, uint32(v)) }
	var stored []string
	for _, name := range s.sortedLocked() {
		e := s.entries[name]
		if len(e.Counts) == 0 || slices.Max(e.Counts) == 0 {
			continue
		}
		stored = append(stored, name)
	}
	put32(int32(len(stored)))
	for _, name := range stored {
		e := s.entries[name]
		put32(int32(len(name)))
		out = append(out, name...)
		ncall := (slices.Max(e.Counts) + chunk - 1) / chunk
		put32(int32(ncall))
		put32(int32(len(e.Sums)))
		per := len(e.Sums) / len(e.Counts)
		for i, v := range e.Sums {
			count := float32(e.Counts[i/per])
			if count == 0 {
				v, count = 1, 1
			}
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits((v/count)*float32(ncall)))
		}
	}
	put32(int32(s.LastChunk))
	ds := ""
	if len(s.Datasets) > 0 {
		ds = s.Datasets[len(s.Datasets)-1]
	}
	put32(int32(len(ds)))
	out = append(out, ds...)
	_, err := w.Write(out)
	return err
}
