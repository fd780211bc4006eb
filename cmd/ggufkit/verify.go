package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/verify"
)

// Exit statuses of verify: 0 within thresholds, 1 failed, 2 could not run.
const (
	verifyFailed    = 1
	verifyCannotRun = 2
)

// errVerifyFailed is returned (with status 1) when the report says the file
// is wrong; the report itself has been printed.
var errVerifyFailed = errors.New("verify: the file fails verification")

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check a GGUF: structure, every tensor against a reference, a forward pass (KL, top-1, greedy text)",
		ArgsUsage: "OUT.gguf\n\n" +
			"Without --source: the structural checks (metadata llama.cpp needs, tensor set and shapes,\n" +
			"finite values, tokenizer) and the greedy continuation of the prompt; the verdict reflects the\n" +
			"structural checks only. With --source (a GGUF such as the F32 conversion of the same model, or\n" +
			"the checkpoint folder or file OUT was converted from): every tensor and key against it, and the\n" +
			"KL divergence / top-1 agreement of the two forward passes, within limits measured on the model.\n" +
			"Exit status: 0 pass, 1 fail, 2 could not run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "source", Usage: "reference `PATH`: a GGUF file, or the checkpoint OUT was converted from (mapped through the converter's plan)"},
			&cli.StringFlag{Name: "prompt", Value: verify.DefaultPrompt, Usage: "`TEXT` of the forward pass, tokenized with OUT's vocabulary"},
			&cli.IntFlag{Name: "n-predict", Value: verify.DefaultNPredict, Usage: "greedy tokens to generate (`N` ≥ 0)"},
			&cli.IntFlag{Name: "threads", Usage: "goroutines for decoding and matrix products (`N`, 0: all CPUs)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		Action: runVerify,
	}
}

func runVerify(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("verify: expected one OUT.gguf", verifyCannotRun)
	}
	if c.Int("n-predict") < 0 || c.Int("threads") < 0 {
		return cli.Exit("verify: --n-predict and --threads must not be negative", verifyCannotRun)
	}
	path := c.Args().First()
	cannot := func(err error) error { return &exitError{code: verifyCannotRun, err: err} }
	f, err := verify.Open(path)
	if err != nil {
		return cannot(err)
	}
	defer f.Close()
	var ref verify.Reference
	source := c.String("source")
	if source != "" {
		r, closeRef, err := openReference(c, source, f.Architecture() == "clip")
		if err != nil {
			return cannot(err)
		}
		defer closeRef()
		ref = r
	}
	opts := verify.Options{Prompt: c.String("prompt"), NPredict: c.Int("n-predict"), Threads: c.Int("threads")}
	if opts.NPredict == 0 {
		opts.NPredict = -1 // Options: 0 means the default, negative none
	}
	if opts.Prompt == "" {
		return cli.Exit("verify: --prompt must not be empty", verifyCannotRun)
	}
	start := time.Now()
	rep, err := verify.Run(c.Context, f, ref, opts)
	if err != nil {
		return cannot(err)
	}
	w := bufio.NewWriter(c.App.Writer)
	if c.Bool("json") {
		err = writeVerifyJSON(w, rep)
	} else {
		writeVerifyText(w, path, source, rep, time.Since(start))
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return cannot(err)
	}
	if !rep.OK {
		return &exitError{code: verifyFailed, err: errVerifyFailed}
	}
	return nil
}

// openReference opens --source: a GGUF file (or the first shard of a
// gguf-split set) as it is, anything else as a checkpoint mapped through
// the converter's plan (computed on demand), the projector's when mmproj.
func openReference(c *cli.Context, path string, mmproj bool) (verify.Reference, func(), error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("--source: %w", err)
	}
	if isGGUF(path) {
		f, err := verify.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--source: %w", err)
		}
		return verify.GGUFReference(f), func() { f.Close() }, nil
	}
	open := verify.OpenCheckpoint
	if mmproj {
		open = verify.OpenMMProjCheckpoint // the file is a projector: compare with the --mmproj mapping
	}
	ref, err := open(c.Context, path)
	if err != nil {
		return nil, nil, fmt.Errorf("--source: %w", err)
	}
	return ref, func() { ref.Close() }, nil
}

// jsonFloat prints a float64, with NaN and infinities (a relative error
// against an all-zero reference) as null.
type jsonFloat float64

func (x jsonFloat) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

type verifyTensorJSON struct {
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	RMSE     jsonFloat `json:"rmse"`
	MaxAbs   jsonFloat `json:"max_abs"`
	Cosine   jsonFloat `json:"cosine"`
	RelError jsonFloat `json:"rel_error"`
	Limit    jsonFloat `json:"limit"`
	OK       bool      `json:"ok"`
}

type verifyForwardJSON struct {
	PromptIDs       []int      `json:"prompt_ids"`
	KLMean          *jsonFloat `json:"kl_mean"`
	KLMax           *jsonFloat `json:"kl_max"`
	Top1            *jsonFloat `json:"top1"`
	GreedyIDs       []int      `json:"greedy_ids"`
	GreedyText      string     `json:"greedy_text"`
	SourceGreedyIDs []int      `json:"source_greedy_ids"`
	// Beyond the documented shape: the thresholds and what decided them.
	SourceGreedyText string     `json:"source_greedy_text,omitempty"`
	KL               []float64  `json:"kl,omitempty"`
	KLLimit          *jsonFloat `json:"kl_limit,omitempty"`
	Top1Decisive     *jsonFloat `json:"top1_decisive,omitempty"`
	Decisive         *int       `json:"decisive_positions,omitempty"`
	Top1Limit        *jsonFloat `json:"top1_limit,omitempty"`
	NoiseKL          *jsonFloat `json:"noise_kl,omitempty"`
	MatrixError      *jsonFloat `json:"matrix_error,omitempty"`
}

// verifyEncoderJSON is an encoder's forward pass (arch bert).
type verifyEncoderJSON struct {
	PromptIDs   []int      `json:"prompt_ids"`
	Pooling     string     `json:"pooling"`
	Pooled      []float32  `json:"pooled"`
	RefPooling  string     `json:"source_pooling,omitempty"`
	RefPooled   []float32  `json:"source_pooled,omitempty"`
	Cosine      *jsonFloat `json:"cosine,omitempty"`
	TokenCosine *jsonFloat `json:"token_cosine,omitempty"`
	CosineLimit *jsonFloat `json:"cosine_limit,omitempty"`
	RelError    *jsonFloat `json:"rel_error,omitempty"`
	RelLimit    *jsonFloat `json:"rel_limit,omitempty"`
}

// verifyVisionJSON is a projector file's vision tower run over the fixed
// image.
type verifyVisionJSON struct {
	Width  int `json:"image_width"`
	Height int `json:"image_height"`
	verifyFeaturesJSON
}

// verifyFeaturesJSON is a tower's features and, with a source, their
// agreement with the source's.
type verifyFeaturesJSON struct {
	Tokens      int        `json:"tokens"`
	Dim         int        `json:"dim"`
	Cosine      *jsonFloat `json:"cosine,omitempty"`
	TokenCosine *jsonFloat `json:"token_cosine,omitempty"`
	CosineLimit *jsonFloat `json:"cosine_limit,omitempty"`
	RelError    *jsonFloat `json:"rel_error,omitempty"`
	RelLimit    *jsonFloat `json:"rel_limit,omitempty"`
	MatrixError *jsonFloat `json:"matrix_error,omitempty"`
}

// featuresJSON is a tower's agreement for the JSON report.
func featuresJSON(rep *verify.Report, a *verify.FeatureAgreement) verifyFeaturesJSON {
	j := verifyFeaturesJSON{Tokens: a.Tokens, Dim: a.Dim}
	if rep.HasReference {
		j.Cosine, j.TokenCosine, j.CosineLimit = ptr(jsonFloat(a.Cosine)), ptr(jsonFloat(a.TokenCosine)), ptr(jsonFloat(a.CosineLimit))
		j.RelError, j.RelLimit, j.MatrixError = ptr(jsonFloat(a.RelError)), ptr(jsonFloat(a.RelLimit)), ptr(jsonFloat(a.MatrixError))
	}
	return j
}

// verifyAudioJSON is a projector file's audio encoder run over the fixed
// log-mel input.
type verifyAudioJSON struct {
	Bins   int `json:"mel_bins"`
	Frames int `json:"frames"`
	verifyFeaturesJSON
}

type verifyJSON struct {
	OK       bool               `json:"ok"`
	Tensors  []verifyTensorJSON `json:"tensors"`
	Forward  *verifyForwardJSON `json:"forward"`
	Encoder  *verifyEncoderJSON `json:"encoder,omitempty"`
	Vision   *verifyVisionJSON  `json:"vision,omitempty"`
	Audio    *verifyAudioJSON   `json:"audio,omitempty"`
	Arch     string             `json:"arch"`
	Problems []string           `json:"problems"`
	Warnings []string           `json:"warnings"`
}

func ptr[T any](x T) *T { return &x }

// writeVerifyJSON prints {"ok", "tensors": [...], "forward": {...}} (the shape
// of issue 8), plus the architecture, problems and warnings.
func writeVerifyJSON(w io.Writer, rep *verify.Report) error {
	out := verifyJSON{OK: rep.OK, Arch: rep.Arch, Tensors: []verifyTensorJSON{}, Problems: []string{}, Warnings: rep.Warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, p.String())
	}
	for _, t := range rep.Tensors {
		out.Tensors = append(out.Tensors, verifyTensorJSON{
			Name: t.Name, Type: t.Type.String(), RMSE: jsonFloat(t.RMSE), MaxAbs: jsonFloat(t.MaxAbs),
			Cosine: jsonFloat(t.Cosine), RelError: jsonFloat(t.RelError), Limit: jsonFloat(t.Limit), OK: t.OK,
		})
	}
	if fw := rep.Forward; fw != nil {
		fj := &verifyForwardJSON{
			PromptIDs: nonNil(fw.PromptIDs), GreedyIDs: nonNil(fw.GreedyIDs), GreedyText: fw.GreedyText,
			SourceGreedyIDs: fw.SourceGreedyIDs, SourceGreedyText: fw.SourceGreedyText,
		}
		if rep.HasReference {
			fj.SourceGreedyIDs = nonNil(fw.SourceGreedyIDs)
			fj.KL = fw.KL
			fj.KLMean, fj.KLMax, fj.Top1 = ptr(jsonFloat(fw.KLMean)), ptr(jsonFloat(fw.KLMax)), ptr(jsonFloat(fw.Top1))
			fj.KLLimit, fj.Top1Limit = ptr(jsonFloat(fw.KLLimit)), ptr(jsonFloat(fw.Top1Limit))
			fj.Top1Decisive, fj.Decisive = ptr(jsonFloat(fw.Top1Decisive)), ptr(fw.Decisive)
			fj.NoiseKL, fj.MatrixError = ptr(jsonFloat(fw.NoiseKL)), ptr(jsonFloat(fw.MatrixError))
		}
		out.Forward = fj
	}
	if en := rep.Encoder; en != nil {
		ej := &verifyEncoderJSON{PromptIDs: nonNil(en.PromptIDs), Pooling: en.Pooling.String(), Pooled: en.Pooled}
		if rep.HasReference {
			ej.RefPooling, ej.RefPooled = en.RefPooling.String(), en.RefPooled
			ej.Cosine, ej.TokenCosine, ej.CosineLimit = ptr(jsonFloat(en.Cosine)), ptr(jsonFloat(en.TokenCosine)), ptr(jsonFloat(en.CosineLimit))
			ej.RelError, ej.RelLimit = ptr(jsonFloat(en.RelError)), ptr(jsonFloat(en.RelLimit))
		}
		out.Encoder = ej
	}
	if vr := rep.Vision; vr != nil {
		out.Vision = &verifyVisionJSON{Width: vr.Width, Height: vr.Height, verifyFeaturesJSON: featuresJSON(rep, &vr.FeatureAgreement)}
	}
	if ar := rep.Audio; ar != nil {
		out.Audio = &verifyAudioJSON{Bins: ar.Bins, Frames: ar.Frames, verifyFeaturesJSON: featuresJSON(rep, &ar.FeatureAgreement)}
	}
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	e.SetIndent("", " ")
	return e.Encode(out)
}

func nonNil(xs []int) []int {
	if xs == nil {
		return []int{}
	}
	return xs
}

// writeVerifyText prints the human report: the verdict, the worst tensors,
// the forward pass and every problem.
func writeVerifyText(w io.Writer, path, source string, rep *verify.Report, took time.Duration) {
	fmt.Fprintf(w, "verify %s (%s)", path, rep.Arch)
	if source != "" {
		fmt.Fprintf(w, " against %s", source)
	}
	fmt.Fprintln(w)
	if len(rep.Tensors) > 0 {
		over := 0
		for _, t := range rep.Tensors {
			if !t.OK {
				over++
			}
		}
		fmt.Fprintf(w, "\ntensors: %d compared, %d over their type's limit; worst %d (relative error / limit):\n",
			len(rep.Tensors), over, min(10, len(rep.Tensors)))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "tensor\ttype\trmse\tmax abs\tcosine\trel err\tlimit\t")
		for _, t := range rep.Worst(10) {
			mark := ""
			if !t.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(tw, "%s\t%s\t%.3g\t%.3g\t%.6f\t%.3g\t%.3g\t%s\n", t.Name, t.Type, t.RMSE, t.MaxAbs, t.Cosine, t.RelError, t.Limit, mark)
		}
		tw.Flush()
	}
	if fw := rep.Forward; fw != nil {
		fmt.Fprintf(w, "\nforward: prompt of %d tokens %v\n", len(fw.PromptIDs), fw.PromptIDs)
		if rep.HasReference && len(fw.KL) > 0 {
			fmt.Fprintf(w, "  KL divergence over %d positions: mean %.4g, max %.4g (limit %.4g: %g × the %.3g of noise as large as the tensor errors)\n",
				len(fw.KL), fw.KLMean, fw.KLMax, fw.KLLimit, verify.KLMargin, fw.NoiseKL)
			fmt.Fprintf(w, "  top-1 agreement: %.3f; on the %d decisive positions %.3f (limit %.3f for a matrix error of %.3g)\n",
				fw.Top1, fw.Decisive, fw.Top1Decisive, fw.Top1Limit, fw.MatrixError)
		}
		fmt.Fprintf(w, "  greedy:        %v\n                 %q\n", fw.GreedyIDs, fw.GreedyText)
		if rep.HasReference {
			fmt.Fprintf(w, "  source greedy: %v\n                 %q\n", fw.SourceGreedyIDs, fw.SourceGreedyText)
		}
	}
	if en := rep.Encoder; en != nil {
		fmt.Fprintf(w, "\nencoder: prompt of %d tokens %v, %s pooling\n", len(en.PromptIDs), en.PromptIDs, en.Pooling)
		if rep.HasReference {
			fmt.Fprintf(w, "  cosine with the source: pooled %.7f, last hidden states at least %.7f (limit %.7f for a matrix error of %.3g)\n",
				en.Cosine, en.TokenCosine, en.CosineLimit, en.MatrixError)
			fmt.Fprintf(w, "  pooled relative error %.3g (limit %.3g)\n", en.RelError, en.RelLimit)
		}
	}
	if vr := rep.Vision; vr != nil {
		fmt.Fprintf(w, "\nvision tower: fixed %d×%d image → %d image features of %d values\n", vr.Width, vr.Height, vr.Tokens, vr.Dim)
		printAgreement(w, rep, &vr.FeatureAgreement)
	}
	if ar := rep.Audio; ar != nil {
		fmt.Fprintf(w, "\naudio encoder: fixed %d-bin log-mel input of %d frames → %d audio features of %d values\n", ar.Bins, ar.Frames, ar.Tokens, ar.Dim)
		printAgreement(w, rep, &ar.FeatureAgreement)
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, s := range rep.Warnings {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	fmt.Fprintln(w)
	verdict := "PASS"
	if !rep.OK {
		verdict = fmt.Sprintf("FAIL: %d problem(s)", len(rep.Problems))
	}
	scope := ""
	if !rep.HasReference {
		scope = " (structural checks only: no --source)"
	}
	fmt.Fprintf(w, "%s%s in %.2f s\n", verdict, scope, took.Seconds())
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(p.String()))
	}
}

// printAgreement prints a tower's agreement with the source's, when there
// is a source.
func printAgreement(w io.Writer, rep *verify.Report, a *verify.FeatureAgreement) {
	if !rep.HasReference {
		return
	}
	fmt.Fprintf(w, "  cosine with the source: %.7f, per token at least %.7f (limit %.7f for a matrix error of %.3g)\n",
		a.Cosine, a.TokenCosine, a.CosineLimit, a.MatrixError)
	fmt.Fprintf(w, "  relative error %.3g (limit %.3g)\n", a.RelError, a.RelLimit)
}
