// Command benchencode is ggufkit's half of scripts/bench-encoders.sh: it
// writes the quantizer benchmark's input (internal/benchweights) to a folder,
// lists the encodings to compare, and times one encoding on one worker.
// scripts/ggmlenc.c is the other half: the same encodings by ggml's
// reference quantizers, on the same input files.
//
//	benchencode -dir D -rows 1024 -write   write D/input.f32 and D/imatrix.f32
//	benchencode -cases                     print one case per line (Q4_K, Q4_K+imatrix, …)
//	benchencode -dir D -case Q4_K+imatrix  encode, print MB per CPU-second, write D/ggufkit-Q4_K+imatrix.bin
//
// A timed repetition encodes the matrix as many times as it takes to fill a
// tenth of a CPU-second (a fast type on a cached matrix takes well under a
// millisecond, too short to time alone); the fastest repetition counts. Both
// halves time the same way, by the process CPU clock.

//go:build unix

package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/benchweights"
	"github.com/ggufkit/ggufkit/quantize"
	"golang.org/x/sys/unix"
)

const (
	// cols is the row length of the benchmark matrix, as in quantize's benchmarks.
	cols = 4096
	// minRepSeconds is the CPU time a timed repetition lasts at least.
	minRepSeconds = 0.1
)

func main() {
	dir := flag.String("dir", ".", "folder of input.f32, imatrix.f32 and the outputs")
	rows := flag.Int("rows", 1024, "rows of the matrix -write makes")
	write := flag.Bool("write", false, "write the input files and exit")
	cases := flag.Bool("cases", false, "list the encodings ggufkit and ggml both have, one per line")
	name := flag.String("case", "", "the encoding to time: a type name, +imatrix for importance weights")
	reps := flag.Int("reps", 3, "encodings timed; the fastest counts")
	flag.Parse()
	var err error
	switch {
	case *write:
		src, im := benchweights.Matrix(*rows, cols)
		if err = writeFloats(filepath.Join(*dir, "input.f32"), src); err == nil {
			err = writeFloats(filepath.Join(*dir, "imatrix.f32"), im)
		}
	case *cases:
		for _, c := range listCases() {
			fmt.Println(c)
		}
	case *name != "":
		err = run(*dir, *name, *reps)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchencode:", err)
		os.Exit(1)
	}
}

// listCases names every type ggufkit encodes, once without and once with
// importance weights where the type uses them (only with them where it
// requires them), as quantize's BenchmarkEncode does.
func listCases() []string {
	var cs []string
	for _, t := range gguf.Types() {
		if !quantize.CanEncode(t) {
			continue
		}
		if !quantize.RequiresImatrix(t) {
			cs = append(cs, t.String())
		}
		if quantize.UsesImatrix(t) {
			cs = append(cs, t.String()+"+imatrix")
		}
	}
	return cs
}

func run(dir, name string, reps int) error {
	typeName, withImatrix := strings.CutSuffix(name, "+imatrix")
	t, err := gguf.ParseType(typeName)
	if err != nil {
		return err
	}
	src, err := readFloats(filepath.Join(dir, "input.f32"))
	if err != nil {
		return err
	}
	var im []float32
	if withImatrix {
		if im, err = readFloats(filepath.Join(dir, "imatrix.f32")); err != nil {
			return err
		}
		if len(im) != cols {
			return fmt.Errorf("imatrix.f32: %d values, want %d", len(im), cols)
		}
	}
	if len(src)%cols != 0 {
		return fmt.Errorf("input.f32: %d values, not rows of %d", len(src), cols)
	}
	rowSize, err := quantize.RowSize(t, cols)
	if err != nil {
		return err
	}
	dst := make([]byte, len(src)/cols*rowSize)
	clear(dst) // fault the pages in before timing
	q := &quantize.Quantizer{Workers: 1}
	best := 0.0
	for range max(reps, 1) {
		c0, n := cpuSeconds(), 0
		for n == 0 || cpuSeconds()-c0 < minRepSeconds {
			if err := q.Encode(context.Background(), t, dst, src, cols, im); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			n++
		}
		best = max(best, float64(n)*float64(4*len(src))/1e6/(cpuSeconds()-c0))
	}
	fmt.Printf("%.1f\n", best)
	return os.WriteFile(filepath.Join(dir, "ggufkit-"+name+".bin"), dst, 0o644)
}

// cpuSeconds is the CPU time the process (all its threads) has used so far,
// by the clock ggmlenc reads too.
func cpuSeconds() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func writeFloats(path string, v []float32) error {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return os.WriteFile(path, b, 0o644)
}

func readFloats(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not float32 values", path, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
