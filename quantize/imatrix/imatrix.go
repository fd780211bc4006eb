// Package imatrix reads and writes importance matrices — llama-imatrix's
// per-column statistics that the quantizers use as weights — in both
// formats llama-quantize accepts: GGUF (general.type "imatrix", tensors
// <name>.in_sum2 and <name>.counts) and the legacy .dat file
// (common/imatrix-loader.cpp of llama.cpp 0c1e570), and collects them
// (Stats) as llama-imatrix does.
package imatrix

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// ErrFormat marks an importance-matrix file that cannot be read.
var ErrFormat = errors.New("imatrix: invalid file")

// Matrix is a loaded importance matrix.
type Matrix struct {
	// Weights maps a tensor name to its weights: one per column, times the
	// number of experts for stacked expert tensors. They are the values
	// llama-quantize passes to the quantizers (sums divided by counts).
	Weights map[string][]float32
	// Datasets names the text(s) the statistics were computed on.
	Datasets []string
	// ChunkCount is how many chunks were processed (0 when unknown).
	ChunkCount int
	// ChunkSize is the tokens per chunk (GGUF files only).
	ChunkSize int
	// Legacy is set for the .dat format.
	Legacy bool
	// HasMetadata is set when a GGUF file holds all of imatrix.datasets,
	// imatrix.chunk_count and imatrix.chunk_size (llama-quantize refuses a
	// GGUF imatrix without them).
	HasMetadata bool
}

// Load reads an importance matrix file in either format. As llama-quantize
// does, a file that is not a valid GGUF is read as the legacy format.
func Load(path string) (*Matrix, error) {
	f, err := ggufread.Open(path)
	if err == nil {
		defer f.Close()
		return fromGGUF(f)
	}
	var fe *gguf.FormatError
	if !errors.As(err, &fe) {
		return nil, err
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, rerr
	}
	m, lerr := parseLegacy(data, path)
	if lerr != nil {
		if len(data) >= 4 && string(data[:4]) == gguf.Magic {
			return nil, fmt.Errorf("imatrix: %w", err) // a broken GGUF: its error says more
		}
		return nil, lerr
	}
	return m, nil
}

func fromGGUF(f *ggufread.File) (*Matrix, error) {
	m := &Matrix{Weights: map[string][]float32{}}
	if len(f.Tensors) == 0 {
		return nil, fmt.Errorf("%w: %s: no data", ErrFormat, f.Name)
	}
	ds, hasDS := f.KV(gguf.KeyIMatrixDatasets)
	if hasDS {
		m.Datasets, _ = ds.Strings()
	}
	cc, hasCC := f.KV(gguf.KeyIMatrixChunkCount)
	cs, hasCS := f.KV(gguf.KeyIMatrixChunkSize)
	m.HasMetadata = hasDS && hasCC && hasCS
	if n, ok := cc.Int(); ok {
		m.ChunkCount = int(n)
	}
	if n, ok := cs.Int(); ok {
		m.ChunkSize = int(n)
	}
	type pair struct{ sums, counts *gguf.TensorInfo }
	pairs := map[string]*pair{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if name, ok := strings.CutSuffix(ti.Name, ".in_sum2"); ok {
			p := pairs[name]
			if p == nil {
				p = &pair{}
				pairs[name] = p
			}
			p.sums = ti
		} else if name, ok := strings.CutSuffix(ti.Name, ".counts"); ok {
			p := pairs[name]
			if p == nil {
				p = &pair{}
				pairs[name] = p
			}
			p.counts = ti
		}
	}
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := pairs[name]
		if p.sums == nil || p.counts == nil {
			return nil, fmt.Errorf("%w: %s: mismatched sums and counts for %q", ErrFormat, f.Name, name)
		}
		if p.sums.Type != gguf.F32 || p.counts.Type != gguf.F32 {
			return nil, fmt.Errorf("%w: %s: sums and counts for %q must be F32", ErrFormat, f.Name, name)
		}
		sums, err := f32s(f, p.sums.Name)
		if err != nil {
			return nil, err
		}
		counts, err := f32s(f, p.counts.Name)
		if err != nil {
			return nil, err
		}
		if len(counts) == 0 || len(sums)%len(counts) != 0 {
			return nil, fmt.Errorf("%w: %s: %q has %d sums for %d counts", ErrFormat, f.Name, name, len(sums), len(counts))
		}
		// Per expert: sum / count, with a count of 0 giving weights of 1
		// (load_imatrix in tools/quantize/quantize.cpp). Counts are stored
		// as floats and rounded with lround first.
		ne0 := len(sums) / len(counts)
		w := make([]float32, len(sums))
		for j, c := range counts {
			count := float32(lround(c))
			for i := range ne0 {
				if count > 0 {
					w[j*ne0+i] = sums[j*ne0+i] / count
				} else {
					w[j*ne0+i] = 1
				}
			}
		}
		m.Weights[name] = w
	}
	return m, nil
}

// lround is C's lround: half away from zero.
func lround(x float32) int64 { return int64(math.Round(float64(x))) }

func f32s(f *ggufread.File, name string) ([]float32, error) {
	b, err := f.TensorData(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(f.ByteOrder.Uint32(b[4*i:]))
	}
	return out, nil
}

// legacyRaw is a .dat file as stored: per entry the values (each sum's
// mean times ncall) and, as its only count, ncall.
type legacyRaw struct {
	sums       map[string][]float32
	counts     map[string][]int64
	datasets   []string
	chunkCount int
}

// parseLegacy reads the .dat format into the quantizers' weights: each
// value divided by its entry's ncall.
func parseLegacy(data []byte, path string) (*Matrix, error) {
	raw, err := parseLegacyRaw(data, path)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Weights: make(map[string][]float32, len(raw.sums)), Legacy: true, Datasets: raw.datasets, ChunkCount: raw.chunkCount}
	for name, sums := range raw.sums {
		ncall := raw.counts[name][0]
		w := make([]float32, len(sums))
		for j, s := range sums {
			if ncall > 0 {
				w[j] = s / float32(ncall)
			} else {
				w[j] = s
			}
		}
		m.Weights[name] = w
	}
	return m, nil
}

// parseLegacyRaw reads the .dat format: i32 entry count; per entry an i32
// name length, the name, i32 ncall, i32 nval, nval float32 (each stored as
// the mean times ncall); optionally i32 chunk count, i32 length, dataset
// name.
func parseLegacyRaw(data []byte, path string) (*legacyRaw, error) {
	r := bytes.NewReader(data)
	bad := func(format string, args ...any) error {
		off := len(data) - r.Len()
		return fmt.Errorf("%w: %s at offset %d: %s", ErrFormat, path, off, fmt.Sprintf(format, args...))
	}
	i32 := func() (int32, bool) {
		var v int32
		return v, binary.Read(r, binary.LittleEndian, &v) == nil
	}
	n, ok := i32()
	if !ok || n < 1 {
		return nil, bad("no data")
	}
	if int64(n) > int64(len(data))/16 {
		return nil, bad("%d entries cannot fit in %d bytes", n, len(data))
	}
	m := &legacyRaw{sums: make(map[string][]float32, n), counts: make(map[string][]int64, n)}
	for i := range int(n) {
		l, ok := i32()
		if !ok || l < 0 || int64(l) > int64(r.Len()) {
			return nil, bad("entry %d: bad name length", i+1)
		}
		name := make([]byte, l)
		io.ReadFull(r, name)
		// The name is read into a C string: it ends at its first NUL.
		if z := bytes.IndexByte(name, 0); z >= 0 {
			name = name[:z]
		}
		ncall, ok1 := i32()
		nval, ok2 := i32()
		if !ok1 || !ok2 || nval < 1 || int64(nval)*4 > int64(r.Len()) {
			return nil, bad("entry %d (%q): bad value count", i+1, name)
		}
		sums := make([]float32, nval)
		binary.Read(r, binary.LittleEndian, sums)
		m.sums[string(name)] = sums
		m.counts[string(name)] = []int64{int64(ncall)}
	}
	if r.Len() > 0 {
		if c, ok := i32(); ok {
			m.chunkCount = int(c)
			if l, ok := i32(); ok && l > 0 && int64(l) <= int64(r.Len()) {
				ds := make([]byte, l)
				io.ReadFull(r, ds)
				if z := bytes.IndexByte(ds, 0); z >= 0 {
					ds = ds[:z]
				}
				m.datasets = append(m.datasets, string(ds))
			}
		}
	}
	return m, nil
}

// Filter keeps only the entries whose name contains one of include (when
// given), or drops those containing one of exclude, as llama-quantize's
// --include-weights / --exclude-weights do.
func (m *Matrix) Filter(include, exclude []string) {
	for name := range m.Weights {
		keep := len(include) == 0
		for _, s := range include {
			if strings.Contains(name, s) {
				keep = true
			}
		}
		for _, s := range exclude {
			if strings.Contains(name, s) {
				keep = false
			}
		}
		if !keep {
			delete(m.Weights, name)
		}
	}
}

// CheckFinite returns an error naming the first entry holding NaN or
// infinity (llama-quantize refuses such a matrix).
func (m *Matrix) CheckFinite() error {
	names := make([]string, 0, len(m.Weights))
	for n := range m.Weights {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for i, v := range m.Weights[n] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("imatrix: %q value %d is %v", n, i, v)
			}
		}
	}
	return nil
}
