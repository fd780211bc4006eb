package verify

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/verify/forward"
)

// EncoderResult is the forward pass of an encoder (general.architecture
// bert): its pooled output, and with a reference the comparison with the
// reference's.
type EncoderResult struct {
	// PromptIDs is the prompt tokenized with the GGUF's vocabulary, special
	// tokens added as the vocabulary asks ([CLS] … [SEP], <s> … </s>).
	PromptIDs []int
	// Pooling is the pooling applied: the GGUF's pooling_type, else rank
	// when the file has a classifier head (cls.output, as llama.cpp's
	// reranking server runs it), else none. RefPooling is the reference's.
	Pooling, RefPooling forward.Pooling
	// Pooled is the GGUF's pooled output (every token's hidden state in turn
	// for none, the classifier's scores for rank); RefPooled the reference's.
	Pooled, RefPooled []float32
	// Cosine is the cosine similarity of Pooled and RefPooled, TokenCosine
	// the smallest over the tokens of their last hidden states, and
	// CosineLimit the least either may be (EncoderCosineLimit).
	Cosine, TokenCosine, CosineLimit float64
	// RelError is ‖Pooled − RefPooled‖ / ‖RefPooled‖, which must stay within
	// RelLimit = √(2·(1 − CosineLimit)), the distance of unit vectors at that
	// cosine: it judges what the cosine cannot, a reranker's single score.
	RelError, RelLimit float64
	// MatrixError is the RMS relative error of the matrices.
	MatrixError float64
}

// Limits of the encoder comparison. The cosine of two outputs whose weights
// differ by a relative error e falls short of 1 by about e²/2 per matrix on
// the way; EncoderCosineFactor × e² (e the RMS relative error of the
// matrices) leaves room for a dozen layers of such steps, and
// EncoderCosineFloor for float32 rounding. F32 and F16 conversions of F16
// weights then need 0.99999, Q8_0 about 0.9996, Q4_K_M about 0.98.
const (
	EncoderCosineFloor  = 1e-5
	EncoderCosineFactor = 20
)

// EncoderCosineLimit is the least cosine similarity a file whose matrices
// have RMS relative error matrixError may show against its reference.
func EncoderCosineLimit(matrixError float64) float64 {
	return 1 - max(EncoderCosineFloor, EncoderCosineFactor*matrixError*matrixError)
}

// parseEncoder reads an encoder's hyperparameters (forward.IsEncoder).
func (v *verifier) parseEncoder() {
	c, err := forward.ParseEncoderConfig(v.f)
	if err != nil {
		v.fail(CheckMetadata, "", err.Error())
		v.broken = true
		return
	}
	v.enc = c
}

// encoderPooling is the pooling a run of the file uses.
func encoderPooling(c *forward.EncoderConfig, e *forward.Encoder) forward.Pooling {
	switch {
	case c.Pooling != forward.PoolingUnspecified:
		return c.Pooling
	case e.ClsOut > 0:
		return forward.PoolingRank
	}
	return forward.PoolingNone
}

// runEncoder runs the prompt through the GGUF's encoder (and the
// reference's) and fills the report's Encoder section.
func (v *verifier) runEncoder(ctx context.Context) error {
	prompt := v.opts.Prompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	ids, err := v.tok.Encode(prompt, true, false)
	if err != nil || len(ids) == 0 {
		v.fail(CheckTokenizer, "", fmt.Sprintf("cannot tokenize the prompt %q: %v", prompt, err))
		return nil
	}
	res := &EncoderResult{PromptIDs: ids}
	v.rep.Encoder = res
	e, err := forward.LoadEncoder(v.enc, forward.GGUFWeights(v.f))
	if err != nil {
		if errors.Is(err, forward.ErrUnsupported) {
			return err
		}
		v.fail(CheckTensors, "", err.Error())
		return nil
	}
	hidden, pooled, err := encode(ctx, e, ids)
	if err != nil {
		return fmt.Errorf("forward pass: %w", err)
	}
	res.Pooling, res.Pooled = encoderPooling(v.enc, e), pooled
	for _, x := range pooled {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			v.fail(CheckForward, "", fmt.Sprintf("the %s-pooled output is not finite", res.Pooling))
			return nil
		}
	}
	if v.ref == nil {
		return nil
	}
	rcfg, err := forward.ParseEncoderConfig(forward.KVMap(v.ref.KVs()))
	if err != nil {
		return fmt.Errorf("reference metadata: %w", err)
	}
	v.compareTokenization(forward.KVMap(v.ref.KVs()), prompt, ids)
	re, err := forward.LoadEncoder(rcfg, newRefWeights(ctx, v.ref))
	if err != nil {
		return fmt.Errorf("reference model: %w", err)
	}
	refHidden, refPooled, err := encode(ctx, re, ids)
	if err != nil {
		return fmt.Errorf("reference forward pass: %w", err)
	}
	res.RefPooling, res.RefPooled = encoderPooling(rcfg, re), refPooled
	res.MatrixError = v.matrixError()
	res.CosineLimit = EncoderCosineLimit(res.MatrixError)
	res.TokenCosine = 1
	for i := range hidden {
		res.TokenCosine = min(res.TokenCosine, forward.Cosine(hidden[i], refHidden[i]))
	}
	if res.TokenCosine < res.CosineLimit {
		v.fail(CheckForward, "", fmt.Sprintf("last hidden states: cosine similarity %.7f with the reference's, below %.7f (matrix error %.3g)",
			res.TokenCosine, res.CosineLimit, res.MatrixError))
	}
	switch {
	case res.Pooling != res.RefPooling:
		v.fail(CheckForward, "", fmt.Sprintf("the file pools with %s, the reference with %s", res.Pooling, res.RefPooling))
	case len(pooled) != len(refPooled):
		v.fail(CheckForward, "", fmt.Sprintf("%s-pooled output of %d values, the reference's has %d", res.Pooling, len(pooled), len(refPooled)))
	default:
		res.Cosine = forward.Cosine(pooled, refPooled)
		if res.Cosine < res.CosineLimit {
			v.fail(CheckForward, "", fmt.Sprintf("%s-pooled output: cosine similarity %.7f with the reference's, below %.7f (matrix error %.3g)",
				res.Pooling, res.Cosine, res.CosineLimit, res.MatrixError))
		}
		res.RelError, res.RelLimit = forward.RelError(pooled, refPooled), math.Sqrt(2*(1-res.CosineLimit))
		if res.RelError > res.RelLimit {
			v.fail(CheckForward, "", fmt.Sprintf("%s-pooled output: relative error %.3g from the reference's, above %.3g (matrix error %.3g)",
				res.Pooling, res.RelError, res.RelLimit, res.MatrixError))
		}
	}
	return nil
}

// encode runs an encoder and pools its output as the file says.
func encode(ctx context.Context, e *forward.Encoder, ids []int) ([][]float32, []float32, error) {
	hidden, err := e.Hidden(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	pooled, err := e.Pool(hidden, encoderPooling(e.Config, e))
	return hidden, pooled, err
}
