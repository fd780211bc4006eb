package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/quantize"
)

// The Whisper-style audio encoder of projector files, as llama.cpp's mtmd
// library runs it (tools/mtmd/models/whisper-enc.cpp): two 1-D
// convolutions over the log-mel frames, a ViT of non-causal blocks (the
// vision towers' blocks, tensors named a.blk.N.*), average pooling of
// frame pairs and the projector.

// Audio projector types with a forward pass.
const (
	projQwen2A  = "qwen2a"
	projVoxtral = "voxtral"
)

// AudioProjectors are the projector types Audio runs
// (clip_graph_whisper_enc): Qwen2-Audio's encoder with its linear
// projector, and Voxtral's with its frame stacking and two-layer
// projector; and Gemma 4's conformer (clip_graph_gemma4a, gemma4audio.go).
var AudioProjectors = []string{projQwen2A, projVoxtral, projGemma4A}

// AudioConfig holds an audio encoder's hyperparameters as clip.cpp's
// clip_model_loader reads them (clip.audio.*).
type AudioConfig struct {
	Projector                                 string
	Embd, FF, Heads, Layers, ProjDim, MelBins int
	Eps                                       float32
	// Stack is how many pooled positions Voxtral's projector takes side
	// by side (clip.audio.projector.stack_factor).
	Stack int
}

// ParseAudioConfig reads a projector file's audio encoder (its type
// clip.projector_type, or clip.audio.projector_type in a file with one per
// tower); a type outside AudioProjectors is ErrUnsupported.
func ParseAudioConfig(md Metadata) (*AudioConfig, error) {
	r := &kvReader{md: md}
	c := &AudioConfig{}
	ok, err := r.str("clip.audio.projector_type", &c.Projector, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		if _, err := r.str("clip.projector_type", &c.Projector, true); err != nil {
			return nil, err
		}
	}
	if c.Projector != projQwen2A && c.Projector != projVoxtral && c.Projector != projGemma4A {
		return nil, fmt.Errorf("%w: no audio forward pass for projector %q", ErrUnsupported, c.Projector)
	}
	for _, k := range []struct {
		key string
		dst *int
	}{
		{"clip.audio.embedding_length", &c.Embd}, {"clip.audio.feed_forward_length", &c.FF},
		{"clip.audio.attention.head_count", &c.Heads}, {"clip.audio.block_count", &c.Layers},
		{"clip.audio.projection_dim", &c.ProjDim}, {"clip.audio.num_mel_bins", &c.MelBins},
	} {
		if _, err := r.u32(k.key, k.dst, true); err != nil {
			return nil, err
		}
		if *k.dst <= 0 || *k.dst > maxDim {
			return nil, fmt.Errorf("%w: %s = %d", ErrMetadata, k.key, *k.dst)
		}
	}
	if c.Layers > maxLayers || c.Embd%c.Heads != 0 {
		return nil, fmt.Errorf("%w: %d blocks, embedding length %d over %d heads", ErrMetadata, c.Layers, c.Embd, c.Heads)
	}
	if _, err := r.f32("clip.audio.attention.layer_norm_epsilon", &c.Eps, true); err != nil {
		return nil, err
	}
	if c.Projector == projGemma4A {
		// clip.cpp hard-codes 1e-6 for gemma4a whatever the key says (its
		// converter once wrote a wrong value).
		c.Eps = g4aEps
	}
	c.Stack = 1
	if c.Projector == projVoxtral {
		if _, err := r.u32("clip.audio.projector.stack_factor", &c.Stack, true); err != nil {
			return nil, err
		}
		if c.Stack <= 0 || c.Stack*c.Embd > maxDim {
			return nil, fmt.Errorf("%w: clip.audio.projector.stack_factor = %d", ErrMetadata, c.Stack)
		}
	}
	return c, nil
}

// Audio is an audio encoder with its projector: the linears' weights read
// on use from their stored blocks, the convolution kernels, position table,
// norms and biases decoded to float32.
type Audio struct {
	Config *AudioConfig
	// blocks runs the encoder's blocks (LayerNorm, erf-GELU feed-forward).
	blocks *Vision
	// conv1 is [E][mel bins][3], conv2 [E][E][3], both rounded to fp16 as
	// ggml_conv_1d's F16 im2col makes ggml_mul_mat round them (for a BF16
	// kernel ggml keeps its im2col in float32: the rounding here then
	// differs from llama.cpp's by less than fp16's precision).
	conv1, conv1B, conv2, conv2B []float32
	pos                          []float32
	// MaxFrames is the most log-mel frames the position table covers (two
	// a position: the second convolution has stride 2).
	MaxFrames int
	// Qwen2-Audio's projector is mm.a.fc; Voxtral's mm.a.mlp.1, erf GELU,
	// mm.a.mlp.2.
	fc, mlp1, mlp2    *matrix
	fcB, mlp1B, mlp2B []float32
	// conformer is Gemma 4's tower (gemma4a), which runs instead of the
	// Whisper encoder.
	conformer *gemma4Audio
	// Bins is the log-mel bins Features takes: MelBins, or for gemma4a
	// what its input projection reads (see docs/compat.md).
	Bins int
}

// LoadAudio reads an audio encoder's weights (ErrWeights for a missing
// tensor or one of the wrong shape).
func LoadAudio(c *AudioConfig, w Weights) (*Audio, error) {
	if c.Projector == projGemma4A {
		g, err := loadGemma4Audio(c, w)
		if err != nil {
			return nil, err
		}
		return &Audio{Config: c, conformer: g, Bins: g.bins, MaxFrames: gemma4aFrames}, nil
	}
	vc := &VisionConfig{Projector: c.Projector, Embd: c.Embd, FF: c.FF, Heads: c.Heads, Layers: c.Layers,
		ProjDim: c.ProjDim, Eps: c.Eps, act: actGELUErf}
	a := &Audio{Config: c, blocks: &Vision{Config: vc}, Bins: c.MelBins}
	l := &encLoader{w: w}
	n := c.Embd
	a.conv1 = fp16Round(l.getN("a.conv1d.1.weight", []int{3, c.MelBins, n}, true))
	a.conv1B = l.get("a.conv1d.1.bias", 1, n, true)
	a.conv2 = fp16Round(l.getN("a.conv1d.2.weight", []int{3, n, n}, true))
	a.conv2B = l.get("a.conv1d.2.bias", 1, n, true)
	rows := tensorDim(w, "a.position_embd.weight", 1)
	a.pos, a.MaxFrames = l.get("a.position_embd.weight", n, rows, true), 2*rows
	a.blocks.postLnW, a.blocks.postLnB = l.get("a.post_ln.weight", n, 1, true), l.get("a.post_ln.bias", n, 1, true)
	a.blocks.loadLayers(l, "a.")
	if c.Projector == projVoxtral {
		hidden := tensorDim(w, "mm.a.mlp.1.weight", 1)
		a.mlp1, a.mlp1B = l.mat("mm.a.mlp.1.weight", n*c.Stack, hidden, true), l.get("mm.a.mlp.1.bias", hidden, 1, false)
		a.mlp2, a.mlp2B = l.mat("mm.a.mlp.2.weight", hidden, c.ProjDim, true), l.get("mm.a.mlp.2.bias", c.ProjDim, 1, false)
	} else {
		a.fc, a.fcB = l.mat("mm.a.fc.weight", n, c.ProjDim, true), l.get("mm.a.fc.bias", c.ProjDim, 1, true)
	}
	if l.err != nil {
		return nil, l.err
	}
	return a, nil
}

// fp16Round rounds each value to fp16 in place.
func fp16Round(xs []float32) []float32 {
	for i, x := range xs {
		xs[i] = quantize.FP16ToFP32(quantize.FP32ToFP16(x))
	}
	return xs
}

// Features runs the encoder and its projector over a log-mel spectrogram
// of frames columns ([Bins][frames] values, frames a multiple of 4 (of
// 4·Stack for Voxtral) and at most MaxFrames) and returns one embedding per
// pair of encoder positions (per Stack pairs for Voxtral; per position
// after the two stride-2 convolutions for gemma4a).
func (a *Audio) Features(ctx context.Context, mel []float32, frames, threads int) ([][]float32, error) {
	c := a.Config
	if frames <= 0 || frames%(4*c.Stack) != 0 || frames > a.MaxFrames || len(mel) != a.Bins*frames {
		return nil, fmt.Errorf("%w: %d log-mel values for %d frames of %d bins (frames a multiple of %d, at most %d)",
			ErrUnsupported, len(mel), frames, a.Bins, 4*c.Stack, a.MaxFrames)
	}
	if a.conformer != nil {
		return a.conformer.features(ctx, mel, frames, threads)
	}
	bins := alloc2(c.MelBins, frames)
	for b := range bins {
		copy(bins[b], mel[b*frames:(b+1)*frames])
	}
	h := conv1d(bins, a.conv1, a.conv1B, 1)
	h = conv1d(h, a.conv2, a.conv2B, 2)
	n, T := c.Embd, len(h[0])
	x := alloc2(T, n)
	for t := range x {
		for e := range n {
			x[t][e] = h[e][t] + a.pos[t*n+e]
		}
	}
	s := towerSession(threads)
	if _, err := a.blocks.blocks(ctx, s, x, &patchGrid{}); err != nil {
		return nil, err
	}
	// Average pooling of position pairs and the post-LayerNorm (in
	// build_vit), then the projector: Qwen2-Audio's mm.a.fc of each pooled
	// position, Voxtral's two layers over Stack of them side by side.
	in := alloc2(T/2/c.Stack, n*c.Stack)
	for o := range T / 2 {
		p := in[o/c.Stack][o%c.Stack*n : (o%c.Stack+1)*n]
		for e := range p {
			p[e] = (x[2*o][e] + x[2*o+1][e]) / 2
		}
		layerNorm(p, p, a.blocks.postLnW, a.blocks.postLnB, c.Eps)
	}
	if a.fc != nil {
		return s.project(ctx, a.fc, a.fcB, nil, in)
	}
	return s.twoLayers(ctx, a.mlp1, a.mlp1B, geluErf, a.mlp2, a.mlp2B, in)
}

// conv1d is ggml_conv_1d_ph with erf GELU after it: a kernel of 3 over the
// rows of in (channels × frames), padding 1, the given stride; the input
// rounded to fp16 as ggml's im2col stores it.
func conv1d(in [][]float32, w, b []float32, stride int) [][]float32 {
	ch, frames := len(in), len(in[0])
	outCh := len(b)
	outLen := (frames+2-3)/stride + 1
	col := make([]float32, ch*3)
	out := alloc2(outCh, outLen)
	for t := range outLen {
		for c := range ch {
			for k := range 3 {
				f := t*stride + k - 1
				v := float32(0)
				if f >= 0 && f < frames {
					v = quantize.FP16ToFP32(quantize.FP32ToFP16(in[c][f]))
				}
				col[c*3+k] = v
			}
		}
		for o := range outCh {
			out[o][t] = geluErf(dotF32(w[o*len(col):(o+1)*len(col)], col) + b[o])
		}
	}
	return out
}

// TestMel is verify's fixed log-mel input: bins × frames values (row-major
// by bin) of a deterministic pattern in Whisper's normalised range,
// sin(0.37·f + 0.11·b) · 0.8 + 0.1·((7f + 3b) mod 5) − 0.2 for frame f and
// bin b (testdata/gen/make_audio_features.py computes the same).
func TestMel(bins, frames int) []float32 {
	mel := make([]float32, 0, bins*frames)
	for b := range bins {
		for f := range frames {
			mel = append(mel, float32(math.Sin(0.37*float64(f)+0.11*float64(b))*0.8+0.1*float64((7*f+3*b)%5)-0.2))
		}
	}
	return mel
}
