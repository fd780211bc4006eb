package quantize

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/benchweights"
)

// Benchmarks over every registered type. The input is 4096×4096 float32
// (64 MiB, a typical projection matrix), or 256×4096 with -short; the
// environment variable GGUFKIT_BENCH_ROWS overrides the row count (e.g. 64
// for a quick pass over the slow IQ types). MB/s is float32 input bytes
// (Encode) or float32 output bytes (Decode) per second. On a machine shared
// with other jobs wall time says little, so each benchmark also reports
// MB/cpu-s: the same bytes per CPU-second of the whole process (all
// workers), which for one worker is its speed on an idle core.
//
//	go test ./quantize -run '^$' -bench 'Encode/Q8_0/' -short
//	GGUFKIT_BENCH_ROWS=64 go test ./quantize -run '^$' -bench .

const benchCols = 4096

func benchRows() int {
	if s := os.Getenv("GGUFKIT_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 256
	}
	return 4096
}

// benchInput returns the benchmark matrix (nrows×benchCols) and its
// importance vector; see benchweights.Matrix.
func benchInput(nrows int) (src, imatrix []float32) {
	return benchweights.Matrix(nrows, benchCols)
}

type benchCase struct {
	name    string
	typ     gguf.Type
	imatrix bool
	workers int
}

// benchCases lists each registered type with 1 and all workers, with and
// without importance weights where the type uses them (only with them where
// it requires them).
func benchCases(decode bool) []benchCase {
	var cs []benchCase
	for _, t := range gguf.Types() {
		if (!decode && !CanEncode(t)) || (decode && !CanDecode(t)) {
			continue
		}
		ims := []bool{false}
		switch {
		case decode:
		case RequiresImatrix(t):
			ims = []bool{true}
		case UsesImatrix(t):
			ims = []bool{false, true}
		}
		for _, im := range ims {
			for _, w := range []int{1, 0} {
				n := t.String()
				if im {
					n += "+imatrix"
				}
				if w == 1 {
					n += "/1worker"
				} else {
					n += "/allworkers"
				}
				cs = append(cs, benchCase{n, t, im, w})
			}
		}
	}
	return cs
}

func BenchmarkEncode(b *testing.B) {
	nrows := benchRows()
	src, weights := benchInput(nrows)
	for _, c := range benchCases(false) {
		b.Run(c.name, func(b *testing.B) {
			rowSize, err := RowSize(c.typ, benchCols)
			if err != nil {
				b.Skip(err)
			}
			var imatrix []float32
			if c.imatrix {
				imatrix = weights
			}
			dst := make([]byte, nrows*rowSize)
			clear(dst) // fault the pages in before timing
			q := &Quantizer{Workers: c.workers}
			b.SetBytes(int64(4 * len(src)))
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := q.Encode(context.Background(), c.typ, dst, src, benchCols, imatrix); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, 4*len(src))
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	nrows := benchRows()
	src, weights := benchInput(nrows)
	dst := make([]float32, len(src))
	for _, c := range benchCases(true) {
		b.Run(c.name, func(b *testing.B) {
			rowSize, err := RowSize(c.typ, benchCols)
			if err != nil {
				b.Skip(err)
			}
			enc := make([]byte, nrows*rowSize)
			if CanEncode(c.typ) {
				var imatrix []float32
				if RequiresImatrix(c.typ) {
					imatrix = weights
				}
				if err := (&Quantizer{}).Encode(context.Background(), c.typ, enc, src, benchCols, imatrix); err != nil {
					b.Fatal(err)
				}
			}
			q := &Quantizer{Workers: c.workers}
			b.SetBytes(int64(4 * len(dst)))
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := q.Decode(context.Background(), c.typ, dst, enc, benchCols); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, 4*len(dst))
		})
	}
}

// reportCPU adds the MB/cpu-s metric: bytes per iteration over the CPU time
// used since cpu0 (the set-up before the loop is outside it).
func reportCPU(b *testing.B, cpu0 float64, bytes int) {
	if used := cpuSeconds() - cpu0; used > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/1e6/used, "MB/cpu-s")
	}
}
