package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/perplexity"
	"github.com/ggufkit/ggufkit/verify/forward"
	"github.com/ggufkit/ggufkit/writer"
)

func perplexityCommand() *cli.Command {
	return &cli.Command{
		Name:  "perplexity",
		Usage: "perplexity of a GGUF over a text, and KL divergence against a base model, as llama-perplexity computes them",
		ArgsUsage: "-m MODEL.gguf -f TEXT\n\n" +
			"The text is tokenized with the model's vocabulary (special tokens added as the vocabulary asks,\n" +
			"special-token text left as text) and cut into chunks of -c tokens; each chunk starts from an empty\n" +
			"context (its first token replaced by BOS when the vocabulary adds one) and is scored on its second\n" +
			"half. Prints the running perplexity per chunk and the final estimate, like llama-perplexity.\n\n" +
			"--kl-divergence-base FILE also saves the scored positions' log-probabilities (llama-perplexity's\n" +
			"format: either tool reads the other's file); --kl-divergence -m QUANTIZED.gguf --kl-divergence-base\n" +
			"FILE then evaluates the same tokens with another model and prints KL divergence, Δp and top-token\n" +
			"agreement statistics against the base (no -f needed).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "the GGUF to evaluate (`FILE`; the first shard of a split set)"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "the text to score (`FILE`)"},
			&cli.IntFlag{Name: "ctx-size", Aliases: []string{"c"}, Value: perplexity.DefaultContext, Usage: "chunk length in tokens (`N`)"},
			&cli.IntFlag{Name: "chunks", Value: -1, Usage: "score at most `N` chunks (-1: all)"},
			&cli.IntFlag{Name: "batch-size", Aliases: []string{"b"}, Value: 2048, Usage: "accepted for llama-perplexity's command lines; the figures do not depend on it (`N`)"},
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Usage: "goroutines for the forward pass (`N`, 0: all CPUs)"},
			&cli.StringFlag{Name: "kl-divergence-base", Usage: "log-probabilities `FILE`: written while scoring a text, read with --kl-divergence"},
			&cli.BoolFlag{Name: "kl-divergence", Usage: "compare the model with the base saved in --kl-divergence-base"},
			&cli.IntFlag{Name: "ppl-stride", Usage: "strided perplexity (only 0, llama-perplexity's default, is implemented)"},
			&cli.IntFlag{Name: "ppl-output-type", Usage: "0: [chunk]ppl, on one line; 1: one line per chunk with the mean and spread of the log-likelihood"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing --kl-divergence-base file"},
		},
		Action: runPerplexity,
	}
}

func runPerplexity(c *cli.Context) error {
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("perplexity: unexpected argument %q (the model is -m FILE, the text -f FILE)", c.Args().First()), 2)
	}
	if c.String("model") == "" {
		return cli.Exit("perplexity: -m MODEL.gguf is required", 2)
	}
	if c.Int("ppl-stride") != 0 {
		return cli.Exit("perplexity: --ppl-stride other than 0 is not implemented", 2)
	}
	if c.Int("ctx-size") < 2 {
		return cli.Exit("perplexity: --ctx-size must be at least 2", 2)
	}
	if c.Int("threads") < 0 || c.Int("batch-size") <= 0 {
		return cli.Exit("perplexity: --threads must not be negative and --batch-size must be positive", 2)
	}
	kl, base := c.Bool("kl-divergence"), c.String("kl-divergence-base")
	if kl && base == "" {
		return cli.Exit("perplexity: --kl-divergence needs --kl-divergence-base FILE (the base model's saved log-probabilities)", 2)
	}
	if !kl && c.String("file") == "" {
		return cli.Exit("perplexity: -f TEXT is required", 2)
	}
	l, err := perplexity.Load(c.String("model"), forward.Options{Threads: c.Int("threads")})
	if err != nil {
		return err
	}
	defer l.Close()
	stderr := c.App.ErrWriter
	o := l.Options
	o.Chunks = c.Int("chunks")
	start := time.Now()
	if kl {
		return runKLDivergence(c, l, o, base, start)
	}
	o.Context = c.Int("ctx-size")
	if o.Context > l.CtxTrain && l.CtxTrain > 0 {
		fmt.Fprintf(stderr, "perplexity: warning: the model was trained on only %d context tokens (%d specified)\n", l.CtxTrain, o.Context)
	}
	text, err := os.ReadFile(c.String("file"))
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	tokens, err := l.Tokenizer.Encode(string(text), true, false)
	if err != nil {
		return fmt.Errorf("perplexity: tokenizing %s: %w", c.String("file"), err)
	}
	fmt.Fprintf(stderr, "perplexity: %d tokens, chunks of %d\n", len(tokens), o.Context)
	outputType := c.Int("ppl-output-type")
	// llama-perplexity evaluates max(1, batch/ctx) chunks at a time and its
	// --ppl-output-type 1 lines show the first token of the group.
	group := max(1, c.Int("batch-size")/o.Context)
	o.Progress = func(p perplexity.Progress) {
		if p.Chunk == 1 {
			printETA(c, p)
		}
		if outputType == 0 {
			fmt.Fprintf(c.App.Writer, "[%d]%.4f,", p.Chunk, p.PPL)
		} else {
			fmt.Fprintf(c.App.Writer, "%8d  %.4f  %f  %f\n", (p.Chunk-1)/group*group*o.Context, p.PPL, p.MeanNLL, p.StdNLL)
		}
	}
	var bw *perplexity.BaseWriter
	var out *writer.AtomicFile
	if base != "" {
		if out, err = writer.CreateAtomic(base, c.Bool("force")); err != nil {
			return fmt.Errorf("perplexity: %w", err)
		}
		defer out.Abort()
		bw = perplexity.NewBaseWriter(out)
	}
	res, err := perplexity.Run(c.Context, l.Model, tokens, o, bw)
	if err != nil {
		return err
	}
	if out != nil {
		if err := out.Commit(); err != nil {
			return fmt.Errorf("perplexity: %w", err)
		}
	}
	fmt.Fprintln(c.App.Writer)
	if res.StdErr == 0 {
		return errors.New("perplexity: unexpected negative standard deviation of log(prob)")
	}
	fmt.Fprintf(c.App.Writer, "Final estimate: PPL = %.4f +/- %.5f\n", res.PPL, res.StdErr)
	fmt.Fprintf(stderr, "perplexity: %d chunks, %d positions scored in %.1f s\n", res.Chunks, res.Count, time.Since(start).Seconds())
	return nil
}

// printETA prints the first chunk's time and the estimate for all, as
// llama-perplexity does.
func printETA(c *cli.Context, p perplexity.Progress) {
	secs := p.Elapsed.Seconds()
	total := int(secs * float64(p.Chunks))
	eta := ""
	if total >= 3600 {
		eta = fmt.Sprintf("%d hours ", total/3600)
		total %= 3600
	}
	fmt.Fprintf(c.App.ErrWriter, "perplexity: %.2f seconds per pass - ETA %s%.2f minutes\n", secs, eta, float64(total)/60)
}

func runKLDivergence(c *cli.Context, l *perplexity.Loaded, o perplexity.Options, path string, start time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	defer f.Close()
	b, err := perplexity.OpenBase(f)
	if err != nil {
		return err
	}
	if o.Chunks > 0 && o.Chunks < b.Chunks {
		b.Chunks = o.Chunks
	}
	w := c.App.Writer
	o.Progress = func(p perplexity.Progress) {
		if p.Chunk == 1 {
			printETA(c, p)
			fmt.Fprintf(w, "\n%s\n", perplexity.KLHeader)
		}
		fmt.Fprintln(w, p.KL.ChunkLine(p.Chunk))
	}
	res, err := perplexity.Compare(c.Context, l.Model, b, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	res.WriteReport(w)
	fmt.Fprintf(c.App.ErrWriter, "perplexity: %d chunks, %d positions compared in %.1f s\n", b.Chunks, res.Count, time.Since(start).Seconds())
	return nil
}
