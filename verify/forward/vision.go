package forward

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ggufkit/ggufkit/gguf"
)

// Vision towers of multimodal projector files (general.architecture clip),
// as llama.cpp's mtmd library runs them (tools/mtmd/clip.cpp): a patch
// embedding, a ViT of non-causal blocks and the projector into the text
// model's width. The towers implemented are the projector types of
// VisionProjectors.

// Projector types with a vision forward pass.
const (
	projGemma3  = "gemma3"
	projQwen2   = "qwen2vl_merger"
	projQwen25  = "qwen2.5vl_merger"
	projQwen3   = "qwen3vl_merger"
	projPixtral = "pixtral"
	projIdefics = "idefics3"
	projLFM2    = "lfm2"
	projIntern  = "internvl"
	projGLM4V   = "glm4v"
	projGemma4V = "gemma4v"
)

// VisionProjectors are the clip.projector_type values Vision runs:
// Gemma 3's SigLIP tower with its average-pooling projector
// (clip_graph_siglip), Qwen2-VL's and Qwen2.5-VL's towers (window
// attention in the latter) with their 2×2 patch merger (clip_graph_qwen2vl),
// Qwen3-VL's with its interpolated position table and deepstack mergers
// (clip_graph_qwen3vl), and the Pixtral / Mistral 3 tower
// (LlavaForConditionalGeneration and Mistral3ForConditionalGeneration
// conversions: 2-D RoPE, SwiGLU, optional patch merger, two-layer
// projector; clip_graph_pixtral), and the SigLIP towers of SmolVLM /
// Idefics3 (pixel shuffle, one linear map) and LFM2-VL (position table
// resized to the image, pixel unshuffle, LayerNorm and two-layer
// projector; clip_graph_siglip), and InternVL's (a class token, layer
// scales, pixel shuffle, LayerNorm and two-layer projector;
// clip_graph_internvl), and GLM-4.1V's / GLM-4.5V's (the Qwen towers'
// patches and 2-D M-RoPE with RMS-norm SwiGLU blocks, a convolution over
// each 2×2 block, a LayerNorm + GELU and a SwiGLU projector;
// clip_graph_glm4v) on images whose patch grid is its position table's,
// and Gemma 4's (x and y position tables, per-head q/k/v norms, 2-D NeoX
// RoPE, post-norms, clamped linears, average pooling; clip_graph_gemma4v).
var VisionProjectors = []string{projGemma3, projQwen2, projQwen25, projQwen3, projPixtral, projIdefics, projLFM2, projIntern, projGLM4V, projGemma4V}

// Bounds of a tower's image geometry.
const (
	maxImageSide = 1 << 13
	maxPatch     = 1 << 8
)

// visionAct is the blocks' feed-forward activation (clip.use_gelu,
// clip.use_silu, else GELU-quick).
type visionAct int

const (
	actGELUQuick visionAct = iota
	actGELU
	actSiLU
	// actGELUErf is the audio towers' (clip.cpp sets it for them).
	actGELUErf
)

// VisionConfig holds a vision tower's hyperparameters as clip.cpp's
// clip_model_loader reads them.
type VisionConfig struct {
	Projector                                              string
	Embd, FF, Heads, Layers, PatchSize, ImageSize, ProjDim int
	Eps                                                    float32
	// Mean and Std normalise the image's channels (clip.vision.image_mean,
	// clip.vision.image_std).
	Mean, Std [3]float32
	act       visionAct
	// Merge is Gemma 3's pooling kernel (clip.vision.projector.scale_factor,
	// default 4), the side of the Qwen towers' and Pixtral's merged patch
	// groups (clip.vision.spatial_merge_size, default 2 and 1) or of the
	// patch squares SmolVLM's, LFM2-VL's and InternVL's pixel shuffle puts side by side
	// (clip.vision.projector.scale_factor, more than 1).
	Merge int
	// WindowPattern is Qwen2.5-VL's n_wa_pattern: every WindowPattern-th
	// block attends over the whole image, the others within windows of
	// WindowSize pixels (112: clip.cpp reads no key for it).
	WindowPattern, WindowSize int
	// Deepstack flags Qwen3-VL's blocks whose output also goes through a
	// merger of its own (clip.vision.is_deepstack_layers).
	Deepstack []bool
}

// ParseVisionConfig reads a projector file's vision tower; a projector
// type outside VisionProjectors is ErrUnsupported.
func ParseVisionConfig(md Metadata) (*VisionConfig, error) {
	r := &kvReader{md: md}
	c := &VisionConfig{}
	// A file with one projector per tower (Gemma 4) names the vision one
	// clip.vision.projector_type.
	ok, err := r.str("clip.vision.projector_type", &c.Projector, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		if _, err := r.str("clip.projector_type", &c.Projector, true); err != nil {
			return nil, err
		}
	}
	switch c.Projector {
	case projGemma3, projQwen2, projQwen25, projQwen3, projPixtral, projIdefics, projLFM2, projIntern, projGLM4V, projGemma4V:
	default:
		return nil, fmt.Errorf("%w: no vision forward pass for projector %q", ErrUnsupported, c.Projector)
	}
	for _, k := range []struct {
		key string
		dst *int
	}{
		{"clip.vision.embedding_length", &c.Embd}, {"clip.vision.feed_forward_length", &c.FF},
		{"clip.vision.attention.head_count", &c.Heads}, {"clip.vision.block_count", &c.Layers},
		{"clip.vision.patch_size", &c.PatchSize}, {"clip.vision.image_size", &c.ImageSize},
		{"clip.vision.projection_dim", &c.ProjDim},
	} {
		if _, err := r.u32(k.key, k.dst, true); err != nil {
			return nil, err
		}
		if *k.dst <= 0 || *k.dst > maxDim {
			return nil, fmt.Errorf("%w: %s = %d", ErrMetadata, k.key, *k.dst)
		}
	}
	// Images of at most maxImageSide pixels a side, patches of at most
	// maxPatch: bounds on what a file's keys can make the pass allocate.
	if c.ImageSize > maxImageSide || c.PatchSize > maxPatch || c.PatchSize > c.ImageSize {
		return nil, fmt.Errorf("%w: image size %d, patch size %d (at most %d and %d)", ErrMetadata, c.ImageSize, c.PatchSize, maxImageSide, maxPatch)
	}
	if c.Layers > maxLayers {
		return nil, fmt.Errorf("%w: clip.vision.block_count = %d (must be 1..%d)", ErrMetadata, c.Layers, maxLayers)
	}
	if c.Embd%c.Heads != 0 || (c.Embd/c.Heads)%4 != 0 {
		return nil, fmt.Errorf("%w: embedding length %d over %d heads", ErrMetadata, c.Embd, c.Heads)
	}
	if _, err := r.f32("clip.vision.attention.layer_norm_epsilon", &c.Eps, true); err != nil {
		return nil, err
	}
	for _, k := range []struct {
		key string
		dst *[3]float32
	}{{"clip.vision.image_mean", &c.Mean}, {"clip.vision.image_std", &c.Std}} {
		v, ok := md.KV(k.key)
		xs, isF := v.Float32s()
		if !ok || !isF || len(xs) < 3 {
			return nil, fmt.Errorf("%w: %s is not 3 FLOAT32 values", ErrMetadata, k.key)
		}
		copy(k.dst[:], xs)
	}
	for _, s := range c.Std {
		if s == 0 {
			return nil, fmt.Errorf("%w: clip.vision.image_std has a zero", ErrMetadata)
		}
	}
	var useGELU, useSiLU bool
	if _, err := r.boolean("clip.use_gelu", &useGELU, false); err != nil {
		return nil, err
	}
	if _, err := r.boolean("clip.use_silu", &useSiLU, false); err != nil {
		return nil, err
	}
	switch {
	case useGELU && useSiLU:
		return nil, fmt.Errorf("%w: both clip.use_gelu and clip.use_silu are set", ErrMetadata)
	case useGELU:
		c.act = actGELU
	case useSiLU:
		c.act = actSiLU
	}
	mergeKey := "clip.vision.spatial_merge_size"
	switch c.Projector {
	case projGemma3:
		c.Merge, mergeKey = 4, "clip.vision.projector.scale_factor"
	case projGemma4V:
		c.Merge, mergeKey = 3, "clip.vision.projector.scale_factor"
	case projQwen2, projQwen25:
		c.Merge, c.WindowSize = 2, 112
		// Only Qwen2.5-VL requires the key (clip.cpp); Qwen2-VL has no windows.
		if _, err := r.u32("clip.vision.n_wa_pattern", &c.WindowPattern, c.Projector == projQwen25); err != nil {
			return nil, err
		}
	case projGLM4V:
		c.Merge = 2
	case projQwen3:
		c.Merge = 2
		if x, ok := md.KV("clip.vision.is_deepstack_layers"); ok {
			flags, isBools := x.Any().([]bool)
			if !isBools || len(flags) > c.Layers {
				return nil, fmt.Errorf("%w: clip.vision.is_deepstack_layers is not an array of at most %d BOOL", ErrMetadata, c.Layers)
			}
			c.Deepstack = flags
		}
	case projPixtral:
		c.Merge = 1
	case projIdefics, projLFM2, projIntern:
		c.Merge, mergeKey = 1, "clip.vision.projector.scale_factor"
	}
	if _, err := r.u32(mergeKey, &c.Merge, false); err != nil {
		return nil, err
	}
	if c.Merge <= 0 || c.Merge*c.PatchSize > maxPatch || c.qwen() && c.Merge != 2 || c.shuffles() && c.Merge < 2 {
		return nil, fmt.Errorf("%w: %s = %d", ErrMetadata, mergeKey, c.Merge)
	}
	return c, nil
}

// shuffles tells the towers whose projector starts with clip.cpp's
// build_patch_merge_permute or InternVL's same pixel shuffle (SmolVLM,
// LFM2-VL, InternVL).
func (c *VisionConfig) shuffles() bool {
	return c.Projector == projIdefics || c.Projector == projLFM2 || c.Projector == projIntern
}

// qwen tells the towers with the Qwen-VL patch order and RoPE
// (clip_graph_qwen2vl, clip_graph_qwen3vl, clip_graph_glm4v).
func (c *VisionConfig) qwen() bool {
	return c.Projector == projQwen2 || c.Projector == projQwen25 || c.Projector == projQwen3 || c.Projector == projGLM4V
}

// Image is a preprocessed image: channel planes of Height × Width values,
// normalised (llama.cpp's clip_image_f32 as its inp_raw holds it).
type Image struct {
	Width, Height int
	Pix           []float32 // [3][Height][Width]
}

// NormalizeImage turns 8-bit RGB pixels (row-major, 3 bytes a pixel) into
// an Image: each value / 255, less the channel's mean, over its std
// (clip.cpp's normalize_image_u8_to_f32).
func NormalizeImage(rgb []byte, width, height int, mean, std [3]float32) (*Image, error) {
	if width <= 0 || height <= 0 || len(rgb) != 3*width*height {
		return nil, fmt.Errorf("%w: %d bytes for a %d×%d RGB image", ErrUnsupported, len(rgb), width, height)
	}
	img := &Image{Width: width, Height: height, Pix: make([]float32, len(rgb))}
	plane := width * height
	for i := range plane {
		for c := range 3 {
			img.Pix[c*plane+i] = (float32(rgb[3*i+c])/255 - mean[c]) / std[c]
		}
	}
	return img, nil
}

// visionLayer is one block's weights: its linears as matrices multiplied on
// their stored blocks, the rest decoded.
type visionLayer struct {
	ln1W, ln1B, ln2W, ln2B []float32
	q, k, v, o             *matrix
	qB, kB, vB, oB         []float32
	up, gate, down         *matrix
	upB, gateB, downB      []float32
	// ls1 and ls2 scale the attention's and the feed-forward's outputs
	// (InternVL's layer scales; nil without).
	ls1, ls2 []float32
	// Gemma 4: per-head RMS norms of q and k (and of v, without weight),
	// RMS norms of the attention's and the feed-forward's outputs, and the
	// clamps of its linears (nil without).
	qNorm, kNorm, attnPostNorm, ffnPostNorm []float32
	qC, kC, vC, oC, upC, gateC, downC       *clampRange
	// deepstack is Qwen3-VL's merger of this block's output (nil without).
	deepstack *merger
}

// clampRange is a Gemma4ClippableLinear's bounds: its input clamped to
// [inMin, inMax], its output to [outMin, outMax].
type clampRange struct{ inMin, inMax, outMin, outMax float32 }

// loadClamp reads the clamp scalars of the linear named base (base +
// ".input_min" …), nil when it has none (clip.cpp: ±FLT_MAX for a missing
// one).
func loadClamp(l *encLoader, base string) *clampRange {
	cr := &clampRange{-math.MaxFloat32, math.MaxFloat32, -math.MaxFloat32, math.MaxFloat32}
	found := false
	for _, k := range []struct {
		suffix string
		dst    *float32
	}{{".input_min", &cr.inMin}, {".input_max", &cr.inMax}, {".output_min", &cr.outMin}, {".output_max", &cr.outMax}} {
		if x := l.get(base+k.suffix, 1, 1, false); x != nil {
			*k.dst, found = x[0], true
		}
	}
	if !found {
		return nil
	}
	return cr
}

// towerSession is a Session without a model for a tower's products
// (Session.mul on the stored blocks, spread over threads goroutines).
func towerSession(threads int) *Session {
	return &Session{m: &Model{threads: max(1, threads)}}
}

// project returns W·x[t] + b for every row of x, W multiplied on its stored
// blocks (Session.mul); with cr (Gemma 4's clippable linears) the inputs
// and the outputs are clamped to its bounds.
func (s *Session) project(ctx context.Context, w *matrix, b []float32, cr *clampRange, x [][]float32) ([][]float32, error) {
	if cr != nil {
		in := rows(len(x), w.cols)
		for t, row := range x {
			for i, v := range row[:w.cols] {
				in[t][i] = min(max(v, cr.inMin), cr.inMax)
			}
		}
		x = in
	}
	out := rows(len(x), w.rows)
	if err := s.mul(ctx, w, b, x, out); err != nil {
		return nil, err
	}
	if cr != nil {
		for _, row := range out {
			for i, v := range row {
				row[i] = min(max(v, cr.outMin), cr.outMax)
			}
		}
	}
	return out, nil
}

// kernel checks a convolution kernel of the given ggml shape and returns
// it as the matrix of its outputs (the last dimension), each a row of all
// the other dimensions' values, read on use like mat's.
func (l *encLoader) kernel(name string, shape []int, required bool) *matrix {
	t := l.shaped(name, shape, required)
	if t == nil {
		return nil
	}
	outs := shape[len(shape)-1]
	per := 1 // stored rows (of shape[0] values) per output
	for _, d := range shape[1 : len(shape)-1] {
		per *= d
	}
	t = kernelRows(t, per)
	return &matrix{name: name, tensor: name, expert: -1, t: t, cols: per * shape[0], rows: outs}
}

// kernelRows serves t as rows of per stored rows each: contiguous values,
// and for a block tensor contiguous bytes (its rows are whole blocks).
func kernelRows(t Tensor, per int) Tensor {
	g := rowGroups{t, per}
	if bt, ok := t.(blockTensor); ok {
		return blockRowGroups{g, bt}
	}
	return g
}

// rowGroups is a Tensor of rows of per rows of the underlying one.
type rowGroups struct {
	t   Tensor
	per int
}

func (g rowGroups) Shape() []int64 {
	s := g.t.Shape()
	n := int64(1)
	for _, d := range s[1:] {
		n *= d
	}
	return []int64{s[0] * int64(g.per), n / int64(g.per)}
}

func (g rowGroups) ReadRows(r0, n int, dst []float32) error {
	return g.t.ReadRows(r0*g.per, n*g.per, dst)
}

type blockRowGroups struct {
	rowGroups
	bt blockTensor
}

func (g blockRowGroups) blockType() gguf.Type { return g.bt.blockType() }

func (g blockRowGroups) blockRows(r0, n int) ([]byte, error) {
	return g.bt.blockRows(r0*g.per, n*g.per)
}

// merger is a Qwen tower's patch merger: each 2×2 block's four states side
// by side, through a LayerNorm of them all when normW is set (Qwen3-VL's
// deepstack mergers), fc1, GELU and fc2.
type merger struct {
	normW, normB, fc1B, fc2B []float32
	fc1, fc2                 *matrix
}

// Vision is a vision tower with its projector: the linears' weights read
// on use from their stored blocks (Weights, a GGUF's memory map), the
// small tensors (norms, biases, position tables, patch kernels, Gemma 3's
// input projection) decoded to float32.
type Vision struct {
	Config *VisionConfig
	// patch[1] is the Qwen towers' second temporal kernel, [E][3][P][P] each.
	patch       [2][]float32
	patchB, pos []float32
	// posSide is the side of Qwen3-VL's and LFM2-VL's square position
	// tables, which are resized to the image's grid.
	posSide          int
	preLnW, preLnB   []float32
	postLnW, postLnB []float32
	layers           []visionLayer
	// Gemma 3: soft-embedding norm and input projection ([E][D], rows
	// of the output's width: decoded, not a matrix of the products).
	softEmbNorm, inputProj []float32
	// inputProjM is Gemma 4's input projection.
	inputProjM *matrix
	// qwenMerger is the Qwen towers' (mm.0, mm.2).
	qwenMerger *merger
	// SmolVLM's projection of the shuffled patches (mm.model.fc); LFM2-VL
	// has mm.1 and mm.2 after an optional LayerNorm (mm.input_norm),
	// InternVL the same after mm.model.mlp.0 (its mm.1 and mm.2 are
	// mm.model.mlp.1 and .3).
	mmFC             *matrix
	inNormW, inNormB []float32
	// classEmbd is InternVL's class token, appended after the patches.
	classEmbd []float32
	// Gemma 4: the input projection's clamps and the optional
	// standardisation of the pooled features.
	inputProjC        *clampRange
	stdBias, stdScale []float32
	// posTable is the length of Gemma 4's x and y position tables.
	posTable int
	// GLM-4.1V: the RMS norm after the patch embedding, the 2×2 merger
	// convolution ([Merge][Merge][E][M] in ggml order) and its bias, and
	// the projector: mm.model.fc, the LayerNorm mm.post_norm, then a
	// SwiGLU of mm.up / mm.gate / mm.down.
	normEmbd, glmMergerB          []float32
	glmMerger                     *matrix
	postNormW, postNormB          []float32
	projUp, projGate, projDown    *matrix
	projUpB, projGateB, projDownB []float32
	glmMergerOut, glmFCOut, glmFF int
	// Pixtral's projector (mm.1, mm.2), Mistral 3's norm and patch merger
	// before it, and the [IMG_BREAK] embedding that ends each row of image
	// tokens but the last.
	mm1, mm2   *matrix
	mm1B, mm2B []float32
	merger     *matrix
	mergerNorm []float32
	imgBreak   []float32
	// rms: the blocks' norms are RMS norms (Qwen2.5-VL, Pixtral).
	rms bool
}

// LoadVision reads a vision tower's weights (ErrWeights for a missing
// tensor or one of the wrong shape).
func LoadVision(c *VisionConfig, w Weights) (*Vision, error) {
	// InternVL's 6B tower (3200 wide, 45 blocks) has RMS norms
	// (clip_graph_internvl).
	intern6B := c.Projector == projIntern && c.Embd == 3200 && c.Layers == 45
	v := &Vision{Config: c, rms: c.Projector == projQwen25 || c.Projector == projPixtral || c.Projector == projGLM4V || c.Projector == projGemma4V || intern6B}
	l := &encLoader{w: w}
	n, p := c.Embd, c.PatchSize
	v.patch[0] = l.getN("v.patch_embd.weight", []int{p, p, 3, n}, true)
	v.patchB = l.get("v.patch_embd.bias", n, 1, false)
	v.preLnW, v.preLnB = l.get("v.pre_ln.weight", n, 1, false), l.get("v.pre_ln.bias", n, 1, false)
	v.postLnW, v.postLnB = l.get("v.post_ln.weight", n, 1, false), l.get("v.post_ln.bias", n, 1, false)
	v.loadLayers(l, "v.")
	d := c.ProjDim
	switch c.Projector {
	case projGemma3, projIdefics:
		side := c.ImageSize / p
		v.pos = l.get("v.position_embd.weight", n, side*side, true)
		if c.Projector == projIdefics {
			v.mmFC = l.mat("mm.model.fc.weight", n*c.Merge*c.Merge, d, true)
			break
		}
		v.softEmbNorm = l.get("mm.soft_emb_norm.weight", n, 1, true)
		v.inputProj = l.get("mm.input_projection.weight", d, n, true)
	case projGLM4V:
		v.patch[1] = l.getN("v.patch_embd.weight.1", []int{p, p, 3, n}, true)
		v.normEmbd = l.get("v.norm_embd.weight", n, 1, false)
		v.loadSquarePositions(l)
		k := c.Merge
		v.glmMergerOut = tensorDim(w, "mm.patch_merger.weight", 3)
		v.glmMerger = l.kernel("mm.patch_merger.weight", []int{k, k, n, v.glmMergerOut}, true)
		v.glmMergerB = l.get("mm.patch_merger.bias", v.glmMergerOut, 1, true)
		v.glmFCOut = tensorDim(w, "mm.model.fc.weight", 1)
		v.mmFC = l.mat("mm.model.fc.weight", v.glmMergerOut, v.glmFCOut, true)
		v.postNormW, v.postNormB = l.get("mm.post_norm.weight", v.glmFCOut, 1, true), l.get("mm.post_norm.bias", v.glmFCOut, 1, false)
		v.glmFF = tensorDim(w, "mm.up.weight", 1)
		v.projUp, v.projUpB = l.mat("mm.up.weight", v.glmFCOut, v.glmFF, true), l.get("mm.up.bias", v.glmFF, 1, false)
		v.projGate, v.projGateB = l.mat("mm.gate.weight", v.glmFCOut, v.glmFF, true), l.get("mm.gate.bias", v.glmFF, 1, false)
		v.projDown, v.projDownB = l.mat("mm.down.weight", v.glmFF, d, true), l.get("mm.down.bias", d, 1, false)
	case projGemma4V:
		size := tensorDim(w, "v.position_embd.weight", 1)
		v.pos, v.posTable = l.getN("v.position_embd.weight", []int{n, size, 2}, true), size
		v.inputProjM = l.mat("mm.input_projection.weight", n, d, true)
		v.inputProjC = loadClamp(l, "mm.input_projection")
		v.stdBias, v.stdScale = l.get("v.std_bias", n, 1, false), l.get("v.std_scale", n, 1, false)
	case projLFM2, projIntern:
		m := n * c.Merge * c.Merge
		norm, fc1, fc2 := "mm.input_norm.", "mm.1.", "mm.2."
		if c.Projector == projIntern {
			side := c.ImageSize / p
			v.pos = l.getN("v.position_embd.weight", []int{n, side*side + 1, 1}, true)
			v.classEmbd = l.getN("v.class_embd", []int{n, 1, 1}, true)
			norm, fc1, fc2 = "mm.model.mlp.0.", "mm.model.mlp.1.", "mm.model.mlp.3."
		} else {
			v.loadSquarePositions(l)
		}
		required := c.Projector == projIntern
		v.inNormW, v.inNormB = l.get(norm+"weight", m, 1, required), l.get(norm+"bias", m, 1, required)
		hidden := tensorDim(w, fc1+"weight", 1)
		v.mm1, v.mm1B = l.mat(fc1+"weight", m, hidden, true), l.get(fc1+"bias", hidden, 1, true)
		v.mm2, v.mm2B = l.mat(fc2+"weight", hidden, d, true), l.get(fc2+"bias", d, 1, true)
	case projQwen2, projQwen25, projQwen3:
		v.patch[1] = l.getN("v.patch_embd.weight.1", []int{p, p, 3, n}, true)
		v.qwenMerger = loadMerger(l, "mm.", "", "0", "2", n, d)
		if c.Projector == projQwen3 {
			v.loadSquarePositions(l)
		}
	case projPixtral:
		v.mm1, v.mm1B = l.mat("mm.1.weight", n, d, true), l.get("mm.1.bias", d, 1, false)
		v.mm2, v.mm2B = l.mat("mm.2.weight", d, d, true), l.get("mm.2.bias", d, 1, false)
		v.imgBreak = l.get("v.token_embd.img_break", d, 1, false)
		if _, ok := w.Tensor("mm.patch_merger.weight"); ok {
			v.mergerNorm = l.get("mm.input_norm.weight", n, 1, true)
			v.merger = l.mat("mm.patch_merger.weight", n*c.Merge*c.Merge, n, true)
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	return v, nil
}

// loadLayers reads the blocks of a tower whose tensors are named prefix +
// "blk.N." ("v." for vision, "a." for audio).
func (v *Vision) loadLayers(l *encLoader, prefix string) {
	c := v.Config
	n, ff := c.Embd, c.FF
	v.layers = make([]visionLayer, c.Layers)
	for i := range v.layers {
		L := &v.layers[i]
		b := fmt.Sprintf("%sblk.%d.", prefix, i)
		L.ln1W, L.ln1B = l.get(b+"ln1.weight", n, 1, true), l.get(b+"ln1.bias", n, 1, false)
		L.ln2W, L.ln2B = l.get(b+"ln2.weight", n, 1, true), l.get(b+"ln2.bias", n, 1, false)
		if c.Projector == projQwen3 || c.Projector == projGLM4V {
			// build_qkv's views of the fused output: q, k, v in turn.
			qkv, qkvB := l.mat(b+"attn_qkv.weight", n, 3*n, true), l.get(b+"attn_qkv.bias", 3*n, 1, c.Projector == projQwen3)
			if qkv != nil {
				part := func(i int) *matrix {
					m := *qkv
					m.rows, m.off = n, i*n
					return &m
				}
				L.q, L.k, L.v = part(0), part(1), part(2)
			}
			if qkvB != nil {
				L.qB, L.kB, L.vB = qkvB[:n], qkvB[n:2*n], qkvB[2*n:]
			}
			if i < len(c.Deepstack) && c.Deepstack[i] {
				L.deepstack = loadMerger(l, fmt.Sprintf("%sdeepstack.%d.", prefix, i), "norm", "fc1", "fc2", n, c.ProjDim)
			}
		} else {
			L.q, L.qB = l.mat(b+"attn_q.weight", n, n, true), l.get(b+"attn_q.bias", n, 1, false)
			L.k, L.kB = l.mat(b+"attn_k.weight", n, n, true), l.get(b+"attn_k.bias", n, 1, false)
			L.v, L.vB = l.mat(b+"attn_v.weight", n, n, true), l.get(b+"attn_v.bias", n, 1, false)
		}
		L.o, L.oB = l.mat(b+"attn_out.weight", n, n, true), l.get(b+"attn_out.bias", n, 1, false)
		up, down := b+"ffn_up", b+"ffn_down"
		if t, ok := l.w.Tensor(down + ".weight"); ok && legacyFFNNames[c.Projector] && t.Shape()[0] == int64(n) {
			// Files of llama.cpp's older scripts name fc1 ffn_down and fc2
			// ffn_up; clip.cpp swaps them back when ffn_down's rows are
			// embedding_length long (also, as it does, when FF equals it).
			up, down = down, up
		}
		L.up, L.upB = l.mat(up+".weight", n, ff, true), l.get(up+".bias", ff, 1, false)
		L.gate, L.gateB = l.mat(b+"ffn_gate.weight", n, ff, false), l.get(b+"ffn_gate.bias", ff, 1, false)
		L.down, L.downB = l.mat(down+".weight", ff, n, true), l.get(down+".bias", n, 1, false)
		L.ls1, L.ls2 = l.get(b+"ls1.weight", n, 1, false), l.get(b+"ls2.weight", n, 1, false)
		if c.Projector == projGemma4V {
			hd := n / c.Heads
			L.qNorm, L.kNorm = l.get(b+"attn_q_norm.weight", hd, 1, false), l.get(b+"attn_k_norm.weight", hd, 1, false)
			L.attnPostNorm, L.ffnPostNorm = l.get(b+"attn_post_norm.weight", n, 1, false), l.get(b+"ffn_post_norm.weight", n, 1, false)
			L.qC, L.kC, L.vC, L.oC = loadClamp(l, b+"attn_q"), loadClamp(l, b+"attn_k"), loadClamp(l, b+"attn_v"), loadClamp(l, b+"attn_out")
			L.upC, L.gateC, L.downC = loadClamp(l, up), loadClamp(l, b+"ffn_gate"), loadClamp(l, down)
		}
	}
}

// tensorDim is dimension i of a tensor's ggml shape, 0 when the tensor is
// missing or the dimension is out of bounds (the loader then reports the
// tensor's shape).
func tensorDim(w Weights, name string, i int) int {
	if t, ok := w.Tensor(name); ok && len(t.Shape()) > i && t.Shape()[i] > 0 && t.Shape()[i] <= maxDim {
		return int(t.Shape()[i])
	}
	return 0
}

// loadSquarePositions reads a position table of a square grid of rows
// (Qwen3-VL, LFM2-VL), which Features resizes to the image's patches.
func (v *Vision) loadSquarePositions(l *encLoader) {
	n := v.Config.Embd
	if t, ok := l.w.Tensor("v.position_embd.weight"); ok && len(t.Shape()) == 2 {
		rows := int(t.Shape()[1])
		if side := int(math.Sqrt(float64(rows))); side*side == rows {
			v.posSide, v.pos = side, l.get("v.position_embd.weight", n, rows, true)
		}
	}
	if v.pos == nil && l.err == nil {
		l.err = fmt.Errorf("%w: tensor v.position_embd.weight missing or not a square grid of %d-value rows", ErrWeights, n)
	}
}

// legacyFFNNames are the projector types whose files clip.cpp accepts with
// the feed-forward names swapped (clip_model_loader's is_ffn_swapped).
var legacyFFNNames = map[string]bool{projGemma3: true, projQwen2: true, projQwen25: true}

// loadMerger reads a Qwen merger named prefix + fc1/fc2 (and norm when
// norm is not ""), over 4·n values into d.
func loadMerger(l *encLoader, prefix, norm, fc1, fc2 string, n, d int) *merger {
	m := 4 * n
	mg := &merger{
		fc1: l.mat(prefix+fc1+".weight", m, m, true), fc1B: l.get(prefix+fc1+".bias", m, 1, true),
		fc2: l.mat(prefix+fc2+".weight", m, d, true), fc2B: l.get(prefix+fc2+".bias", d, 1, true),
	}
	if norm != "" {
		mg.normW, mg.normB = l.get(prefix+norm+".weight", m, 1, true), l.get(prefix+norm+".bias", m, 1, true)
	}
	return mg
}

// patchGrid is the tower's tokens: their patch rows and columns.
type patchGrid struct {
	nx, ny int
	y, x   []int // each token's patch row and column
}

// Features runs the tower and its projector over img and returns the
// image's embeddings, one per output token, in the order llama.cpp passes
// them to the text model.
func (v *Vision) Features(ctx context.Context, img *Image, threads int) ([][]float32, error) {
	c := v.Config
	p := c.PatchSize
	unit := p
	if c.Projector != projGemma3 {
		unit = p * c.Merge
	}
	if img.Width <= 0 || img.Height <= 0 || img.Width%unit != 0 || img.Height%unit != 0 || len(img.Pix) != 3*img.Width*img.Height {
		return nil, fmt.Errorf("%w: a %d×%d image (its sides must be multiples of %d)", ErrUnsupported, img.Width, img.Height, unit)
	}
	g := &patchGrid{nx: img.Width / p, ny: img.Height / p}
	fixed := c.Projector == projGemma3 || c.Projector == projIdefics || c.Projector == projIntern
	if fixed && (g.nx != g.ny || g.nx*g.ny*c.Embd != len(v.pos)-len(v.classEmbd) || g.nx%c.Merge != 0) {
		return nil, fmt.Errorf("%w: the %s tower takes %d×%d images", ErrUnsupported, c.Projector, c.ImageSize, c.ImageSize)
	}
	if c.Projector == projGLM4V && (g.nx != v.posSide || g.ny != v.posSide) {
		// clip_graph_glm4v resizes the table bicubically, which verify
		// does not implement.
		return nil, fmt.Errorf("%w: the glm4v tower is run on %d×%d images only (its position table's grid)", ErrUnsupported, v.posSide*p, v.posSide*p)
	}
	if c.Projector == projGemma4V {
		if g.nx > v.posTable || g.ny > v.posTable {
			return nil, fmt.Errorf("%w: %d×%d patches, Gemma 4's position tables have %d", ErrUnsupported, g.nx, g.ny, v.posTable)
		}
		// clip_graph_gemma4v's 2·x − 1 of the [0, 1] pixels.
		scaled := &Image{Width: img.Width, Height: img.Height, Pix: make([]float32, len(img.Pix))}
		for i, p := range img.Pix {
			scaled.Pix[i] = 2*p - 1
		}
		img = scaled
	}
	x := v.embedPatches(img, g)
	if v.normEmbd != nil {
		for t := range x {
			rmsNorm(x[t], x[t], v.normEmbd, c.Eps)
		}
	}
	if v.classEmbd != nil {
		// InternVL's class token goes after the patches, the position
		// table's rows added in that order (clip_graph_internvl's
		// ggml_concat): transformers puts it first, with the table's first
		// row.
		x = append(x, slices.Clone(v.classEmbd))
	}
	switch {
	case v.posTable > 0:
		// Gemma 4: the column's row of the x table plus the row's of the y
		// table.
		n, xs := c.Embd, v.pos[:v.posTable*c.Embd]
		ys := v.pos[v.posTable*c.Embd:]
		for t := range x {
			for j := range n {
				x[t][j] += xs[g.x[t]*n+j] + ys[g.y[t]*n+j]
			}
		}
	case v.posSide > 0:
		v.addResizedPositions(x, g)
	case v.pos != nil:
		for t := range x {
			for j := range x[t] {
				x[t][j] += v.pos[t*c.Embd+j]
			}
		}
	}
	if v.preLnW != nil {
		for t := range x {
			v.norm(x[t], x[t], v.preLnW, v.preLnB)
		}
	}
	s := towerSession(threads)
	deep, err := v.blocks(ctx, s, x, g)
	if err != nil {
		return nil, err
	}
	if v.postLnW != nil {
		for t := range x {
			v.norm(x[t], x[t], v.postLnW, v.postLnB)
		}
	}
	switch c.Projector {
	case projGemma3:
		return v.gemma3Projector(x, g), nil
	case projIdefics, projLFM2, projIntern:
		return v.shuffleProjector(ctx, s, x[:g.nx*g.ny], g)
	case projGLM4V:
		return v.glm4vProjector(ctx, s, x)
	case projGemma4V:
		return v.gemma4Projector(ctx, s, x, g)
	case projQwen2, projQwen25, projQwen3:
		out, err := v.merge(ctx, s, x, v.qwenMerger)
		if err != nil {
			return nil, err
		}
		// Qwen3-VL's deepstack features follow each token's own
		// (ggml_concat along the features).
		for _, ds := range deep {
			for o := range out {
				out[o] = append(out[o], ds[o]...)
			}
		}
		return out, nil
	}
	return v.pixtralProjector(ctx, s, x, g)
}

// addResizedPositions adds the square position table resized to the
// patch grid to each token at its patch (ggml_interpolate, bilinear):
// Qwen3-VL's with aligned corners, LFM2-VL's with half-pixel centres,
// clamped at the edges (clip.cpp's resize_position_embeddings).
func (v *Vision) addResizedPositions(x [][]float32, g *patchGrid) {
	n, side := v.Config.Embd, v.posSide
	aligned := v.Config.Projector == projQwen3
	coord := func(i, out int) (int, int, float32) {
		if out == side {
			return i, i, 0
		}
		var f float32
		switch {
		case !aligned:
			f = (float32(i)+0.5)/(float32(out)/float32(side)) - 0.5
		case out > 1:
			f = float32(i) * float32(side-1) / float32(out-1)
		}
		i0 := int(math.Floor(float64(f)))
		d := min(max(f-float32(max(i0, 0)), 0), 1)
		i0 = min(max(i0, 0), side-1)
		return i0, min(i0+1, side-1), d
	}
	for t := range x {
		y0, y1, dy := coord(g.y[t], g.ny)
		x0, x1, dx := coord(g.x[t], g.nx)
		for j := range n {
			p00, p01 := v.pos[(y0*side+x0)*n+j], v.pos[(y0*side+x1)*n+j]
			p10, p11 := v.pos[(y1*side+x0)*n+j], v.pos[(y1*side+x1)*n+j]
			x[t][j] += p00*(1-dy)*(1-dx) + p01*(1-dy)*dx + p10*dy*(1-dx) + p11*dy*dx
		}
	}
}

// embedPatches is the patch convolution (ggml_conv_2d with stride the patch
// size; the Qwen towers add their second kernel over the same still
// image). Tokens are in raster order, or for the Qwen towers grouped by 2×2 merge
// blocks (clip_graph_qwen2vl's second conv dimension).
func (v *Vision) embedPatches(img *Image, g *patchGrid) [][]float32 {
	c := v.Config
	p, n := c.PatchSize, c.Embd
	plane := img.Width * img.Height
	patch := make([]float32, 3*p*p)
	x := alloc2(g.nx*g.ny, n)
	for t := range x {
		py, px := t/g.nx, t%g.nx
		if c.qwen() {
			blk, in := t/4, t%4
			py, px = 2*(blk/(g.nx/2))+in/2, 2*(blk%(g.nx/2))+in%2
		}
		g.y, g.x = append(g.y, py), append(g.x, px)
		for ch := range 3 {
			for ky := range p {
				row := ch*plane + (py*p+ky)*img.Width + px*p
				copy(patch[(ch*p+ky)*p:(ch*p+ky+1)*p], img.Pix[row:row+p])
			}
		}
		for _, k := range v.patch {
			for e := 0; k != nil && e < n; e++ {
				x[t][e] += dotF32(k[e*len(patch):(e+1)*len(patch)], patch)
			}
		}
		if v.patchB != nil {
			for e := range n {
				x[t][e] += v.patchB[e]
			}
		}
	}
	return x
}

func (v *Vision) norm(dst, x, w, b []float32) {
	if v.rms {
		rmsNorm(dst, x, w, v.Config.Eps)
		return
	}
	layerNorm(dst, x, w, b, v.Config.Eps)
}

// blocks runs the ViT blocks over x in place, every linear a product of
// all the tokens on the weight's stored blocks; it returns the deepstack
// mergers' outputs of the blocks that have one, in block order.
func (v *Vision) blocks(ctx context.Context, s *Session, x [][]float32, g *patchGrid) ([][][]float32, error) {
	c := v.Config
	n, T, threads := c.Embd, len(x), s.m.threads
	hd := n / c.Heads
	caches, mode := v.ropeCaches(g)
	window := v.windows(g)
	scale := float32(1 / math.Sqrt(float64(hd)))
	gemma4 := c.Projector == projGemma4V
	if gemma4 {
		scale = 1 // clip_graph_gemma4v's kq_scale
	}
	cur, attn := alloc2(T, n), alloc2(T, n)
	var deep [][][]float32
	for il := range v.layers {
		L := &v.layers[il]
		windowed := window != nil && (il+1)%c.WindowPattern != 0
		for t := range x {
			v.norm(cur[t], x[t], L.ln1W, L.ln1B)
		}
		q, err := s.project(ctx, L.q, L.qB, L.qC, cur)
		if err != nil {
			return nil, err
		}
		k, err := s.project(ctx, L.k, L.kB, L.kC, cur)
		if err != nil {
			return nil, err
		}
		val, err := s.project(ctx, L.v, L.vB, L.vC, cur)
		if err != nil {
			return nil, err
		}
		err = parallel(ctx, threads, T, func(_, t int) error {
			for h := 0; gemma4 && h < c.Heads; h++ {
				qh, kh, vh := q[t][h*hd:(h+1)*hd], k[t][h*hd:(h+1)*hd], val[t][h*hd:(h+1)*hd]
				if L.qNorm != nil {
					rmsNorm(qh, qh, L.qNorm, c.Eps)
				}
				if L.kNorm != nil {
					rmsNorm(kh, kh, L.kNorm, c.Eps)
				}
				rmsNormPlain(vh, vh, c.Eps)
			}
			for h := 0; caches != nil && h < c.Heads; h++ {
				qh, kh := q[t][h*hd:(h+1)*hd], k[t][h*hd:(h+1)*hd]
				if gemma4 {
					// Two NeoX rotations: the first half of the head by
					// the column, the second by the row.
					for _, part := range [][2]int{{0, hd / 2}, {hd / 2, hd}} {
						rope(qh[part[0]:part[1]], caches[t][part[0]:part[1]], hd/2, ropeNeox)
						rope(kh[part[0]:part[1]], caches[t][part[0]:part[1]], hd/2, ropeNeox)
					}
					continue
				}
				rope(qh, caches[t], hd, mode)
				rope(kh, caches[t], hd, mode)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = parallel(ctx, threads, T, func(_, t int) error {
			var keys []int
			for s := range T {
				if !windowed || window[s] == window[t] {
					keys = append(keys, s)
				}
			}
			scores := make([]float32, len(keys))
			for h := range c.Heads {
				qh := q[t][h*hd : (h+1)*hd]
				for i, s := range keys {
					scores[i] = dotF32(qh, k[s][h*hd:(h+1)*hd])
				}
				softmax(scores, scale)
				out := attn[t][h*hd : (h+1)*hd]
				clear(out)
				for i, s := range keys {
					for j, vv := range val[s][h*hd : (h+1)*hd] {
						out[j] += scores[i] * vv
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		o, err := s.project(ctx, L.o, L.oB, L.oC, attn)
		if err != nil {
			return nil, err
		}
		for t, ot := range o {
			for j := range ot {
				ot[j] *= scaleAt(L.ls1, j)
			}
			if L.attnPostNorm != nil {
				rmsNorm(ot, ot, L.attnPostNorm, c.Eps)
			}
			for j := range ot {
				x[t][j] += ot[j]
			}
			v.norm(cur[t], x[t], L.ln2W, L.ln2B)
		}
		f, err := v.ffn(ctx, s, L, cur)
		if err != nil {
			return nil, err
		}
		for t, ft := range f {
			if L.ffnPostNorm != nil {
				rmsNorm(ft, ft, L.ffnPostNorm, c.Eps)
			}
			for j := range ft {
				x[t][j] += ft[j] * scaleAt(L.ls2, j)
			}
		}
		if L.deepstack != nil {
			ds, err := v.merge(ctx, s, x, L.deepstack)
			if err != nil {
				return nil, err
			}
			deep = append(deep, ds)
		}
	}
	return deep, nil
}

// scaleAt is a layer scale's j-th value, 1 without one.
func scaleAt(ls []float32, j int) float32 {
	if ls == nil {
		return 1
	}
	return ls[j]
}

// ffn is clip.cpp's build_ffn over every token: up, then the activation of
// the gate times up when there is a gate, else of up, then down.
func (v *Vision) ffn(ctx context.Context, s *Session, L *visionLayer, in [][]float32) ([][]float32, error) {
	up, err := s.project(ctx, L.up, L.upB, L.upC, in)
	if err != nil {
		return nil, err
	}
	var gate [][]float32
	if L.gate != nil {
		if gate, err = s.project(ctx, L.gate, L.gateB, L.gateC, in); err != nil {
			return nil, err
		}
	}
	err = parallel(ctx, s.m.threads, len(up), func(_, t int) error {
		if gate == nil {
			for j, u := range up[t] {
				up[t][j] = v.act(u)
			}
			return nil
		}
		for j, gv := range gate[t] {
			up[t][j] *= v.act(gv)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.project(ctx, L.down, L.downB, L.downC, up)
}

func (v *Vision) act(x float32) float32 {
	switch v.Config.act {
	case actGELU:
		return gelu(x)
	case actSiLU:
		return silu(x)
	case actGELUErf:
		return geluErf(x)
	}
	return geluQuick(x)
}

// geluQuick is ggml_gelu_quick_f32: x·σ(1.702·x).
func geluQuick(x float32) float32 {
	return x / (1 + float32(math.Exp(float64(-1.702*x))))
}

// ropeCaches are the rotary caches of each token for the 2-D RoPE towers
// (nil for Gemma 3's learned positions), with the rotation's pairing.
//
// The Qwen towers' is ggml_rope_multi in vision mode: the first quarter of a
// head's pair frequencies turn with the patch row, the second with its
// column, each section's frequencies starting again from the base 10000;
// pairs are half a head apart. Pixtral's is clip.cpp's build_rope_2d: two
// ggml_rope_ext of consecutive pairs, the first half of the head by the
// row at frequencies 10000^(−4k/d), the second by the column at
// 10000^(−(4k+2)/d).
func (v *Vision) ropeCaches(g *patchGrid) ([][]float32, ropeMode) {
	c := v.Config
	hd := c.Embd / c.Heads
	switch c.Projector {
	case projQwen2, projQwen25, projQwen3, projGLM4V:
		thetaScale := float32(math.Pow(10000, float64(-2/float32(hd/2))))
		caches := alloc2(len(g.y), hd)
		for t := range caches {
			var theta float32
			for i0 := 0; i0 < hd; i0 += 2 {
				switch i0 / 2 {
				case 0:
					theta = float32(g.y[t])
				case hd / 4:
					theta = float32(g.x[t])
				}
				cos, sin := ropeYarn(theta, 1, [2]float32{}, i0, 0, 1)
				caches[t][i0], caches[t][i0+1] = cos, sin
				theta *= thetaScale
			}
		}
		return caches, ropeNeox
	case projGemma4V:
		// clip_graph_gemma4v: per half of the head, NeoX pairs at
		// frequencies 100^(−2i/(hd/2)) of the column, then of the row.
		thetaScale := float32(math.Pow(100, float64(-2/float32(hd/2))))
		caches := alloc2(len(g.y), hd)
		for t := range caches {
			for part, pos := range []int{g.x[t], g.y[t]} {
				theta := float32(pos)
				for i0 := 0; i0 < hd/2; i0 += 2 {
					cos, sin := ropeYarn(theta, 1, [2]float32{}, i0, 0, 1)
					caches[t][part*hd/2+i0], caches[t][part*hd/2+i0+1] = cos, sin
					theta *= thetaScale
				}
			}
		}
		return caches, ropeNeox
	case projPixtral:
		half := hd / 2
		thetaScale := float32(math.Pow(10000, float64(-2/float32(half))))
		oddScale := float32(math.Pow(10000, float64(-2/float32(hd))))
		caches := alloc2(len(g.y), hd)
		for t := range caches {
			for part, p := range []struct {
				pos   int
				scale float32
			}{{g.y[t], 1}, {g.x[t], oddScale}} {
				theta := float32(p.pos)
				for i0 := 0; i0 < half; i0 += 2 {
					cos, sin := ropeYarn(theta, p.scale, [2]float32{}, i0, 0, 1)
					caches[t][part*half+i0], caches[t][part*half+i0+1] = cos, sin
					theta *= thetaScale
				}
			}
		}
		return caches, ropeNorm
	}
	return nil, ropeNorm
}

// windows gives each token of Qwen2.5-VL its attention window (nil for
// the other towers): squares of WindowSize pixels over the grid of merged
// 2×2 blocks, the last row and column of windows cut short.
func (v *Vision) windows(g *patchGrid) []int {
	c := v.Config
	if !c.qwen() || c.WindowPattern <= 0 {
		return nil
	}
	side := max(1, c.WindowSize/c.PatchSize/2)
	perRow := (g.nx/2 + side - 1) / side
	w := make([]int, len(g.y))
	for t := range w {
		w[t] = (g.y[t]/2/side)*perRow + g.x[t]/2/side
	}
	return w
}

// gemma3Projector is clip_graph_siglip's Gemma 3 projector: average
// pooling of Merge × Merge patches, an RMS norm with the soft-embedding
// weight, and the input projection into the text model's width.
func (v *Vision) gemma3Projector(x [][]float32, g *patchGrid) [][]float32 {
	c := v.Config
	k, side := c.Merge, g.nx/c.Merge
	out := alloc2(side*side, c.ProjDim)
	pooled := make([]float32, c.Embd)
	for o := range out {
		avgPool(pooled, x, g, k, o/side, o%side)
		rmsNorm(pooled, pooled, v.softEmbNorm, c.Eps)
		for e, pe := range pooled {
			row := v.inputProj[e*c.ProjDim : (e+1)*c.ProjDim]
			for d, w := range row {
				out[o][d] += w * pe
			}
		}
	}
	return out
}

// shuffleProjector is clip_graph_siglip's SmolVLM and LFM2-VL projectors
// and clip_graph_internvl's: the pixel shuffle puts each Merge × Merge
// square of patches side by side (row by row, each patch's values
// together; squares in raster order), then SmolVLM's linear map, or
// LFM2-VL's and InternVL's LayerNorm (eps 1e-5, when the file has its
// weights), mm.1, GELU and mm.2.
func (v *Vision) shuffleProjector(ctx context.Context, s *Session, x [][]float32, g *patchGrid) ([][]float32, error) {
	c := v.Config
	n, k := c.Embd, c.Merge
	cols := g.nx / k
	in := alloc2(cols*(g.ny/k), n*k*k)
	for o, row := range in {
		oy, ox := o/cols, o%cols
		for ky := range k {
			for kx := range k {
				copy(row[(ky*k+kx)*n:(ky*k+kx+1)*n], x[(oy*k+ky)*g.nx+ox*k+kx])
			}
		}
		if c.Projector == projIdefics {
			continue
		}
		if v.inNormW != nil {
			layerNorm(row, row, v.inNormW, nil, 1e-5)
		}
		for j := range v.inNormB {
			row[j] += v.inNormB[j]
		}
	}
	if c.Projector == projIdefics {
		return s.project(ctx, v.mmFC, nil, nil, in)
	}
	return s.twoLayers(ctx, v.mm1, v.mm1B, gelu, v.mm2, v.mm2B, in)
}

// twoLayers is a two-layer projector over every row of x: w1 (+ b1), act,
// w2 (+ b2).
func (s *Session) twoLayers(ctx context.Context, w1 *matrix, b1 []float32, act func(float32) float32, w2 *matrix, b2 []float32, x [][]float32) ([][]float32, error) {
	hidden, err := s.project(ctx, w1, b1, nil, x)
	if err != nil {
		return nil, err
	}
	for _, row := range hidden {
		for j, h := range row {
			row[j] = act(h)
		}
	}
	return s.project(ctx, w2, b2, nil, hidden)
}

// glm4vProjector is clip_graph_glm4v's: each 2×2 block of tokens (in the
// Qwen order, row by row) through the merger convolution, mm.model.fc, the
// LayerNorm mm.post_norm (eps 1e-5), erf GELU, then the SwiGLU of mm.gate,
// mm.up and mm.down.
func (v *Vision) glm4vProjector(ctx context.Context, s *Session, x [][]float32) ([][]float32, error) {
	c := v.Config
	n, kk := c.Embd, c.Merge*c.Merge
	in := alloc2(len(x)/kk, kk*n)
	for o, row := range in {
		// The convolution's input is [E][Merge][Merge] (channel, row,
		// column), its kernel the same per output.
		for i := range kk {
			for ch, val := range x[kk*o+i] {
				row[ch*kk+i] = val
			}
		}
	}
	merged, err := s.project(ctx, v.glmMerger, v.glmMergerB, nil, in)
	if err != nil {
		return nil, err
	}
	fc, err := s.project(ctx, v.mmFC, nil, nil, merged)
	if err != nil {
		return nil, err
	}
	for _, row := range fc {
		layerNorm(row, row, v.postNormW, v.postNormB, 1e-5)
		for j, f := range row {
			row[j] = geluErf(f)
		}
	}
	up, err := s.project(ctx, v.projUp, v.projUpB, nil, fc)
	if err != nil {
		return nil, err
	}
	gate, err := s.project(ctx, v.projGate, v.projGateB, nil, fc)
	if err != nil {
		return nil, err
	}
	for t, row := range gate {
		for j, g := range row {
			up[t][j] *= v.act(g)
		}
	}
	return s.project(ctx, v.projDown, v.projDownB, nil, up)
}

// avgPool writes the mean of the k × k square of tokens at pooled row oy
// and column ox to dst (ggml_pool_2d, GGML_OP_POOL_AVG).
func avgPool(dst []float32, x [][]float32, g *patchGrid, k, oy, ox int) {
	inv := 1 / float32(k*k)
	for j := range dst {
		var s float32
		for dy := range k {
			for dx := range k {
				s += x[(oy*k+dy)*g.nx+ox*k+dx][j]
			}
		}
		dst[j] = s * inv
	}
}

// gemma4Projector is clip_graph_gemma4v's pooler and embedder: average
// pooling of Merge × Merge patches, × √E, the standardisation when the
// file has it, an RMS norm without weight and the clamped input
// projection.
func (v *Vision) gemma4Projector(ctx context.Context, s *Session, x [][]float32, g *patchGrid) ([][]float32, error) {
	c := v.Config
	k, cols := c.Merge, g.nx/c.Merge
	pooled := alloc2(cols*(g.ny/k), c.Embd)
	scale := float32(math.Sqrt(float64(c.Embd)))
	for o, p := range pooled {
		avgPool(p, x, g, k, o/cols, o%cols)
		for j := range p {
			p[j] *= scale
			if v.stdBias != nil && v.stdScale != nil {
				p[j] = (p[j] - v.stdBias[j]) * v.stdScale[j]
			}
		}
		rmsNormPlain(p, p, c.Eps)
	}
	return s.project(ctx, v.inputProjM, nil, v.inputProjC, pooled)
}

// geluErf is ggml_gelu_erf: 0.5·x·(1 + erf(x/√2)).
func geluErf(x float32) float32 {
	return float32(0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2)))
}

// merge runs a Qwen merger over each 2×2 block of x (clip_graph_qwen2vl's
// and clip_graph_qwen3vl's reshape to 4·n values a token).
func (v *Vision) merge(ctx context.Context, s *Session, x [][]float32, mg *merger) ([][]float32, error) {
	c := v.Config
	in := alloc2(len(x)/4, 4*c.Embd)
	for o, row := range in {
		for i := range 4 {
			copy(row[i*c.Embd:(i+1)*c.Embd], x[4*o+i])
		}
		if mg.normW != nil {
			layerNorm(row, row, mg.normW, mg.normB, c.Eps)
		}
	}
	return s.twoLayers(ctx, mg.fc1, mg.fc1B, gelu, mg.fc2, mg.fc2B, in)
}

// pixtralProjector is clip_graph_pixtral's projection: with Mistral 3's
// patch merger, an RMS norm and each Merge × Merge square of patches (their
// values channel by channel, as torch's unfold lays them out) through
// mm.patch_merger; then mm.1, GELU, mm.2; then, when the file has one, the
// [IMG_BREAK] embedding after each row of tokens but the last.
func (v *Vision) pixtralProjector(ctx context.Context, s *Session, x [][]float32, g *patchGrid) ([][]float32, error) {
	c := v.Config
	n, k := c.Embd, c.Merge
	cols, rows := g.nx, g.ny
	if v.merger != nil {
		for t := range x {
			rmsNorm(x[t], x[t], v.mergerNorm, c.Eps)
		}
		cols, rows = g.nx/k, g.ny/k
		in := alloc2(cols*rows, n*k*k)
		for o, row := range in {
			oy, ox := o/cols, o%cols
			for ch := range n {
				for ky := range k {
					for kx := range k {
						row[(ch*k+ky)*k+kx] = x[(oy*k+ky)*g.nx+ox*k+kx][ch]
					}
				}
			}
		}
		merged, err := s.project(ctx, v.merger, nil, nil, in)
		if err != nil {
			return nil, err
		}
		x = merged
	}
	tokens, err := s.twoLayers(ctx, v.mm1, v.mm1B, gelu, v.mm2, v.mm2B, x)
	if err != nil {
		return nil, err
	}
	var out [][]float32
	for t, row := range tokens {
		out = append(out, row)
		if v.imgBreak != nil && t%cols == cols-1 && t/cols < rows-1 {
			out = append(out, slices.Clone(v.imgBreak))
		}
	}
	return out, nil
}

// TestImageSize is the size of the image verify runs the tower on: Gemma
// 3's fixed size; for the Qwen towers 5 × 7 merged blocks (140 × 196 pixels at
// patch 14, more than one attention window of 112); for Pixtral 2 × 4
// merged blocks.
func (c *VisionConfig) TestImageSize() (width, height int) {
	unit := c.PatchSize * c.Merge
	switch c.Projector {
	case projGemma3, projIdefics, projIntern, projGLM4V:
		return c.ImageSize, c.ImageSize
	case projGemma4V:
		return 3 * unit, 2 * unit
	case projLFM2:
		return 10 * unit, 9 * unit
	case projPixtral:
		return 4 * unit, 2 * unit
	}
	return 7 * unit, 5 * unit
}

// TestImage is verify's fixed image: width × height 8-bit RGB pixels of an
// integer pattern (r = 37x + 11y, g = 17x + 53y + 80, b = xy + 3x + 160,
// each mod 256, x the column and y the row), the image the fixtures'
// transformers features are computed on (testdata/gen/make_vision_features.py).
func TestImage(width, height int) []byte {
	rgb := make([]byte, 0, 3*width*height)
	for y := range height {
		for x := range width {
			rgb = append(rgb, byte((37*x+11*y)%256), byte((17*x+53*y+80)%256), byte((x*y+3*x+160)%256))
		}
	}
	return rgb
}
