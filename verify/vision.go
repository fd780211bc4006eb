package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ggufkit/ggufkit/verify/forward"
)

// VisionResult is the forward pass of a projector file's vision tower over
// verify's fixed image (forward.TestImage, normalised with the file's
// image_mean and image_std): the image features, what the text model
// receives, and with a reference the comparison with the reference's (its
// own normalisation of the same image through its own weights).
type VisionResult struct {
	// Width and Height are the image's; Tokens × Dim the features'.
	Width, Height, Tokens, Dim int
	// Cosine is the cosine similarity of all the features with the
	// reference's, CosineLimit the least it may be (EncoderCosineLimit of
	// MatrixError, the RMS relative error of the matrices). TokenCosine, the
	// smallest over the tokens, is reported, not judged: a token of small
	// norm takes a quantized file's noise at a lower cosine.
	Cosine, TokenCosine, CosineLimit float64
	// RelError is ‖features − reference's‖ / ‖reference's‖, within RelLimit
	// = √(2·(1 − CosineLimit)).
	RelError, RelLimit, MatrixError float64
}

// visionConfig reads the vision tower's hyperparameters when verify/forward
// runs its projector type; nil otherwise.
func (v *verifier) visionConfig() *forward.VisionConfig {
	c, err := forward.ParseVisionConfig(v.f)
	switch {
	case errors.Is(err, forward.ErrUnsupported):
		return nil
	case err != nil:
		v.fail(CheckMetadata, "", err.Error())
		v.broken = true
		return nil
	}
	return c
}

// runVision runs the vision tower of the file (and of the reference) over
// the fixed image and fills the report's Vision section.
func (v *verifier) runVision(ctx context.Context) error {
	c := v.vision
	res := &VisionResult{}
	res.Width, res.Height = c.TestImageSize()
	v.rep.Vision = res
	feats, err := visionFeatures(ctx, c, forward.GGUFWeights(v.f), res.Width, res.Height, v.opts.threads())
	if err != nil {
		if errors.Is(err, forward.ErrWeights) {
			v.fail(CheckTensors, "", err.Error())
			return nil
		}
		return fmt.Errorf("vision forward pass: %w", err)
	}
	res.Tokens, res.Dim = len(feats), len(feats[0])
	if slices.ContainsFunc(slices.Concat(feats...), func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
		v.fail(CheckForward, "", "the image features are not finite")
		return nil
	}
	if v.ref == nil {
		return nil
	}
	rc, err := forward.ParseVisionConfig(forward.KVMap(v.ref.KVs()))
	if err != nil {
		return fmt.Errorf("reference metadata: %w", err)
	}
	refFeats, err := visionFeatures(ctx, rc, newRefWeights(ctx, v.ref), res.Width, res.Height, v.opts.threads())
	if err != nil {
		return fmt.Errorf("reference vision forward pass: %w", err)
	}
	if len(refFeats) != len(feats) || len(refFeats[0]) != len(feats[0]) {
		v.fail(CheckForward, "", fmt.Sprintf("%d image features of %d values, the reference gives %d of %d",
			len(feats), len(feats[0]), len(refFeats), len(refFeats[0])))
		return nil
	}
	res.MatrixError = v.matrixError()
	res.CosineLimit = EncoderCosineLimit(res.MatrixError)
	res.RelLimit = math.Sqrt(2 * (1 - res.CosineLimit))
	res.TokenCosine = 1
	for i := range feats {
		res.TokenCosine = min(res.TokenCosine, forward.Cosine(feats[i], refFeats[i]))
	}
	flat, refFlat := slices.Concat(feats...), slices.Concat(refFeats...)
	res.Cosine, res.RelError = forward.Cosine(flat, refFlat), forward.RelError(flat, refFlat)
	if res.Cosine < res.CosineLimit {
		v.fail(CheckForward, "", fmt.Sprintf("image features: cosine similarity %.7f with the reference's (least over the tokens %.7f), below %.7f (matrix error %.3g)",
			res.Cosine, res.TokenCosine, res.CosineLimit, res.MatrixError))
	}
	if res.RelError > res.RelLimit {
		v.fail(CheckForward, "", fmt.Sprintf("image features: relative error %.3g from the reference's, above %.3g (matrix error %.3g)",
			res.RelError, res.RelLimit, res.MatrixError))
	}
	return nil
}

// visionFeatures loads a tower and runs it over the fixed image, normalised
// with the tower's own image_mean and image_std.
func visionFeatures(ctx context.Context, c *forward.VisionConfig, w forward.Weights, width, height, threads int) ([][]float32, error) {
	tower, err := forward.LoadVision(c, w)
	if err != nil {
		return nil, err
	}
	img, err := forward.NormalizeImage(forward.TestImage(width, height), width, height, c.Mean, c.Std)
	if err != nil {
		return nil, err
	}
	return tower.Features(ctx, img, threads)
}
