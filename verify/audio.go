package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/ggufkit/ggufkit/verify/forward"
)

// AudioResult is the forward pass of a projector file's audio encoder over
// verify's fixed log-mel input (forward.TestMel, as many frames as the
// encoder's position table covers): the audio features, what the text model
// receives, and with a reference the comparison with the reference's.
type AudioResult struct {
	// Bins and Frames are the input's.
	Bins, Frames int
	FeatureAgreement
}

// runAudio runs the audio encoder of the file (and of the reference) over
// the fixed input and fills the report's Audio section.
func (v *verifier) runAudio(ctx context.Context) error {
	c := v.audio
	enc, err := forward.LoadAudio(c, forward.GGUFWeights(v.f))
	if err != nil {
		if errors.Is(err, forward.ErrWeights) {
			v.fail(CheckTensors, "", err.Error())
			return nil
		}
		return fmt.Errorf("audio encoder: %w", err)
	}
	res := &AudioResult{Bins: enc.Bins, Frames: enc.MaxFrames}
	v.rep.Audio = res
	feats, err := enc.Features(ctx, forward.TestMel(res.Bins, res.Frames), res.Frames, v.opts.threads())
	if err != nil {
		return fmt.Errorf("audio forward pass: %w", err)
	}
	var ref func() ([][]float32, error)
	if v.ref != nil {
		ref = func() ([][]float32, error) {
			rc, err := forward.ParseAudioConfig(forward.KVMap(v.ref.KVs()))
			if err != nil {
				return nil, fmt.Errorf("reference metadata: %w", err)
			}
			renc, err := forward.LoadAudio(rc, newRefWeights(ctx, v.ref))
			if err != nil {
				return nil, fmt.Errorf("reference audio encoder: %w", err)
			}
			return renc.Features(ctx, forward.TestMel(res.Bins, res.Frames), res.Frames, v.opts.threads())
		}
	}
	return v.judgeFeatures(&res.FeatureAgreement, "audio features", feats, ref)
}
