package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// ForwardResult is the forward pass of a verification.
type ForwardResult struct {
	// PromptIDs is the prompt tokenized with the GGUF's vocabulary (BOS and
	// EOS as the vocabulary asks).
	PromptIDs []int
	// KL holds, for each position of the prompt and then of the reference's
	// continuation (both models see the same tokens), KL(reference ‖ GGUF)
	// of the next-token distributions, in nats. Empty without a reference.
	KL            []float64
	KLMean, KLMax float64
	// Top1 is the fraction of those positions where both models rank the
	// same token first.
	Top1 float64
	// Decisive counts the positions where the reference's first token leads
	// its second by more than the logit noise the KL limit allows
	// (DecisiveGap); Top1Decisive is the agreement over those, the figure
	// the top-1 threshold judges. A near-tie may flip in a correct file.
	Decisive     int
	Top1Decisive float64
	// NoiseKL is the mean KL divergence between the reference and the
	// reference with Gaussian noise of each tensor's measured RMSE added;
	// MatrixError the RMS relative error of the matrices. They set KLLimit
	// and Top1Limit (see KLMargin and Top1Factor).
	NoiseKL, MatrixError float64
	KLLimit, Top1Limit   float64
	// Gaps are the reference's logit leads of its first over its second
	// token, per position (they decide Decisive once the limits are known).
	Gaps []float64
	// GreedyIDs and GreedyText are the GGUF's greedy continuation;
	// SourceGreedyIDs and SourceGreedyText the reference's.
	GreedyIDs        []int
	GreedyText       string
	SourceGreedyIDs  []int
	SourceGreedyText string

	agree []bool // per position: both rank the same token first
}

// runForward tokenizes the prompt, runs the GGUF (and the reference) and
// fills the report's forward section.
func (v *verifier) runForward(ctx context.Context) error {
	prompt := v.opts.Prompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	nPredict := v.opts.NPredict
	switch {
	case nPredict == 0:
		nPredict = DefaultNPredict
	case nPredict < 0:
		nPredict = 0
	}
	ids, err := v.tok.Encode(prompt, true, false)
	if err != nil || len(ids) == 0 {
		v.fail(CheckTokenizer, "", fmt.Sprintf("cannot tokenize the prompt %q: %v", prompt, err))
		return nil
	}
	res := &ForwardResult{PromptIDs: ids}
	v.rep.Forward = res
	fopts := forward.Options{Threads: v.opts.threads()}
	gm, err := forward.Load(v.cfg, forward.GGUFWeights(v.f), fopts)
	if err != nil {
		v.fail(CheckTensors, "", err.Error())
		return nil
	}
	if v.ref == nil {
		_, res.GreedyIDs, err = generate(ctx, gm, ids, nPredict)
		res.GreedyText = v.text(res.GreedyIDs)
		return err
	}

	refKVs := forward.KVMap(v.ref.KVs())
	rcfg, err := forward.ParseConfig(refKVs)
	if err != nil {
		return fmt.Errorf("reference metadata: %w", err)
	}
	if _, ok := refKVs.KV("tokenizer.ggml.tokens"); ok {
		v.compareTokenization(refKVs, prompt, ids)
	}
	rm, err := forward.Load(rcfg, newRefWeights(ctx, v.ref), fopts)
	if err != nil {
		return fmt.Errorf("reference model: %w", err)
	}
	refLogits, refIDs, err := generate(ctx, rm, ids, nPredict)
	if err != nil {
		return fmt.Errorf("reference forward pass: %w", err)
	}
	rm = nil // the reference's float32 weights can go before the GGUF runs
	res.SourceGreedyIDs, res.SourceGreedyText = refIDs, v.text(refIDs)

	// The GGUF sees the reference's sequence, so that every position compares
	// the same context.
	seq := append(slices.Clone(ids), refIDs[:max(0, nPredict-1)]...)
	s, err := gm.NewSession(len(ids) + nPredict)
	if err != nil {
		return err
	}
	logits, err := s.Eval(ctx, seq, true)
	if err != nil {
		return fmt.Errorf("forward pass: %w", err)
	}
	v.compareLogits(res, refLogits, logits)
	res.GreedyIDs, err = continueGreedy(ctx, s, logits[len(ids)-1:], refIDs, len(ids), nPredict)
	res.GreedyText = v.text(res.GreedyIDs)
	if err != nil {
		return fmt.Errorf("forward pass: %w", err)
	}
	if res.NoiseKL, err = v.noiseKL(ctx, rcfg, fopts, seq, refLogits); err != nil {
		return fmt.Errorf("reference with noise: %w", err)
	}
	v.judgeForward(res)
	return nil
}

// noiseKL runs the reference on seq with Gaussian noise of each tensor's
// measured relative error added to its weights (see noisyWeights),
// NoiseDraws times with independent noise, and returns the mean KL
// divergence from the reference's own logits. A tensor's noise never
// exceeds what its type allows (Limit), so a wrong tensor does not widen
// the forward pass's own limit: the forward check catches it on its own.
func (v *verifier) noiseKL(ctx context.Context, cfg *forward.Config, fopts forward.Options, seq []int, refLogits [][]float32) (float64, error) {
	rel := make(map[string]float64, len(v.rep.Tensors))
	types := make(map[string]gguf.Type, len(v.rep.Tensors))
	for _, t := range v.rep.Tensors {
		rel[t.Name] = min(t.RelError, t.Limit)
		types[t.Name] = t.Type
	}
	ref := newRefWeights(ctx, v.ref)
	var sum float64
	n := 0
	for draw := 0; draw < NoiseDraws; draw++ {
		m, err := forward.Load(cfg, newNoisyWeights(ref, rel, types, uint64(draw)), fopts)
		if err != nil {
			return 0, err
		}
		s, err := m.NewSession(len(seq))
		if err != nil {
			return 0, err
		}
		logits, err := s.Eval(ctx, seq, true)
		if err != nil {
			return 0, err
		}
		for i := 0; i < min(len(logits), len(refLogits)); i++ {
			sum += klDivergence(refLogits[i], logits[i])
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return sum / float64(n), nil
}

// compareTokenization fails when the reference's vocabulary tokenizes the
// prompt differently (a wrong or damaged tokenizer in the GGUF).
func (v *verifier) compareTokenization(refKVs forward.Metadata, prompt string, ids []int) {
	tk, err := tokenizer.Load(refKVs)
	if err != nil {
		v.rep.Warnings = append(v.rep.Warnings, fmt.Sprintf("reference tokenizer does not load: %v", err))
		return
	}
	want, err := tk.Encode(prompt, true, false)
	if err != nil || !slices.Equal(want, ids) {
		v.fail(CheckTokenizer, "", fmt.Sprintf("the prompt tokenizes to %v with the GGUF's vocabulary, %v with the reference's", ids, want))
	}
}

// generate evaluates the prompt and n greedy tokens; it returns the logits
// of every position that predicts a token (the prompt's and all generated
// tokens but the last) and the tokens.
func generate(ctx context.Context, m *forward.Model, prompt []int, n int) ([][]float32, []int, error) {
	s, err := m.NewSession(len(prompt) + n)
	if err != nil {
		return nil, nil, err
	}
	logits, err := s.Eval(ctx, prompt, true)
	if err != nil {
		return nil, nil, err
	}
	var ids []int
	for len(ids) < n {
		ids = append(ids, forward.Argmax(logits[len(logits)-1]))
		if len(ids) == n {
			break
		}
		l, err := s.Eval(ctx, ids[len(ids)-1:], false)
		if err != nil {
			return nil, nil, err
		}
		logits = append(logits, l[0])
	}
	return logits, ids, nil
}

// continueGreedy derives the GGUF's own greedy continuation from its logits
// on the reference's sequence (gen[i] predicts token i): while it agrees with
// the reference, those logits are its own; from the first disagreement on,
// the session is cut back and it generates alone.
func continueGreedy(ctx context.Context, s *forward.Session, gen [][]float32, refIDs []int, nPrompt, n int) ([]int, error) {
	var ids []int
	for i := 0; i < n; i++ {
		ids = append(ids, forward.Argmax(gen[i]))
		if ids[i] != refIDs[i] {
			break
		}
	}
	if len(ids) == n {
		return ids, nil
	}
	s.Truncate(nPrompt + len(ids) - 1)
	for len(ids) < n {
		l, err := s.Eval(ctx, ids[len(ids)-1:], false)
		if err != nil {
			return ids, err
		}
		ids = append(ids, forward.Argmax(l[0]))
	}
	return ids, nil
}

// compareLogits fills KL and top-1 agreement, position by position.
func (v *verifier) compareLogits(res *ForwardResult, ref, got [][]float32) {
	n := min(len(ref), len(got))
	res.KL = make([]float64, n)
	res.Gaps = make([]float64, n)
	res.agree = make([]bool, n)
	agree := 0
	for i := 0; i < n; i++ {
		kl := klDivergence(ref[i], got[i])
		res.KL[i] = kl
		res.KLMean += kl
		res.KLMax = max(res.KLMax, kl)
		res.Gaps[i] = topGap(ref[i])
		if forward.Argmax(ref[i]) == forward.Argmax(got[i]) {
			res.agree[i] = true
			agree++
		}
	}
	if n > 0 {
		res.KLMean /= float64(n)
		res.Top1 = float64(agree) / float64(n)
	}
}

// topGap is the lead of the largest logit over the second largest.
func topGap(z []float32) float64 {
	first, second := math.Inf(-1), math.Inf(-1)
	for _, x := range z {
		switch x := float64(x); {
		case x > first:
			first, second = x, first
		case x > second:
			second = x
		}
	}
	if math.IsInf(second, -1) {
		return math.Inf(1)
	}
	return first - second
}

// klDivergence is KL(softmax(p) ‖ softmax(q)) in nats, computed in float64
// through log-softmax.
func klDivergence(p, q []float32) float64 {
	lp, lq := logSoftmax(p), logSoftmax(q)
	var kl float64
	for i, a := range lp {
		kl += math.Exp(a) * (a - lq[i])
	}
	return max(0, kl)
}

func logSoftmax(z []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range z {
		m = max(m, float64(x))
	}
	var sum float64
	for _, x := range z {
		sum += math.Exp(float64(x) - m)
	}
	lse := m + math.Log(sum)
	out := make([]float64, len(z))
	for i, x := range z {
		out[i] = float64(x) - lse
	}
	return out
}

// text renders tokens as llama_token_to_piece(special = false) does:
// control and unknown tokens print nothing; invalid UTF-8 bytes become U+FFFD.
func (v *verifier) text(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(v.vocab.Types) {
			if t := v.vocab.Types[id]; t == tokenizer.TypeControl || t == tokenizer.TypeUnknown {
				continue
			}
		}
		b.WriteString(v.tok.Piece(id))
	}
	s := b.String()
	if utf8.ValidString(s) {
		return s
	}
	var out strings.Builder
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			out.WriteRune(utf8.RuneError)
		} else {
			out.WriteString(s[:size])
		}
		s = s[size:]
	}
	return out.String()
}

// parallelFor runs fn(i) for i in [0, n) on up to threads goroutines.
func parallelFor(ctx context.Context, threads, n int, fn func(i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, threads))
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error { return fn(i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
