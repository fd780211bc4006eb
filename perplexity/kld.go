package perplexity

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// KLStats are the running sums of perplexity.cpp's kl_divergence_result.
type KLStats struct {
	SumNLL, SumNLL2, SumNLLBase, SumNLLBase2, SumNLLNLLBase float64
	SumKLD, SumKLD2                                         float64
	SumPDiff, SumPDiff2, SumPDiff4                          float64
	MaxPDiff                                                float32
	SameTop, Count                                          int
}

// KLResult is a --kl-divergence run: the sums and every scored position's
// KL divergence and Δp (the probability of the right token under the model
// minus under the base), for the percentiles.
type KLResult struct {
	KLStats
	KLD, PDiff []float32
}

// klPosition is perplexity.cpp's log_softmax(n_vocab, logits, base_log_prob,
// tok, kld): one position's contribution; it returns the position's KL
// divergence and Δp. Products are rounded to float32 where C computes them
// in float (explicit conversions keep Go from fusing them).
func (k *KLStats) klPosition(z []float32, base []uint16, tok int) (float64, float32) {
	maxL, imax := maxLogit(z)
	logSumExp := float32(math.Log(sumExp(z, maxL)))
	scale, minLogProb := getFloat(base[0:2]), getFloat(base[2:4])
	q := base[4:]

	nll := maxL + logSumExp - z[tok]
	k.SumNLL += float64(nll)
	k.SumNLL2 += float64(float32(nll * nll))
	nllBase := -(float32(scale*float32(q[tok])) + minLogProb)
	k.SumNLLBase += float64(nllBase)
	k.SumNLLBase2 += float64(float32(nllBase * nllBase))
	k.SumNLLNLLBase += float64(float32(nll * nllBase))

	maxL += logSumExp
	var sum float64
	imaxBase := -1
	var pMax float32
	for i, v := range z {
		pLog := float32(scale*float32(q[i])) + minLogProb
		if i == 0 || pLog > pMax {
			pMax, imaxBase = pLog, i
		}
		if pLog > -16 {
			p := expf(pLog)
			sum += float64(float32(p * (pLog - v + maxL)))
		}
	}
	k.SumKLD += sum
	k.SumKLD2 += sum * sum
	k.Count++
	if imax == imaxBase {
		k.SameTop++
	}
	pDiff := expf(-nll) - expf(-nllBase)
	k.SumPDiff += float64(pDiff)
	pDiff2 := float64(float32(pDiff * pDiff))
	k.SumPDiff2 += pDiff2
	k.SumPDiff4 += pDiff2 * pDiff2
	k.MaxPDiff = max(k.MaxPDiff, float32(math.Abs(float64(pDiff))))
	return sum, pDiff
}

// Compare evaluates m on the base file's tokens, chunk by chunk, and
// compares its distributions with the base's saved log-probabilities, as
// llama-perplexity --kl-divergence does. o.Context and o.Chunks are taken
// from the file; o.Vocab must equal the file's n_vocab.
func Compare(ctx context.Context, m Model, b *Base, o Options) (*KLResult, error) {
	if o.Vocab != b.Vocab {
		return nil, fmt.Errorf("%s: inconsistent vocabulary: the file has %d tokens, the model %d", b.name, b.Vocab, o.Vocab)
	}
	if err := checkTokens(b.Tokens[:b.Chunks*b.Context], o.Vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", b.name, err)
	}
	o.Context = b.Context
	nctx, first := b.Context, b.Context/2
	scored := nctx - 1 - first
	nv := logProbWidth(b.Vocab)
	rows := make([]uint16, scored*nv)
	res := &KLResult{}
	for i := 0; i < b.Chunks; i++ {
		t0 := time.Now()
		logits, err := o.chunkLogits(ctx, m, b.Tokens, i, nctx)
		if err != nil {
			return nil, err
		}
		if err := b.chunk(rows); err != nil {
			return nil, err
		}
		for j := 0; j < scored; j++ {
			kl, pd := res.klPosition(logits[first+j][:o.Vocab], rows[j*nv:(j+1)*nv], b.Tokens[i*nctx+first+j+1])
			res.KLD = append(res.KLD, float32(kl))
			res.PDiff = append(res.PDiff, pd)
		}
		if o.Progress != nil {
			st := res.KLStats
			o.Progress(Progress{Chunk: i + 1, Chunks: b.Chunks, PPL: math.Exp(res.SumNLL / float64(res.Count)), KL: &st, Elapsed: time.Since(t0)})
		}
	}
	return res, nil
}

// meanAndUncertainty is perplexity.cpp's mean_and_uncertainty.
func meanAndUncertainty(sum, sum2 float64, count int) (float64, float64) {
	if count < 1 {
		return 0, 0
	}
	n := float64(count)
	f := sum / n
	df := sum2/n - f*f
	if df > 0 && count > 10 {
		df = math.Sqrt(df / (n - 1))
	} else {
		df = 0
	}
	return f, df
}

// covariance is perplexity.cpp's covariance lambda.
func covariance(a, b, ab float64, count int) float64 {
	if count < 10 {
		return 0
	}
	n := float64(count)
	return (ab/n - (a/n)*(b/n)) / (n - 1)
}

// percentile interpolates in sorted values as perplexity.cpp does.
func percentile(sorted []float32, fraction float32) float32 {
	if fraction <= 0 {
		return sorted[0]
	}
	if fraction >= 1 {
		return sorted[len(sorted)-1]
	}
	p := fraction * float32(len(sorted)-1)
	ip := int(p)
	p -= float32(ip)
	return (1-p)*sorted[ip] + p*sorted[min(ip+1, len(sorted)-1)]
}

func median(sorted []float32) float32 {
	n := len(sorted)
	if n%2 == 0 {
		return 0.5 * (sorted[n/2] + sorted[n/2-1])
	}
	return sorted[n/2]
}

// ChunkLine formats one chunk's running figures as llama-perplexity prints
// them under its "chunk PPL ln(PPL(Q)/PPL(base)) …" header.
func (k *KLStats) ChunkLine(chunk int) string {
	lp, lpu := meanAndUncertainty(k.SumNLL, k.SumNLL2, k.Count)
	lb, lbu := meanAndUncertainty(k.SumNLLBase, k.SumNLLBase2, k.Count)
	cov := covariance(k.SumNLL, k.SumNLLBase, k.SumNLLNLLBase, k.Count)
	kl, klu := meanAndUncertainty(k.SumKLD, k.SumKLD2, k.Count)
	mse, mseu := meanAndUncertainty(k.SumPDiff2, k.SumPDiff4, k.Count)
	rms := math.Sqrt(mse)
	top := float64(k.SameTop) / float64(k.Count)
	return fmt.Sprintf("%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%    %6.3f ± %6.3f %%",
		chunk, math.Exp(lp), math.Exp(lp)*lpu,
		lp-lb, math.Sqrt(lpu*lpu+lbu*lbu-2*cov),
		kl, klu,
		100*rms, 100*0.5/rms*mseu,
		100*top, 100*math.Sqrt(top*(1-top)/float64(k.Count-1)))
}

// KLHeader is the line llama-perplexity prints above the chunk lines.
const KLHeader = "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p"

// WriteReport prints the final statistics as llama-perplexity does (nothing
// for fewer than 100 positions, as it).
func (r *KLResult) WriteReport(w io.Writer) {
	k := &r.KLStats
	if k.Count < 100 {
		return
	}
	kld := slices.Clone(r.KLD)
	slices.Sort(kld)
	pd := slices.Clone(r.PDiff)
	slices.Sort(pd)
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }

	p("====== Perplexity statistics ======\n")
	lp, lpu := meanAndUncertainty(k.SumNLL, k.SumNLL2, k.Count)
	ppl, pplu := math.Exp(lp), math.Exp(lp)*lpu
	p("Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl, pplu)
	lb, lbu := meanAndUncertainty(k.SumNLLBase, k.SumNLLBase2, k.Count)
	pb, pbu := math.Exp(lb), math.Exp(lb)*lbu
	p("Mean PPL(base)                : %10.6f ± %10.6f\n", pb, pbu)
	cov := covariance(k.SumNLL, k.SumNLLBase, k.SumNLLNLLBase, k.Count)
	p("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100*cov/(lpu*lbu))
	ratio, ratiou := lp-lb, math.Sqrt(lpu*lpu+lbu*lbu-2*cov)
	p("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", ratio, ratiou)
	p("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", math.Exp(ratio), math.Exp(ratio)*ratiou)
	pcov := ppl * pb * cov
	p("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", ppl-pb, math.Sqrt(pplu*pplu+pbu*pbu-2*pcov))
	p("\n")

	p("====== KL divergence statistics ======\n")
	kl, klu := meanAndUncertainty(k.SumKLD, k.SumKLD2, k.Count)
	p("Mean    KLD: %10.6f ± %10.6f\n", kl, klu)
	p("Maximum KLD: %10.6f\n", kld[len(kld)-1])
	for _, q := range []struct {
		label string
		f     float32
	}{{"99.9%", 0.999}, {"99.0%", 0.990}, {"95.0%", 0.950}, {"90.0%", 0.900}} {
		p("%-6s  KLD: %10.6f\n", q.label, percentile(kld, q.f))
	}
	p("Median  KLD: %10.6f\n", median(kld))
	for _, q := range []struct {
		label string
		f     float32
	}{{"10.0%", 0.100}, {" 5.0%", 0.050}, {" 1.0%", 0.010}, {" 0.1%", 0.001}} {
		p("%-6s  KLD: %10.6f\n", q.label, percentile(kld, q.f))
	}
	p("Minimum KLD: %10.6f\n", kld[0])
	p("\n")

	p("====== Token probability statistics ======\n")
	m, mu := meanAndUncertainty(k.SumPDiff, k.SumPDiff2, k.Count)
	p("Mean    Δp: %6.3f ± %5.3f %%\n", 100*m, 100*mu)
	p("Maximum Δp: %6.3f%%\n", 100*pd[len(pd)-1])
	for _, q := range []struct {
		label string
		f     float32
	}{{"99.9%", 0.999}, {"99.0%", 0.990}, {"95.0%", 0.950}, {"90.0%", 0.900}, {"75.0%", 0.750}} {
		p("%-6s  Δp: %6.3f%%\n", q.label, 100*percentile(pd, q.f))
	}
	p("Median  Δp: %6.3f%%\n", 100*median(pd))
	for _, q := range []struct {
		label string
		f     float32
	}{{"25.0%", 0.250}, {"10.0%", 0.100}, {" 5.0%", 0.050}, {" 1.0%", 0.010}, {" 0.1%", 0.001}} {
		p("%-6s  Δp: %6.3f%%\n", q.label, 100*percentile(pd, q.f))
	}
	p("Minimum Δp: %6.3f%%\n", 100*pd[0])
	mse, mseu := meanAndUncertainty(k.SumPDiff2, k.SumPDiff4, k.Count)
	rms := math.Sqrt(mse)
	p("RMS Δp    : %6.3f ± %5.3f %%\n", 100*rms, 100*0.5/rms*mseu)
	top := float64(k.SameTop) / float64(k.Count)
	p("Same top p: %6.3f ± %5.3f %%\n", 100*top, 100*math.Sqrt(top*(1-top)/float64(k.Count-1)))
}
