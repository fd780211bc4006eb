// Package verify checks a GGUF file the way a careful reviewer would:
//
//  1. structure: the metadata llama.cpp needs is there with the types its
//     loader demands, every tensor the architecture uses is there with the
//     right shape and nothing else is, every tensor decodes to finite values,
//     and the tokenizer loads;
//  2. tensors (with a Reference): each tensor against the reference, with a
//     relative-error limit per ggml type derived from the quantizer's own
//     error on Gaussian data (TensorLimit), and the metadata key by key;
//  3. forward pass: the prompt, tokenized with the GGUF's own vocabulary, run
//     through verify/forward on the GGUF's weights and, with a Reference, on
//     the reference's: per-position KL divergence and top-1 agreement, and
//     both greedy continuations.
//
// Run returns a Report whose OK says whether every check passed; it returns
// an error only when the verification could not run (unreadable input, an
// architecture verify/forward does not implement, a reference that cannot
// be read).
package verify

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/ggufkit/ggufkit/tokenizer"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// Options configure a verification.
type Options struct {
	// Prompt is the text of the forward pass (DefaultPrompt when empty).
	Prompt string
	// NPredict is the number of greedy tokens to generate (DefaultNPredict
	// when 0; negative skips generation).
	NPredict int
	// Threads bounds the goroutines of decoding and matrix products;
	// 0 means runtime.NumCPU().
	Threads int
	// SkipForward leaves out the forward pass.
	SkipForward bool
}

// Defaults of Options.
const (
	DefaultPrompt   = "Once upon a time"
	DefaultNPredict = 32
)

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.NumCPU()
}

// Check names the part of a verification a Problem comes from.
type Check string

// The checks.
const (
	CheckMetadata  Check = "metadata"  // keys llama.cpp needs, their types and values
	CheckTensors   Check = "tensors"   // tensor set and shapes for the architecture
	CheckValues    Check = "values"    // decoding and finiteness of tensor data
	CheckTokenizer Check = "tokenizer" // the vocabulary loads and matches the reference's
	CheckReference Check = "reference" // tensors and metadata against the reference
	CheckForward   Check = "forward"   // KL divergence and top-1 agreement
)

// Problem is one reason a verification fails.
type Problem struct {
	Check   Check
	Subject string // a key or tensor name, or ""
	Msg     string
}

// String formats the problem as "check: subject: message".
func (p Problem) String() string {
	if p.Subject == "" {
		return fmt.Sprintf("%s: %s", p.Check, p.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", p.Check, p.Subject, p.Msg)
}

// Report is the outcome of a verification.
type Report struct {
	// OK is true when no check failed. Without a reference it reflects the
	// structural checks only.
	OK bool
	// Arch is general.architecture; HasReference tells whether tensor and
	// forward comparisons were made.
	Arch         string
	HasReference bool
	// Problems are the failures; Warnings are differences that do not fail
	// (descriptive general.* metadata).
	Problems []Problem
	Warnings []string
	// Tensors are the per-tensor comparisons, in file order (with a reference).
	Tensors []TensorResult
	// Forward is the forward pass, nil when it did not run.
	Forward *ForwardResult
	// Encoder is an encoder's forward pass (arch bert) in Forward's place.
	Encoder *EncoderResult
	// Vision is a projector file's vision tower run over a fixed image.
	Vision *VisionResult
	// Audio is a projector file's audio encoder run over a fixed input
	// (for a file without a vision tower verify runs).
	Audio *AudioResult
}

// ErrCannotRun wraps every error of Run: the verification could not be
// carried out (as opposed to a Report that says it failed).
var ErrCannotRun = errors.New("verify: cannot run")

type verifier struct {
	f    *File
	ref  Reference
	opts Options
	rep  *Report

	cfg    *forward.Config        // nil when the metadata is unusable
	enc    *forward.EncoderConfig // an encoder's, in cfg's place
	vision *forward.VisionConfig  // a projector file's vision tower, in cfg's place
	audio  *forward.AudioConfig   // a projector file's audio encoder, in cfg's place
	tok    *tokenizer.Tokenizer   // nil when the vocabulary does not load
	vocab  *tokenizer.Vocab
	broken bool // a structural failure the forward pass cannot run with
	// structureOnly is set for a projector file without a forward pass of
	// its towers: its keys, tensors and values are checked, nothing run.
	structureOnly bool
}

func (v *verifier) fail(c Check, subject, msg string) {
	v.rep.Problems = append(v.rep.Problems, Problem{Check: c, Subject: subject, Msg: msg})
}

// Run verifies f, against ref when it is not nil.
func Run(ctx context.Context, f *File, ref Reference, opts Options) (*Report, error) {
	v := &verifier{f: f, ref: ref, opts: opts, rep: &Report{Arch: f.Architecture(), HasReference: ref != nil}}
	if err := v.run(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCannotRun, err)
	}
	v.rep.OK = len(v.rep.Problems) == 0
	return v.rep, nil
}

func (v *verifier) run(ctx context.Context) error {
	if err := v.checkStructure(); err != nil {
		return err
	}
	if v.ref != nil {
		v.checkMetadata()
	}
	if err := v.checkTensors(ctx); err != nil {
		return err
	}
	if v.opts.SkipForward || v.broken || v.structureOnly {
		return nil
	}
	if v.enc != nil {
		return v.runEncoder(ctx)
	}
	if v.vision == nil && v.audio == nil {
		return v.runForward(ctx)
	}
	if v.vision != nil {
		if err := v.runVision(ctx); err != nil {
			return err
		}
	}
	if v.audio != nil {
		return v.runAudio(ctx)
	}
	return nil
}
