package forward

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// archNomicBERT is Nomic BERT's general.architecture.
const archNomicBERT = "nomic-bert"

// parseNomicBERT reads what Nomic BERT adds to BERT's hyperparameters
// (llama.cpp's llama_model_nomic_bert runs BERT's graph with rotary
// positions): the head size, which must split the embedding evenly as the
// graph's fused projections assume, and the rotary base. Rotation covers
// the whole head (NeoX pairs); a file that says otherwise is refused.
func parseNomicBERT(r *kvReader, c *EncoderConfig) error {
	c.HeadDim = c.Embd / c.Heads
	for _, suffix := range []string{gguf.SuffixKeyLength, gguf.SuffixValueLength} {
		d := c.HeadDim
		if _, err := r.u32(r.key(suffix), &d, false); err != nil {
			return err
		}
		if d != c.HeadDim {
			return fmt.Errorf("%w: %s = %d, but %d heads split the embedding length %d into %d",
				ErrMetadata, r.key(suffix), d, c.Heads, c.Embd, c.HeadDim)
		}
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("%w: head size %d is odd", ErrMetadata, c.HeadDim)
	}
	rot := c.HeadDim
	if _, err := r.u32(r.key(gguf.SuffixRopeDimensionCount), &rot, false); err != nil {
		return err
	}
	if rot != c.HeadDim {
		return fmt.Errorf("%w: %s = %d rotates part of a %d-value head", ErrUnsupported,
			r.key(gguf.SuffixRopeDimensionCount), rot, c.HeadDim)
	}
	c.RopeBase = 10000
	if _, err := r.f32(r.key(gguf.SuffixRopeFreqBase), &c.RopeBase, false); err != nil {
		return err
	}
	if !(c.RopeBase > 0) {
		return fmt.Errorf("%w: %s = %g", ErrMetadata, r.key(gguf.SuffixRopeFreqBase), c.RopeBase)
	}
	return nil
}
