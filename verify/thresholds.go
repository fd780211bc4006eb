package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// Tensor thresholds come from the quantizer itself: a type's expected
// relative error is the relative RMS error of quantize.Encode followed by
// quantize.Decode on standard-normal data. A converted tensor passes when its
// relative error against the reference stays within TensorMargin times that,
// and never needs to beat MinRelError (float32 rounding in transforms).
const (
	// TensorMargin allows for real weights being heavier-tailed than a
	// Gaussian (outliers widen a block's scale) and for importance-matrix
	// quantization trading plain error for weighted error. On stories260K and
	// tiny-llama, llama-quantize's outputs reach at most ~1.5× the Gaussian
	// figure; a wrong or misplaced tensor is off by 100× or more.
	TensorMargin = 3.0
	// MinRelError is the limit for lossless types (F32, F64).
	MinRelError = 1e-6
	// gaussRows×gaussCols values are measured: a multiple of every block size.
	gaussRows, gaussCols = 16, 4096
)

var (
	gaussMu    sync.Mutex
	gaussCache = map[gguf.Type]float64{}
)

// GaussianError returns the relative RMS error (RMSE / RMS) of a round trip
// through type t on standard-normal data, measured on first use and cached.
// Types that need an importance matrix get uniform weights.
func GaussianError(t gguf.Type) (float64, error) {
	gaussMu.Lock()
	defer gaussMu.Unlock()
	if e, ok := gaussCache[t]; ok {
		return e, nil
	}
	if !quantize.CanEncode(t) || !quantize.CanDecode(t) {
		return 0, fmt.Errorf("%w: no round trip for type %s", quantize.ErrUnsupported, t)
	}
	rng := rand.New(rand.NewPCG(0x67677566, uint64(t)))
	src := make([]float32, gaussRows*gaussCols)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	var imatrix []float32
	if quantize.RequiresImatrix(t) || t == gguf.IQ1_M {
		imatrix = make([]float32, gaussCols)
		for i := range imatrix {
			imatrix[i] = 1
		}
	}
	rowSize, err := quantize.RowSize(t, gaussCols)
	if err != nil {
		return 0, err
	}
	enc := make([]byte, gaussRows*rowSize)
	if err := quantize.Encode(t, enc, src, gaussCols, imatrix); err != nil {
		return 0, err
	}
	dec := make([]float32, len(src))
	if err := quantize.Decode(t, dec, enc, gaussCols); err != nil {
		return 0, err
	}
	var d2, r2 float64
	for i, x := range src {
		d := float64(dec[i]) - float64(x)
		d2 += d * d
		r2 += float64(x) * float64(x)
	}
	e := math.Sqrt(d2 / r2)
	gaussCache[t] = e
	return e, nil
}

// TensorLimit is the largest relative error a tensor of type t may show.
func TensorLimit(t gguf.Type) (float64, error) {
	e, err := GaussianError(t)
	if err != nil {
		return 0, err
	}
	return max(MinRelError, TensorMargin*e), nil
}

// Forward-pass thresholds. Quantization noise of relative size e in every
// weight perturbs the logits by an amount proportional to e, and the KL
// divergence of two nearby distributions grows with the square of the
// perturbation; so the KL limit is KLFactor·e² and the top-1 limit
// 1 − Top1Factor·e, where e is the parameter-weighted Gaussian error of the
// GGUF's matrix types (ExpectedError). The floors keep lossless files to
// float32 noise.
const (
	KLFactor   = 50.0
	KLFloor    = 1e-5
	Top1Factor = 2.0
	Top1Floor  = 0.5
)

// ExpectedError is the parameter-weighted RMS of GaussianError over the
// tensors of more than one row (the matrices a forward pass multiplies by).
func (v *verifier) expectedError() (float64, error) {
	var num, den float64
	for i := range v.f.Tensors {
		t := &v.f.Tensors[i]
		if t.Rows() < 2 {
			continue
		}
		e, err := GaussianError(t.Type)
		if err != nil {
			return 0, err
		}
		n, _ := t.NumElements()
		num += float64(n) * e * e
		den += float64(n)
	}
	if den == 0 {
		return 0, nil
	}
	return math.Sqrt(num / den), nil
}

// ForwardLimits returns the KL-mean and top-1 thresholds for an expected
// relative weight error e.
func ForwardLimits(e float64) (klMean, top1 float64) {
	return max(KLFloor, KLFactor*e*e), max(Top1Floor, 1-Top1Factor*e)
}

// DecisiveSigmas is how many standard deviations of allowed logit noise a
// reference's top-1 lead must exceed for its position to count in the top-1
// check.
const DecisiveSigmas = 3.0

// DecisiveGap is the logit lead above which a position's top-1 token must
// survive a conversion whose KL divergence is at most klLimit. For a small
// logit perturbation δ, KL(p‖q) ≈ ½·Var_p(δ), so the noise a KL of klLimit
// allows has a standard deviation of about √(2·klLimit); a lead of a few of
// those cannot flip by chance. Without this, a model whose next-token
// distributions are nearly flat (random weights, as tiny-llama's) flips
// near-ties under any quantization, Q8_0 included, and top-1 measures noise.
func DecisiveGap(klLimit float64) float64 {
	return DecisiveSigmas * math.Sqrt(2*klLimit)
}

// judgeForward sets the limits and fails a forward pass outside them.
func (v *verifier) judgeForward(res *ForwardResult) error {
	e, err := v.expectedError()
	if err != nil {
		return err
	}
	res.ExpectedError = e
	res.KLLimit, res.Top1Limit = ForwardLimits(e)
	if len(res.KL) == 0 {
		return nil
	}
	if res.KLMean > res.KLLimit {
		v.fail(CheckForward, "", fmt.Sprintf("mean KL divergence %.3g exceeds %.3g (expected weight error %.3g)", res.KLMean, res.KLLimit, e))
	}
	gap := DecisiveGap(res.KLLimit)
	agree := 0
	res.Decisive = 0
	for i, g := range res.Gaps {
		if g > gap {
			res.Decisive++
			if res.agree[i] {
				agree++
			}
		}
	}
	res.Top1Decisive = 1
	if res.Decisive > 0 {
		res.Top1Decisive = float64(agree) / float64(res.Decisive)
	}
	if res.Top1Decisive < res.Top1Limit {
		v.fail(CheckForward, "", fmt.Sprintf("top-1 agreement %.3f below %.3f on the %d positions whose lead exceeds %.3g (expected weight error %.3g)",
			res.Top1Decisive, res.Top1Limit, res.Decisive, gap, e))
	}
	return nil
}
