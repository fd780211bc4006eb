package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/requantize"
)

func quantizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "quantize",
		Usage: "requantize a GGUF like llama-quantize (same presets, mix rules and bytes)",
		ArgsUsage: "IN.gguf [OUT.gguf] TYPE [NTHREADS]\n\n" +
			"TYPE is a llama-quantize type (Q4_K_M, IQ2_S, Q4_K, COPY … or its number), else a ggml type\n" +
			"(MXFP4, NVFP4, Q1_0 …); ggml:NAME always means the ggml type itself (ggml:IQ2_S).\n" +
			"Without OUT the output is IN's folder/ggml-model-TYPE.gguf, as llama-quantize names it.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "allow-requantize", Usage: "allow quantizing tensors that are already quantized"},
			&cli.BoolFlag{Name: "leave-output-tensor", Usage: "leave output.weight unquantized"},
			&cli.BoolFlag{Name: "pure", Usage: "give every quantizable tensor the default type (no mix rules)"},
			&cli.StringFlag{Name: "imatrix", Usage: "importance matrix `FILE` (GGUF or legacy .dat)"},
			&cli.StringSliceFlag{Name: "include-weights", Usage: "use imatrix entries only for tensors whose name contains `S`"},
			&cli.StringSliceFlag{Name: "exclude-weights", Usage: "ignore imatrix entries for tensors whose name contains `S`"},
			&cli.StringFlag{Name: "output-tensor-type", Usage: "ggml `TYPE` for output.weight"},
			&cli.StringFlag{Name: "token-embedding-type", Usage: "ggml `TYPE` for token_embd.weight"},
			&cli.StringSliceFlag{Name: "tensor-type", Usage: "`PATTERN=TYPE`: tensors matching the regex get TYPE (first match wins)"},
			&cli.StringSliceFlag{Name: "override-kv", Usage: "`KEY=TYPE:VALUE` (int, float, bool, str) set in the output metadata"},
			&cli.StringFlag{Name: "prune-layers", Usage: "comma-separated block `IDS` to remove"},
			&cli.BoolFlag{Name: "keep-split", Usage: "write one output shard per input shard"},
			&cli.BoolFlag{Name: "dry-run", Usage: "show each tensor's decision and the sizes; write nothing"},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "overwrite an existing output file"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a line per tensor"},
		},
		Action: runQuantize,
	}
}

func runQuantize(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 2 || len(args) > 4 {
		return cli.Exit("quantize: expected IN.gguf [OUT.gguf] TYPE [NTHREADS]", 2)
	}
	in := args[0]
	var out, typeArg string
	rest := args[1:]
	if target, err := mix.ParseTarget(rest[0]); err == nil && target.Preset != nil && !looksLikePath(rest[0]) {
		// IN TYPE [NTHREADS]: llama-quantize's default output name.
		typeArg = rest[0]
		out = filepath.Join(filepath.Dir(in), "ggml-model-"+target.Preset.Name+".gguf")
		rest = rest[1:]
	} else {
		if len(rest) < 2 {
			return cli.Exit("quantize: missing TYPE", 2)
		}
		out, typeArg, rest = rest[0], rest[1], rest[2:]
	}
	target, err := mix.ParseTarget(typeArg)
	if err != nil {
		return err
	}
	opts := requantize.Options{
		Target:          target,
		Pure:            c.Bool("pure"),
		LeaveOutput:     c.Bool("leave-output-tensor"),
		AllowRequantize: c.Bool("allow-requantize"),
		KeepSplit:       c.Bool("keep-split"),
		DryRun:          c.Bool("dry-run"),
		Overwrite:       c.Bool("force"),
	}
	if len(rest) == 1 {
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 0 {
			return cli.Exit(fmt.Sprintf("quantize: invalid NTHREADS %q", rest[0]), 2)
		}
		opts.Workers = n
	}
	if err := quantizeFlags(c, &opts); err != nil {
		return err
	}
	verbose := c.Bool("verbose") || opts.DryRun
	w := c.App.Writer
	opts.OnTensor = func(t requantize.TensorReport) {
		if t.Warning != "" {
			fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", t.Warning)
		}
		if verbose {
			printTensorLine(w, t)
		}
	}
	start := time.Now()
	rep, err := requantize.Run(c.Context, in, out, opts)
	if err != nil {
		return err
	}
	before, after := rep.BitsPerWeight()
	dest := strings.Join(rep.Outputs, ", ")
	if opts.DryRun {
		dest = "(dry run, nothing written)"
	}
	fmt.Fprintf(w, "%s → %s: %s (%.2f bpw) → %s (%.2f bpw), %d tensors, %.2f s\n", in, dest,
		humanBytes(rep.SizeBefore), before, humanBytes(rep.SizeAfter), after, len(rep.Tensors), time.Since(start).Seconds())
	if rep.Fallbacks > 0 {
		fmt.Fprintf(w, "%d of %d tensors needed a fallback type (rows not a multiple of the block size)\n", rep.Fallbacks, len(rep.Tensors))
	}
	if rep.NeedsImatrix {
		fmt.Fprintln(w, "note: this quantization will require an importance matrix (--imatrix)")
	}
	return nil
}

// looksLikePath tells an output file name from a type name in the second
// positional argument (a file named "Q4_K_M" would be ambiguous, as in
// llama-quantize; a ".gguf" suffix or a slash settles it).
func looksLikePath(s string) bool {
	return strings.HasSuffix(s, ".gguf") || strings.ContainsRune(s, os.PathSeparator)
}

func quantizeFlags(c *cli.Context, opts *requantize.Options) error {
	for _, f := range []struct {
		name string
		dst  **gguf.Type
	}{{"output-tensor-type", &opts.OutputType}, {"token-embedding-type", &opts.TokenEmbdType}} {
		if s := c.String(f.name); s != "" {
			t, err := gguf.ParseType(s)
			if err != nil {
				return fmt.Errorf("--%s: %w", f.name, err)
			}
			*f.dst = &t
		}
	}
	for _, s := range c.StringSlice("tensor-type") {
		o, err := mix.ParseTypeOverride(s)
		if err != nil {
			return err
		}
		opts.TensorTypes = append(opts.TensorTypes, o)
	}
	for _, s := range c.StringSlice("override-kv") {
		o, err := requantize.ParseKVOverride(s)
		if err != nil {
			return err
		}
		opts.KVOverrides = append(opts.KVOverrides, o)
	}
	if s := c.String("prune-layers"); s != "" {
		ids, err := requantize.ParsePruneLayers(s)
		if err != nil {
			return fmt.Errorf("--prune-layers: %w", err)
		}
		opts.PruneLayers = ids
	}
	include, exclude := c.StringSlice("include-weights"), c.StringSlice("exclude-weights")
	if len(include) > 0 && len(exclude) > 0 {
		return cli.Exit("quantize: --include-weights and --exclude-weights cannot be combined", 2)
	}
	if path := c.String("imatrix"); path != "" {
		m, err := imatrix.Load(path)
		if err != nil {
			return err
		}
		if !m.Legacy && !m.HasMetadata {
			return fmt.Errorf("%s: imatrix metadata (imatrix.datasets, chunk_count, chunk_size) is missing", path)
		}
		m.Filter(include, exclude)
		if err := m.CheckFinite(); err != nil {
			return err
		}
		if len(m.Weights) > 0 {
			opts.IMatrix, opts.IMatrixFile = m, path
		}
	}
	return nil
}

func printTensorLine(w io.Writer, t requantize.TensorReport) {
	shape := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = strconv.FormatUint(d, 10)
	}
	change := t.NewType.String()
	if t.NewType == t.OldType {
		change = "copy"
	}
	fb := ""
	if t.Fallback {
		fb = " (fallback)"
	}
	fmt.Fprintf(w, "[%4d/%4d] %-36s [%s] %6s → %-8s %10s → %10s%s\n", t.Index+1, t.Count, t.Name, strings.Join(shape, ", "),
		t.OldType, change, humanBytes(t.OldSize), humanBytes(t.NewSize), fb)
}
