package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/perplexity"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/verify/forward"
	"github.com/ggufkit/ggufkit/writer"
)

func imatrixCommand() *cli.Command {
	return &cli.Command{
		Name:  "imatrix",
		Usage: "compute an importance matrix for quantization, as llama-imatrix does",
		ArgsUsage: "-m MODEL.gguf -f TEXT [-o imatrix.gguf]\n\n" +
			"Runs the model over the text in chunks of -c tokens (as llama-perplexity cuts it) and sums, for every\n" +
			"weight matrix of the blocks, the squares of the activations that multiply each of its columns (per\n" +
			"expert for mixture-of-experts tensors), with the counts. The file is llama-imatrix's (GGUF, or the\n" +
			"legacy .dat with --output-format dat): llama-quantize --imatrix and ggufkit quantize --imatrix read it.\n" +
			"Also prints the text's perplexity per chunk, unless --no-ppl. Without -f, --in-file files are combined.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "the GGUF to run (`FILE`; the first shard of a split set)"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "the calibration text (`FILE`)"},
			&cli.StringFlag{Name: "output-file", Aliases: []string{"o"}, Value: "imatrix.gguf", Usage: "where to write the matrix (`FILE`)"},
			&cli.StringFlag{Name: "output-format", Usage: "gguf or dat (default: gguf)"},
			&cli.IntFlag{Name: "ctx-size", Aliases: []string{"c"}, Value: perplexity.DefaultContext, Usage: "chunk length in tokens (`N`)"},
			&cli.IntFlag{Name: "chunks", Value: -1, Usage: "process at most `N` chunks (-1: all)"},
			&cli.IntFlag{Name: "chunk", Usage: "skip the first `N` chunks of the text"},
			&cli.IntFlag{Name: "batch-size", Aliases: []string{"b"}, Value: 2048, Usage: "accepted for llama-imatrix's command lines; the statistics do not depend on it (`N`)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Usage: "goroutines for the forward pass (`N`, 0: all CPUs)"},
			&cli.IntFlag{Name: "output-frequency", Value: 10, Usage: "write the matrix every `N` chunks"},
			&cli.IntFlag{Name: "save-frequency", Usage: "also keep a copy FILE.at_CHUNK every `N` chunks (0: never)"},
			&cli.StringSliceFlag{Name: "in-file", Usage: "add a saved matrix (`FILE`, either format; repeatable)"},
			&cli.BoolFlag{Name: "process-output", Usage: "collect data for output.weight too"},
			&cli.BoolFlag{Name: "no-ppl", Usage: "do not print the perplexity"},
			&cli.BoolFlag{Name: "parse-special", Usage: "recognise special-token text in the calibration text"},
			&cli.BoolFlag{Name: "show-statistics", Usage: "print statistics of the one --in-file matrix (per tensor and per block) and exit"},
			&cli.BoolFlag{Name: "force", Usage: "accepted for symmetry: the output file is always replaced, as llama-imatrix does"},
		},
		Action: runIMatrix,
	}
}

func runIMatrix(c *cli.Context) error {
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("imatrix: unexpected argument %q (the model is -m FILE, the text -f FILE)", c.Args().First()), 2)
	}
	nctx := c.Int("ctx-size")
	if nctx < 2 || c.Int("threads") < 0 || c.Int("output-frequency") <= 0 || c.Int("save-frequency") < 0 || c.Int("chunk") < 0 {
		return cli.Exit("imatrix: --ctx-size must be at least 2, --output-frequency positive, --threads, --save-frequency and --chunk not negative", 2)
	}
	legacy := false
	switch f := c.String("output-format"); f {
	case "", "gguf":
	case "dat":
		legacy = true
	default:
		return cli.Exit(fmt.Sprintf("imatrix: --output-format %q: expected gguf or dat", f), 2)
	}
	out := c.String("output-file")
	stderr := c.App.ErrWriter
	if !legacy && c.String("output-format") == "" && !strings.HasSuffix(out, ".gguf") {
		fmt.Fprintf(stderr, "imatrix: warning: writing the GGUF format to %s, whose name does not end in .gguf (--output-format dat for the legacy one)\n", out)
	}
	stats := imatrix.NewStats(nctx)
	if c.Bool("show-statistics") {
		in := c.StringSlice("in-file")
		if len(in) != 1 {
			return cli.Exit("imatrix: --show-statistics needs exactly one --in-file matrix", 2)
		}
		if err := stats.Merge(in[0]); err != nil {
			return err
		}
		ts := stats.Statistics()
		if len(ts) == 0 {
			return fmt.Errorf("imatrix: %s: no statistics to show", in[0])
		}
		imatrix.WriteStatistics(c.App.Writer, in[0], ts)
		return nil
	}
	for _, in := range c.StringSlice("in-file") {
		fmt.Fprintf(stderr, "imatrix: loading %s\n", in)
		if err := stats.Merge(in); err != nil {
			return err
		}
	}
	save := func(path string) error {
		if legacy {
			f, err := writer.CreateAtomic(path, true)
			if err != nil {
				return err
			}
			defer f.Abort()
			if err := stats.WriteLegacy(f); err != nil {
				return err
			}
			return f.Commit()
		}
		return stats.WriteGGUF(c.Context, path, true)
	}
	text := c.String("file")
	if text == "" {
		if len(c.StringSlice("in-file")) == 0 {
			return cli.Exit("imatrix: no text (-f) and no matrices to combine (--in-file)", 2)
		}
		if err := save(out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "imatrix: wrote %s (%d entries, %d chunks)\n", out, len(stats.Entries()), stats.LastChunk)
		return nil
	}
	if c.String("model") == "" {
		return cli.Exit("imatrix: -m MODEL.gguf is required", 2)
	}
	run := imatrixRun{
		model: c.String("model"), text: text, nctx: nctx, chunks: c.Int("chunks"), skip: c.Int("chunk"),
		threads: c.Int("threads"), processOutput: c.Bool("process-output"), parseSpecial: c.Bool("parse-special"),
	}
	noPPL := c.Bool("no-ppl")
	outFreq, saveFreq := c.Int("output-frequency"), c.Int("save-frequency")
	var saveErr error
	start := time.Now()
	progress := func(p perplexity.Progress) {
		if p.Chunk == 1 {
			printETA(c, p)
		}
		if !noPPL {
			fmt.Fprintf(c.App.Writer, "[%d]%.4f,", p.Chunk, p.PPL)
		}
		n := stats.LastChunk
		if saveErr == nil && n%outFreq == 0 {
			saveErr = save(out)
		}
		if saveErr == nil && saveFreq > 0 && n%saveFreq == 0 {
			saveErr = save(out + ".at_" + strconv.Itoa(n))
		}
	}
	res, err := run.collect(c, stats, progress)
	if err != nil {
		return err
	}
	if saveErr != nil {
		return saveErr
	}
	fmt.Fprintln(c.App.Writer)
	if !noPPL {
		if res.StdErr == 0 {
			return errors.New("imatrix: unexpected negative standard deviation of log(prob)")
		}
		fmt.Fprintf(c.App.Writer, "Final estimate: PPL = %.4f +/- %.5f\n", res.PPL, res.StdErr)
	}
	if err := save(out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "imatrix: wrote %s: %d entries, %d chunks in %.1f s\n", out, len(stats.Entries()), stats.LastChunk, time.Since(start).Seconds())
	return nil
}

// imatrixRun is one importance-matrix computation: a model, a text and
// llama-imatrix's settings.
type imatrixRun struct {
	model, text                 string
	nctx, chunks, skip, threads int
	processOutput, parseSpecial bool
}

// collect runs the model over the text and adds the activations to stats
// (its Datasets gain the text), calling progress after every chunk; it
// returns the text's perplexity.
func (r imatrixRun) collect(c *cli.Context, stats *imatrix.Stats, progress func(perplexity.Progress)) (*perplexity.Result, error) {
	observe := func(tensor string, expert, experts int, x [][]float32) error {
		if expert >= 0 {
			return stats.AddExpert(tensor, expert, experts, x)
		}
		// llama-imatrix skips products of fewer than 16 rows and weights
		// outside the blocks (output.weight on request).
		if len(x) < 16 || !(strings.HasPrefix(tensor, "blk.") || r.processOutput && tensor == "output.weight") {
			return nil
		}
		return stats.AddDense(tensor, x)
	}
	l, err := perplexity.Load(r.model, forward.Options{Threads: r.threads, Observe: observe})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	stderr := c.App.ErrWriter
	if l.CtxTrain > 0 && r.nctx > l.CtxTrain {
		fmt.Fprintf(stderr, "imatrix: warning: the model was trained on only %d context tokens (%d specified)\n", l.CtxTrain, r.nctx)
	}
	data, err := os.ReadFile(r.text)
	if err != nil {
		return nil, fmt.Errorf("imatrix: %w", err)
	}
	tokens, err := l.Tokenizer.Encode(string(data), true, r.parseSpecial)
	if err != nil {
		return nil, fmt.Errorf("imatrix: tokenizing %s: %w", r.text, err)
	}
	if r.skip > 0 {
		if (r.skip+2)*r.nctx >= len(tokens) {
			return nil, fmt.Errorf("imatrix: there will be not enough tokens left after removing %d chunks", r.skip)
		}
		tokens = tokens[r.skip*r.nctx:]
	}
	stats.Datasets = append(stats.Datasets, r.text)
	o := l.Options
	o.Context, o.Chunks, o.Progress = r.nctx, r.chunks, progress
	fmt.Fprintf(stderr, "imatrix: %d tokens, chunks of %d\n", len(tokens), r.nctx)
	return perplexity.Run(c.Context, l.Model, tokens, o, nil)
}
