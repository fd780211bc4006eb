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
	return parseWholeHeadRope(r, c)
}
