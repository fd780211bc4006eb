// Command benchverify times verify's float32 forward pass on a GGUF, for
// docs/performance.md ("Verify"; scripts/bench-verify.sh runs it):
//
//	go run ./scripts/benchverify -threads 2 -prompt 32 -gen 16 MODEL.gguf
//
// It evaluates a prompt of -prompt tokens in one batch (as verify does for
// the prompt and for the GGUF's pass over the reference's continuation),
// then generates -gen tokens one at a time (as the greedy continuations
// do), and prints both in tokens per second with the matrix-product rate
// they imply (2 · parameters FLOP per token), best of -runs, with the CPU
// time the process used (on a loaded machine wall time says little).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/verify/forward"
)

func main() {
	threads := flag.Int("threads", runtime.NumCPU(), "goroutines for the matrix products")
	prompt := flag.Int("prompt", 32, "prompt tokens, evaluated in one batch")
	gen := flag.Int("gen", 16, "tokens generated one at a time")
	runs := flag.Int("runs", 3, "repetitions (the best is reported)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchverify [flags] MODEL.gguf")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *threads, *prompt, *gen, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "benchverify:", err)
		os.Exit(1)
	}
}

func run(path string, threads, prompt, gen, runs int) error {
	f, err := ggufread.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, err := forward.ParseConfig(f)
	if err != nil {
		return err
	}
	m, err := forward.Load(cfg, forward.GGUFWeights(f), forward.Options{Threads: threads})
	if err != nil {
		return err
	}
	var params int64
	for i := range f.Tensors {
		if t := &f.Tensors[i]; t.Name != "token_embd.weight" || !hasTensor(f, "output.weight") {
			n, _ := t.NumElements()
			params += int64(n)
		}
	}
	tokens := make([]int, prompt)
	for i := range tokens {
		tokens[i] = (i*7 + 1) % cfg.Vocab
	}
	ctx := context.Background()
	best := [2]time.Duration{1<<63 - 1, 1<<63 - 1}
	bestCPU := [2]time.Duration{1<<63 - 1, 1<<63 - 1}
	for r := 0; r < runs; r++ {
		s, err := m.NewSession(prompt + gen)
		if err != nil {
			return err
		}
		t0, c0 := time.Now(), cpuTime()
		logits, err := s.Eval(ctx, tokens, false)
		if err != nil {
			return err
		}
		t1, c1 := time.Now(), cpuTime()
		next := forward.Argmax(logits[0])
		for i := 0; i < gen; i++ {
			l, err := s.Eval(ctx, []int{next}, false)
			if err != nil {
				return err
			}
			next = forward.Argmax(l[0])
		}
		t2, c2 := time.Now(), cpuTime()
		best[0], best[1] = min(best[0], t1.Sub(t0)), min(best[1], t2.Sub(t1))
		bestCPU[0], bestCPU[1] = min(bestCPU[0], c1-c0), min(bestCPU[1], c2-c1)
	}
	types := map[string]int{}
	for _, t := range f.Tensors {
		types[t.Type.String()]++
	}
	fmt.Printf("%s: %s, %d layers, embd %d, %.3g parameters in products, types %v, %d threads\n",
		path, cfg.Arch, cfg.Layers, cfg.Embd, float64(params), types, threads)
	for i, p := range []struct {
		what string
		n    int
	}{{fmt.Sprintf("prompt (%d tokens, one batch)", prompt), prompt}, {"generation (one token at a time)", gen}} {
		if p.n == 0 {
			continue
		}
		secs := best[i].Seconds()
		fmt.Printf("  %-34s %8.3f s  %9.1f tokens/s  %6.2f GFLOP/s  (CPU %.3f s)\n", p.what, secs, float64(p.n)/secs,
			2*float64(params)*float64(p.n)/secs/1e9, bestCPU[i].Seconds())
	}
	return nil
}

func hasTensor(f *ggufread.File, name string) bool {
	_, ok := f.Tensor(name)
	return ok
}
