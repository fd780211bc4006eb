package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/perplexity"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/requantize"
)

func convertCommand() *cli.Command {
	return &cli.Command{
		Name:  "convert",
		Usage: "convert a checkpoint to GGUF like llama.cpp's converters (same bytes), or straight to a llama-quantize type",
		ArgsUsage: "MODEL\n\n" +
			"MODEL is a model folder, a weights file (.safetensors, .bin, .pth) or a Hugging Face cache entry\n" +
			"(…/hub/models--org--name), or hf:ORG/NAME[@REVISION] to read a Hugging Face Hub repository's safetensors by\n" +
			"HTTP range requests without downloading them (HF_ENDPOINT, HF_TOKEN; files in the local HF cache are used). A folder in Meta's original layout (consolidated.NN.pth + params.json +\n" +
			"tokenizer.model) is converted as convert_legacy_llama.py does. --outtype takes convert_hf_to_gguf.py's types (f32 f16 bf16 q8_0 tq1_0\n" +
			"tq2_0 auto), any llama-quantize type (Q4_K_M, IQ4_XS …) or ggml type (ggml:Q5_K, MXFP4 …), quantized\n" +
			"in one pass from the source with llama-quantize's mix rules. --mmproj writes a vision or audio model's projector\n" +
			"(llama-mtmd-cli -m model.gguf --mmproj mmproj-model.gguf) as convert_hf_to_gguf.py --mmproj does; --with-mmproj writes both.\n\n" +
			"With --lora ADAPTER_DIR --base BASE (and no MODEL), a PEFT LoRA adapter (adapter_config.json +\n" +
			"adapter_model.safetensors or .bin) is converted as convert_lora_to_gguf.py does, for the base model whose\n" +
			"config.json BASE gives (its folder or the file); --outtype f32 (default), f16, bf16, q8_0 or auto.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "outtype", Value: "auto", Usage: "output `TYPE`"},
			&cli.StringFlag{Name: "outfile", Usage: "output `PATH` (may contain {ftype}); default: the model folder, named by the GGUF naming convention"},
			&cli.StringFlag{Name: "model-name", Usage: "general.name"},
			&cli.StringFlag{Name: "metadata", Usage: "JSON `FILE` of general.* overrides"},
			&cli.BoolFlag{Name: "vocab-only", Usage: "write only the metadata and the tokenizer"},
			&cli.BoolFlag{Name: "mmproj", Usage: "write the multimodal projector (vision/audio towers, mmproj-*.gguf) instead of the text model"},
			&cli.BoolFlag{Name: "with-mmproj", Usage: "write the text model and then its multimodal projector (mmproj- + the --outfile name; f16 when --outtype is a llama-quantize type)"},
			&cli.StringFlag{Name: "tokenizer-pre", Usage: "BPE pre-tokenizer `NAME` (tokenizer.ggml.pre) instead of identifying it"},
			&cli.IntFlag{Name: "split-max-tensors", Usage: "at most `N` tensors per shard"},
			&cli.StringFlag{Name: "split-max-size", Value: "0", Usage: "at most `SIZE` bytes of tensors per shard (K, M, G: powers of 1000)"},
			&cli.BoolFlag{Name: "no-tensor-first-split", Usage: "put no tensors in the first shard"},
			&cli.BoolFlag{Name: "dry-run", Usage: "plan the output (files, tensors, types, sizes) and write nothing"},
			&cli.IntFlag{Name: "threads", Usage: "tensors converted at once (default: all CPUs)"},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "overwrite an existing output file"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a line per tensor"},
			&cli.StringFlag{Name: "lora", Usage: "convert the PEFT LoRA adapter in `ADAPTER_DIR` instead of a model (needs --base)"},
			&cli.StringFlag{Name: "base", Usage: "--lora: the base model's folder or its config.json (`BASE`); only the configuration is read"},
			&cli.BoolFlag{Name: "list-architectures", Usage: "print the supported config.json architectures and exit"},
			// llama-quantize's options, for a preset or ggml --outtype.
			&cli.StringFlag{Name: "imatrix", Usage: "importance matrix `FILE` (GGUF or legacy .dat) for a quantized --outtype"},
			&cli.StringFlag{Name: "imatrix-text", Usage: "compute the importance matrix for a quantized --outtype in the same run, from this calibration `TEXT` (the checkpoint is first converted to a temporary 16-bit GGUF and run over the text as ggufkit imatrix does)"},
			&cli.IntFlag{Name: "imatrix-ctx", Value: 512, Usage: "--imatrix-text: chunk length in tokens (`N`)"},
			&cli.IntFlag{Name: "imatrix-chunks", Value: -1, Usage: "--imatrix-text: process at most `N` chunks (-1: all)"},
			&cli.StringSliceFlag{Name: "include-weights", Usage: "use imatrix entries only for tensors whose name contains `S`"},
			&cli.StringSliceFlag{Name: "exclude-weights", Usage: "ignore imatrix entries for tensors whose name contains `S`"},
			&cli.BoolFlag{Name: "pure", Usage: "quantized --outtype: every quantizable tensor gets the default type (no mix rules)"},
			&cli.BoolFlag{Name: "leave-output-tensor", Usage: "quantized --outtype: leave output.weight unquantized"},
			&cli.StringFlag{Name: "output-tensor-type", Usage: "quantized --outtype: ggml `TYPE` for output.weight"},
			&cli.StringFlag{Name: "token-embedding-type", Usage: "quantized --outtype: ggml `TYPE` for token_embd.weight"},
			&cli.StringSliceFlag{Name: "tensor-type", Usage: "quantized --outtype: `PATTERN=TYPE` (regex, first match wins)"},
		},
		Action: runConvert,
	}
}

func runConvert(c *cli.Context) error {
	w := c.App.Writer
	if c.Bool("list-architectures") {
		list := arch.Supported
		if c.Bool("mmproj") {
			list = arch.SupportedMMProj
		}
		for _, a := range list() {
			fmt.Fprintln(w, a)
		}
		return nil
	}
	if c.IsSet("lora") || c.IsSet("base") {
		return runConvertLoRA(c)
	}
	if c.Bool("mmproj") && c.Bool("with-mmproj") {
		return cli.Exit("convert: --mmproj writes the projector only, --with-mmproj both files: give one", 2)
	}
	if c.NArg() != 1 {
		return cli.Exit("convert: expected one MODEL (a folder, a weights file, a Hugging Face cache entry or hf:ORG/NAME)", 2)
	}
	maxSize, err := parseSplitSize(c.String("split-max-size"))
	if err != nil {
		return cli.Exit("convert: --split-max-size: "+err.Error(), 2)
	}
	if c.Int("split-max-tensors") < 0 || c.Int("threads") < 0 {
		return cli.Exit("convert: --split-max-tensors and --threads must not be negative", 2)
	}
	opts := convert.Options{
		OutType:            strings.TrimSpace(c.String("outtype")),
		OutFile:            c.String("outfile"),
		ModelName:          c.String("model-name"),
		MetadataFile:       c.String("metadata"),
		VocabOnly:          c.Bool("vocab-only"),
		TokenizerPre:       c.String("tokenizer-pre"),
		SplitMaxTensors:    c.Int("split-max-tensors"),
		SplitMaxSize:       maxSize,
		NoTensorFirstSplit: c.Bool("no-tensor-first-split"),
		DryRun:             c.Bool("dry-run"),
		Threads:            c.Int("threads"),
		Overwrite:          c.Bool("force"),
		MMProj:             c.Bool("mmproj"),
	}
	qopts := requantize.Options{Pure: c.Bool("pure"), LeaveOutput: c.Bool("leave-output-tensor")}
	if err := quantizeFlags(c, &qopts); err != nil {
		return err
	}
	opts.Quantize = qopts
	if text := c.String("imatrix-text"); text != "" {
		if err := imatrixFromText(c, text, &opts); err != nil {
			return err
		}
	}

	if err := convertOne(c, opts); err != nil {
		return err
	}
	if !c.Bool("with-mmproj") {
		return nil
	}
	// The projector's tensors are the ones the text model left out: each
	// checkpoint tensor is read by one of the two conversions.
	opts.MMProj = true
	if !slices.Contains([]string{"f32", "f16", "bf16", "q8_0", "auto"}, strings.ToLower(opts.OutType)) {
		opts.OutType = "f16" // the projector has no llama-quantize types
	}
	if opts.OutFile != "" && !isDirArg(opts.OutFile) {
		opts.OutFile = filepath.Join(filepath.Dir(opts.OutFile), "mmproj-"+filepath.Base(opts.OutFile))
	}
	return convertOne(c, opts)
}

// isDirArg tells whether an --outfile names a folder.
func isDirArg(path string) bool {
	if strings.HasSuffix(path, string(os.PathSeparator)) {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// convertOne runs one conversion with its progress display and prints its
// summary.
func convertOne(c *cli.Context, opts convert.Options) error {
	w := c.App.Writer
	verbose := c.Bool("verbose") || opts.DryRun
	progress := newConvertProgress(c.App.ErrWriter, !c.Bool("quiet") && !verbose)
	var mu sync.Mutex
	opts.OnStart = func(_ int, bytes int64) { progress.start(bytes) }
	opts.Hub.Progress = func(n int64) { progress.network.Add(n) }
	opts.OnTensor = func(t convert.TensorReport) {
		mu.Lock()
		defer mu.Unlock()
		if verbose {
			fmt.Fprintf(w, "[%4d/%4d] %-40s %-8s → %-7s %-18s %10s\n", t.Index+1, t.Count, t.Name, t.SourceDType, t.Type,
				shapeString(t.Shape), humanBytes(t.Bytes))
		}
		progress.add(t.Count, int64(t.Bytes))
	}
	rep, err := convert.Run(c.Context, c.Args().First(), opts)
	progress.finish()
	if err != nil {
		return err
	}
	secs := rep.Duration.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(rep.Bytes) / 1e6 / secs
	}
	verb := "wrote"
	if opts.DryRun {
		verb = "would write"
	}
	fmt.Fprintf(w, "%s %s: %s, %d tensors, %s in %.2f s (%.0f MB/s), peak memory %s\n", verb,
		strings.Join(rep.Outputs, ", "), rep.FileType, rep.Tensors, humanBytes(uint64(rep.Bytes)), secs, rate, humanBytes(peakRSS()))
	if n := progress.network.Load(); n > 0 {
		fmt.Fprintf(w, "read %s over the network (%.1f MB/s)\n", humanBytes(uint64(n)), float64(n)/1e6/max(secs, 1e-3))
	}
	return nil
}

// parseSplitSize is convert_hf_to_gguf.py's split_str_to_n_bytes: a number
// of bytes, or a number with K, M or G (powers of 1000).
func parseSplitSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1000*1000, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1000*1000*1000, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q (a number of bytes, or with K, M or G)", s)
	}
	return n * mult, nil
}

func shapeString(shape []uint64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// convertProgress draws a progress bar of output bytes on a terminal.
type convertProgress struct {
	bar   *progressbar.ProgressBar
	out   io.Writer
	on    bool
	done  int
	total int64
	// network counts the bytes read over HTTP (a hf: model).
	network atomic.Int64
}

// start sets the bar's total (bytes of tensor data to write).
func (p *convertProgress) start(total int64) { p.total = total }

// newConvertProgress shows a bar on out when enabled and out is a
// terminal.
func newConvertProgress(out io.Writer, enabled bool) *convertProgress {
	p := &convertProgress{out: out}
	if f, ok := out.(*os.File); ok && enabled {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *convertProgress) add(count int, bytes int64) {
	if !p.on {
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(max(p.total, 1),
			progressbar.OptionSetWriter(p.out),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetDescription("converting"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	p.done++
	desc := fmt.Sprintf("tensor %d/%d", p.done, count)
	if n := p.network.Load(); n > 0 {
		desc += fmt.Sprintf(", %s over the network", humanBytes(uint64(n)))
	}
	p.bar.Describe(desc)
	_ = p.bar.Add64(bytes)
}

func (p *convertProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// imatrixFromText computes an importance matrix for opts's quantized
// output from a calibration text: the checkpoint converted to a temporary
// GGUF at its own precision (--outtype auto), run over the text as
// ggufkit imatrix runs, the matrix then used as --imatrix would be.
func imatrixFromText(c *cli.Context, text string, opts *convert.Options) error {
	switch {
	case c.String("imatrix") != "":
		return cli.Exit("convert: --imatrix and --imatrix-text cannot be combined", 2)
	case convert.IsConverterType(opts.OutType):
		return cli.Exit(fmt.Sprintf("convert: --imatrix-text needs a quantized --outtype (a llama-quantize preset or ggml type), not %q", opts.OutType), 2)
	case opts.DryRun || opts.VocabOnly || opts.MMProj:
		return cli.Exit("convert: --imatrix-text cannot be combined with --dry-run, --vocab-only or --mmproj", 2)
	case c.Int("imatrix-ctx") < 2:
		return cli.Exit("convert: --imatrix-ctx must be at least 2", 2)
	}
	if _, err := os.Stat(text); err != nil {
		return fmt.Errorf("convert: --imatrix-text: %w", err)
	}
	dir, err := os.MkdirTemp("", "ggufkit-imatrix-")
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer os.RemoveAll(dir)
	stderr := c.App.ErrWriter
	tmp := *opts
	tmp.OutType, tmp.OutFile, tmp.Quantize = "auto", filepath.Join(dir, "model.gguf"), requantize.Options{}
	tmp.SplitMaxTensors, tmp.SplitMaxSize, tmp.OnStart, tmp.OnTensor, tmp.Overwrite = 0, 0, nil, nil, false
	fmt.Fprintf(stderr, "convert: converting to a temporary GGUF for the importance matrix\n")
	if _, err := convert.Run(c.Context, c.Args().First(), tmp); err != nil {
		return err
	}
	stats := imatrix.NewStats(c.Int("imatrix-ctx"))
	run := imatrixRun{model: tmp.OutFile, text: text, nctx: c.Int("imatrix-ctx"), chunks: c.Int("imatrix-chunks"), threads: opts.Threads}
	res, err := run.collect(c, stats, func(p perplexity.Progress) {
		if p.Chunk == 1 {
			printETA(c, p)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "convert: importance matrix of %d chunks (%d entries), text perplexity %.4f\n", stats.LastChunk, len(stats.Entries()), res.PPL)
	path := filepath.Join(dir, "imatrix.gguf")
	if err := stats.WriteGGUF(c.Context, path, false); err != nil {
		return err
	}
	m, err := imatrix.Load(path)
	if err != nil {
		return err
	}
	m.Filter(c.StringSlice("include-weights"), c.StringSlice("exclude-weights"))
	if err := m.CheckFinite(); err != nil {
		return err
	}
	if len(m.Weights) > 0 {
		opts.Quantize.IMatrix, opts.Quantize.IMatrixFile = m, text
	}
	return os.Remove(tmp.OutFile) // the quantized output may need the space
}
