package forward

import (
	"math"
	"sync"

	"github.com/ggufkit/ggufkit/quantize"
)

// rmsNorm writes x / sqrt(mean(x²) + eps) · w to dst (ggml_rms_norm then
// ggml_mul): squares are rounded to float and summed in double, as in
// ggml_compute_forward_rms_norm_f32.
func rmsNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

// xielu is ggml's op_xielu (alpha_n and alpha_p as ggml_xielu passes them).
func xielu(x, alphaN, alphaP, beta, eps float32) float32 {
	if x > 0 {
		return alphaP*x*x + beta*x
	}
	m := min(x, eps)
	return (float32(math.Expm1(float64(m)))-x)*alphaN + beta*x
}

// rmsNormPlain is rmsNorm without a weight (ggml_rms_norm alone).
func rmsNormPlain(dst, x []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * scale
	}
}

// layerNorm writes (x − mean) / sqrt(var + eps) · w + b to dst (ggml_norm,
// ggml_mul, ggml_add); the mean and variance are summed in double.
func layerNorm(dst, x, w, b []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var variance float64
	for i, v := range x {
		d := v - mean
		dst[i] = d
		variance += float64(d * d)
	}
	scale := 1 / float32(math.Sqrt(float64(float32(variance/float64(len(x)))+eps)))
	if w == nil {
		// No weight either (olmo's non-parametric LayerNorm): ggml_norm alone.
		for i := range dst {
			dst[i] *= scale
		}
		return
	}
	if b == nil {
		// No bias tensor (cohere2): ggml_norm × weight only.
		for i := range dst {
			dst[i] = dst[i] * scale * w[i]
		}
		return
	}
	for i := range dst {
		dst[i] = dst[i]*scale*w[i] + b[i]
	}
}

// silu is ggml_silu_f32: x / (1 + e^−x).
func silu(x float32) float32 {
	return x / (1 + float32(math.Exp(float64(-x))))
}

// geluTable is ggml_table_gelu_f16: ggml_gelu_f32 of every fp16 value, rounded to fp16.
var (
	geluOnce  sync.Once
	geluTable []float32
)

// gelu is ggml_vec_gelu_f32 as ggml builds it (GGML_GELU_FP16): saturated
// outside ±10, otherwise the tanh approximation looked up at x rounded to
// fp16, the result rounded to fp16.
func gelu(x float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	geluOnce.Do(func() {
		geluTable = make([]float32, 1<<16)
		for i := range geluTable {
			geluTable[i] = quantize.FP16ToFP32(quantize.FP32ToFP16(geluF32(quantize.FP16ToFP32(uint16(i)))))
		}
	})
	return geluTable[quantize.FP32ToFP16(x)]
}

// geluF32 is ggml_gelu_f32: 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))).
func geluF32(x float32) float32 {
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	inner := sqrt2OverPi * x * (1 + coefA*x*x)
	return 0.5 * x * (1 + float32(math.Tanh(float64(inner))))
}

// softcap writes c·tanh(x/c) over xs (ggml_scale, ggml_tanh, ggml_scale).
func softcap(xs []float32, c float32) {
	for i, x := range xs {
		xs[i] = float32(math.Tanh(float64(x*(1/c)))) * c
	}
}

// softmax turns xs·scale into probabilities in place
// (ggml_compute_forward_soft_max_f32 without a mask: the exponentials are
// float, their sum double).
func softmax(xs []float32, scale float32) {
	maxv := float32(math.Inf(-1))
	for i := range xs {
		xs[i] *= scale
		maxv = max(maxv, xs[i])
	}
	var sum float64
	for i, x := range xs {
		e := float32(math.Exp(float64(x - maxv)))
		xs[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range xs {
		xs[i] *= inv
	}
}

// softmaxSink is ggml_soft_max_ext with a sink (attention sinks): the
// sink logit, unscaled, joins the maximum and the sum, and takes no output.
func softmaxSink(xs []float32, scale, sink float32) {
	maxv := sink
	for i := range xs {
		xs[i] *= scale
		maxv = max(maxv, xs[i])
	}
	var sum float64
	for i, x := range xs {
		e := float32(math.Exp(float64(x - maxv)))
		xs[i] = e
		sum += float64(e)
	}
	sum += float64(float32(math.Exp(float64(sink - maxv))))
	inv := float32(1 / sum)
	for i := range xs {
		xs[i] *= inv
	}
}

// swigluOAI is ggml's swiglu_oai (alpha 1.702, limit 7 in build_moe_ffn):
// the gate clamped from above, the up projection clamped both ways and
// shifted by one.
func swigluOAI(g, u float32) float32 {
	const alpha, limit = 1.702, 7.0
	x := min(g, limit)
	y := min(max(u, -limit), limit)
	return x / (1 + float32(math.Exp(float64(-alpha*x)))) * (y + 1)
}

// ropeCache fills cache with cos/sin pairs for one position the way
// ggml_rope_cache_init does: theta starts at the position and is multiplied
// by theta_scale = base^(−2/n_dims) at each pair, divided by the pair's
// frequency factor, then rope_yarn mixes in YaRN and scales by mscale.
func ropeCache(cache []float32, pos int, nDims int, base, freqScale float32, factors []float32, c *Config) {
	thetaScale := float32(math.Pow(float64(base), float64(-2/float32(nDims))))
	var corr [2]float32
	if c.RopeExtFactor != 0 {
		corr = yarnCorrDims(nDims, c.RopeOrigCtx, base, c.RopeBetaFast, c.RopeBetaSlow, !c.yarnUntruncated)
	}
	theta := float32(pos)
	for i0 := 0; i0 < nDims; i0 += 2 {
		ff := float32(1)
		if factors != nil {
			ff = factors[i0/2]
		}
		cos, sin := ropeYarn(theta/ff, freqScale, corr, i0, c.RopeExtFactor, c.RopeAttnFactor)
		cache[i0], cache[i0+1] = cos, sin
		theta *= thetaScale
	}
}

// ropeYarn is ggml's rope_yarn: interpolate theta by freq_scale, blend with
// the extrapolated theta on YaRN's ramp, and scale sin/cos by mscale.
func ropeYarn(thetaExtrap, freqScale float32, corr [2]float32, i0 int, extFactor, mscale float32) (cos, sin float32) {
	thetaInterp := freqScale * thetaExtrap
	theta := thetaInterp
	if extFactor != 0 {
		rampMix := yarnRamp(corr[0], corr[1], i0) * extFactor
		theta = thetaInterp*(1-rampMix) + thetaExtrap*rampMix
		mscale *= 1 + 0.1*float32(math.Log(float64(1/freqScale)))
	}
	return float32(math.Cos(float64(theta))) * mscale, float32(math.Sin(float64(theta))) * mscale
}

// yarnRamp is ggml's rope_yarn_ramp.
func yarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the first and last dimension
// whose wavelength lies between beta_fast and beta_slow rotations over the
// original context.
func yarnCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32, truncate bool) [2]float32 {
	corrDim := func(nRot float32) float32 {
		return float32(nDims) * float32(math.Log(float64(float32(nCtxOrig)/(nRot*2*math.Pi)))) / (2 * float32(math.Log(float64(base))))
	}
	start, end := corrDim(betaFast), corrDim(betaSlow)
	if truncate {
		start, end = float32(math.Floor(float64(start))), float32(math.Ceil(float64(end)))
	}
	return [2]float32{max(0, start), min(float32(nDims-1), end)}
}

// rope rotates the first nDims values of one head with a cache from
// ropeCache: consecutive pairs for NORM mode, pairs nDims/2 apart for NEOX
// (ggml's rotate_pairs).
func rope(x, cache []float32, nDims int, mode ropeMode) {
	for i0 := 0; i0 < nDims; i0 += 2 {
		cos, sin := cache[i0], cache[i0+1]
		var a, b int
		if mode == ropeNorm {
			a, b = i0, i0+1
		} else {
			a, b = i0/2, i0/2+nDims/2
		}
		x0, x1 := x[a], x[b]
		x[a] = x0*cos - x1*sin
		x[b] = x0*sin + x1*cos
	}
}

// Argmax returns the index of the first maximum (llama.cpp's greedy sampler
// and the reference outputs keep the first on ties).
func Argmax(xs []float32) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// scaleRow multiplies xs by s in place (ggml_scale).
func scaleRow(xs []float32, s float32) {
	for i := range xs {
		xs[i] *= s
	}
}
