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

// Forward-pass thresholds. How much a given weight error moves a model's
// output depends on the model (its depth, its logit scale, which tensors
// carry the error), so the KL limit is measured on the model itself: the
// reference runs a second time with independent Gaussian noise added to
// every tensor, of the RMS the tensor comparison measured for it, capped at
// what its type allows (NoiseKL), and a correct conversion, whose error is
// of that size, stays within KLMargin times the KL that noise causes. The
// noise model gets the scale right, which a fixed rule cannot (KL per unit
// of squared weight error differs 1000-fold between stories260K, tiny-llama
// and the convert fixtures), but not the last factor: the real KL is
// 0.8–1.3 times NoiseKL on stories260K's quantizations, 1.1–1.9 times on
// all 40 of tiny-llama's, up to 17 times on the qwen2 fixture (where one
// position's barely saturated distribution dominates the mean); the
// mistakes the tests make in F32 and Q8_0 files exceed
// the limit 12 to 10⁵ times. A mistake the tensor
// comparison cannot see (a wrong hyperparameter) leaves the noise at zero and
// the limit at KLFloor, float32 noise. The top-1 limit is 1 − Top1Factor·e,
// e the RMS relative error of the matrices.
const (
	// NoiseDraws is how many noisy reruns NoiseKL averages: one draw can
	// land far from its expectation when a single position dominates.
	NoiseDraws = 3
	KLMargin   = 20.0
	KLFloor    = 1e-5
	Top1Factor = 2.0
	Top1Floor  = 0.5
)

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

// matrixError is the RMS over the compared matrices (tensors of more than
// one row) of their relative error, each matrix counting once and none
// beyond its type's limit.
func (v *verifier) matrixError() float64 {
	var sum float64
	n := 0
	for _, t := range v.rep.Tensors {
		if info, ok := v.f.Tensor(t.Name); ok && info.Rows() > 1 {
			e := min(t.RelError, t.Limit)
			sum += e * e
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(sum / float64(n))
}

// judgeForward sets the limits and fails a forward pass outside them.
func (v *verifier) judgeForward(res *ForwardResult) {
	res.MatrixError = v.matrixError()
	res.KLLimit = max(KLFloor, KLMargin*res.NoiseKL)
	res.Top1Limit = max(Top1Floor, 1-Top1Factor*res.MatrixError)
	if len(res.KL) == 0 {
		return
	}
	if res.KLMean > res.KLLimit {
		v.fail(CheckForward, "", fmt.Sprintf("mean KL divergence %.3g exceeds %.3g (%g × the %.3g that noise of the measured tensor errors causes)",
			res.KLMean, res.KLLimit, KLMargin, res.NoiseKL))
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
		v.fail(CheckForward, "", fmt.Sprintf("top-1 agreement %.3f below %.3f on the %d positions whose lead exceeds %.3g (matrix error %.3g)",
			res.Top1Decisive, res.Top1Limit, res.Decisive, gap, res.MatrixError))
	}
}
