// Package perplexity computes what llama.cpp's llama-perplexity prints
// (tools/perplexity/perplexity.cpp of llama.cpp commit 0c1e570): the
// perplexity of a model over a tokenized text cut into chunks of n_ctx
// tokens, each chunk scored on its second half only; the compressed
// log-probabilities of a base model saved for a later comparison
// (--kl-divergence-base); and that comparison (--kl-divergence): KL
// divergence, Δp and top-token agreement of a model against the saved base.
//
// The arithmetic follows perplexity.cpp: each position's log-softmax takes
// the maximum logit, sums expf(logit − max) in double precision, and takes
// the natural logarithm of the sum; the saved log-probabilities are the
// same 16-bit quantization, so files are interchangeable with
// llama-perplexity's own.
package perplexity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Model gives the logits of every position of a sequence evaluated from an
// empty context (one chunk).
type Model interface {
	Logits(ctx context.Context, tokens []int) ([][]float32, error)
}

// Options are llama-perplexity's settings that change what is computed.
type Options struct {
	// Context is n_ctx, the chunk length (llama-perplexity's -c; 512 when 0).
	Context int
	// Chunks caps the number of chunks (--chunks); negative or 0: all.
	Chunks int
	// Vocab is n_vocab, the vocabulary size (llama_vocab_n_tokens): the
	// width of each logit row that is scored. Rows may be wider.
	Vocab int
	// BOS replaces the first token of every chunk when AddBOS is set, as
	// llama-perplexity does for a vocabulary that adds one.
	BOS    int
	AddBOS bool
	// Progress, when set, is called after each chunk.
	Progress func(Progress)
}

// Progress reports a finished chunk.
type Progress struct {
	// Chunk is 1-based; Chunks the number to be evaluated.
	Chunk, Chunks int
	// PPL is the running perplexity after Chunk; for a comparison it is the
	// evaluated model's, and KL the running statistics.
	PPL float64
	// MeanNLL is the running mean negative log-likelihood and StdNLL its
	// standard error (llama-perplexity's --ppl-output-type 1 columns).
	MeanNLL, StdNLL float64
	KL              *KLStats
	// Elapsed is the time the chunk took.
	Elapsed time.Duration
}

// DefaultContext is llama-perplexity's default n_ctx.
const DefaultContext = 512

// ErrTooShort is returned when the text has fewer than two chunks' tokens.
var ErrTooShort = errors.New("perplexity: text too short")

// Result is a perplexity run's outcome.
type Result struct {
	// PPL is exp(mean negative log-likelihood); StdErr its uncertainty as
	// llama-perplexity prints it after "+/-".
	PPL, StdErr float64
	// Count is the number of scored positions; Chunks the chunks evaluated.
	Count, Chunks int
	// ChunkPPL is the running perplexity after each chunk (what
	// llama-perplexity prints as [1]…,[2]…).
	ChunkPPL []float64
}

func (o *Options) chunking(nTokens int) (nctx, nChunk, first int, err error) {
	nctx = o.Context
	if nctx == 0 {
		nctx = DefaultContext
	}
	if nctx < 2 {
		return 0, 0, 0, fmt.Errorf("perplexity: context size %d: needs at least 2", nctx)
	}
	if o.Vocab <= 0 {
		return 0, 0, 0, fmt.Errorf("perplexity: vocabulary size %d", o.Vocab)
	}
	if nTokens < 2*nctx {
		return 0, 0, 0, fmt.Errorf("%w: you need at least %d tokens to evaluate perplexity with a context of %d; the text tokenizes to only %d",
			ErrTooShort, 2*nctx, nctx, nTokens)
	}
	nChunk = nTokens / nctx
	if o.Chunks > 0 {
		nChunk = min(nChunk, o.Chunks)
	}
	return nctx, nChunk, nctx / 2, nil
}

// checkTokens refuses a token outside the vocabulary.
func checkTokens(tokens []int, vocab int) error {
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("perplexity: token %d (position %d) outside the vocabulary of %d", t, i, vocab)
		}
	}
	return nil
}

// chunkLogits evaluates chunk i of tokens (BOS substituted as asked) and
// checks the logits' shape.
func (o *Options) chunkLogits(ctx context.Context, m Model, tokens []int, i, nctx int) ([][]float32, error) {
	seq := make([]int, nctx)
	copy(seq, tokens[i*nctx:(i+1)*nctx])
	if o.AddBOS {
		seq[0] = o.BOS
	}
	logits, err := m.Logits(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("perplexity: chunk %d: %w", i+1, err)
	}
	if len(logits) != nctx {
		return nil, fmt.Errorf("perplexity: chunk %d: %d rows of logits for %d tokens", i+1, len(logits), nctx)
	}
	for _, r := range logits {
		if len(r) < o.Vocab {
			return nil, fmt.Errorf("perplexity: chunk %d: logit rows of %d values for a vocabulary of %d", i+1, len(r), o.Vocab)
		}
	}
	return logits, nil
}

// Run computes the perplexity of m over tokens as llama-perplexity does with
// its default --ppl-stride 0. When base is not nil, the scored positions'
// log-probabilities are also written to it in llama-perplexity's
// --kl-divergence-base format (and each position's negative log-likelihood
// is then computed the way that mode computes it, in float32).
func Run(ctx context.Context, m Model, tokens []int, o Options, base *BaseWriter) (*Result, error) {
	nctx, nChunk, first, err := o.chunking(len(tokens))
	if err != nil {
		return nil, err
	}
	if err := checkTokens(tokens[:nChunk*nctx], o.Vocab); err != nil {
		return nil, err
	}
	if base != nil {
		if err := base.header(nctx, o.Vocab, nChunk, tokens[:nChunk*nctx]); err != nil {
			return nil, err
		}
	}
	res := &Result{Chunks: nChunk}
	var nll, nll2 float64
	row := make([]uint16, logProbWidth(o.Vocab))
	for i := 0; i < nChunk; i++ {
		t0 := time.Now()
		logits, err := o.chunkLogits(ctx, m, tokens, i, nctx)
		if err != nil {
			return nil, err
		}
		for j := first; j < nctx-1; j++ {
			target := tokens[i*nctx+j+1]
			var v float64
			if base != nil {
				v = compressLogProbs(logits[j][:o.Vocab], row, target)
				if err := base.row(row); err != nil {
					return nil, err
				}
			} else {
				v = -logSoftmax(logits[j][:o.Vocab], target)
			}
			nll += v
			nll2 += v * v
		}
		res.Count += nctx - first - 1
		av := nll / float64(res.Count)
		ppl := math.Exp(av)
		res.ChunkPPL = append(res.ChunkPPL, ppl)
		if o.Progress != nil {
			av2 := nll2/float64(res.Count) - av*av
			if av2 > 0 {
				av2 = math.Sqrt(av2 / float64(res.Count-1))
			}
			o.Progress(Progress{Chunk: i + 1, Chunks: nChunk, PPL: ppl, MeanNLL: av, StdNLL: av2, Elapsed: time.Since(t0)})
		}
	}
	if base != nil {
		if err := base.flush(); err != nil {
			return nil, err
		}
	}
	n := float64(res.Count)
	nll /= n
	nll2 /= n
	res.PPL = math.Exp(nll)
	if v := nll2 - nll*nll; v > 0 && res.Count > 1 {
		res.StdErr = math.Sqrt(v/(n-1)) * res.PPL
	}
	return res, nil
}

// expf is C's expf: the float32 exponential (computed in float64 and
// rounded, which is what glibc's correctly rounded expf returns).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// maxLogit returns the largest value and its first index.
func maxLogit(z []float32) (float32, int) {
	m, im := z[0], 0
	for i := 1; i < len(z); i++ {
		if z[i] > m {
			m, im = z[i], i
		}
	}
	return m, im
}

// sumExp is Σ expf(z − m) in double precision.
func sumExp(z []float32, m float32) float64 {
	var s float64
	for _, v := range z {
		s += float64(expf(v - m))
	}
	return s
}

// logSoftmax is perplexity.cpp's log_softmax(n_vocab, logits, tok).log_softmax:
// logit[tok] − max − log(Σ expf(logit − max)), in double precision.
func logSoftmax(z []float32, tok int) float64 {
	m, _ := maxLogit(z)
	return float64(z[tok]-m) - math.Log(sumExp(z, m))
}
