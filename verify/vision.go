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
	// Width and Height are the image's.
	Width, Height int
	FeatureAgreement
}

// FeatureAgreement is a tower's output features and, with a reference,
// their agreement with the reference's.
type FeatureAgreement struct {
	// Tokens × Dim is the features' shape.
	Tokens, Dim int
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

// towerConfig reads a tower's hyperparameters with parse when
// verify/forward runs its projector type; nil otherwise (a metadata problem
// when the keys are wrong).
func towerConfig[C any](v *verifier, parse func(forward.Metadata) (*C, error)) *C {
	c, err := parse(v.f)
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
	var ref func() ([][]float32, error)
	if v.ref != nil {
		ref = func() ([][]float32, error) {
			rc, err := forward.ParseVisionConfig(forward.KVMap(v.ref.KVs()))
			if err != nil {
				return nil, fmt.Errorf("reference metadata: %w", err)
			}
			feats, err := visionFeatures(ctx, rc, newRefWeights(ctx, v.ref), res.Width, res.Height, v.opts.threads())
			if err != nil {
				return nil, fmt.Errorf("reference vision forward pass: %w", err)
			}
			return feats, nil
		}
	}
	return v.judgeFeatures(&res.FeatureAgreement, "image features", feats, ref)
}

// judgeFeatures fills a with a tower's features: finite, and when ref is
// not nil (the reference's tower) within the encoder limits of its
// features; what names them in the problems.
func (v *verifier) judgeFeatures(a *FeatureAgreement, what string, feats [][]float32, ref func() ([][]float32, error)) error {
	a.Tokens, a.Dim = len(feats), len(feats[0])
	if slices.ContainsFunc(slices.Concat(feats...), func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
		v.fail(CheckForward, "", "the "+what+" are not finite")
		return nil
	}
	if ref == nil {
		return nil
	}
	refFeats, err := ref()
	if err != nil {
		return err
	}
	if len(refFeats) != len(feats) || len(refFeats[0]) != len(feats[0]) {
		v.fail(CheckForward, "", fmt.Sprintf("%d %s of %d values, the reference gives %d of %d",
			len(feats), what, len(feats[0]), len(refFeats), len(refFeats[0])))
		return nil
	}
	a.MatrixError = v.matrixError()
	a.CosineLimit = EncoderCosineLimit(a.MatrixError)
	a.RelLimit = math.Sqrt(2 * (1 - a.CosineLimit))
	a.TokenCosine = 1
	for i := range feats {
		a.TokenCosine = min(a.TokenCosine, forward.Cosine(feats[i], refFeats[i]))
	}
	flat, refFlat := slices.Concat(feats...), slices.Concat(refFeats...)
	a.Cosine, a.RelError = forward.Cosine(flat, refFlat), forward.RelError(flat, refFlat)
	if a.Cosine < a.CosineLimit {
		v.fail(CheckForward, "", fmt.Sprintf("%s: cosine similarity %.7f with the reference's (least over the tokens %.7f), below %.7f (matrix error %.3g)",
			what, a.Cosine, a.TokenCosine, a.CosineLimit, a.MatrixError))
	}
	if a.RelError > a.RelLimit {
		v.fail(CheckForward, "", fmt.Sprintf("%s: relative error %.3g from the reference's, above %.3g (matrix error %.3g)",
			what, a.RelError, a.RelLimit, a.MatrixError))
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
