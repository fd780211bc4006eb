package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// Multimodal projector files (general.architecture "clip", what
// convert_hf_to_gguf.py --mmproj writes and llama.cpp's mtmd library loads):
// their towers in words, and the structural checks — the clip.* keys a
// tower needs, and the tensors each projector type needs with their shapes
// against those keys. The vision towers of forward.VisionProjectors also
// get a forward pass over a fixed image (runVision), the audio encoders of
// forward.AudioProjectors (Qwen2-Audio's, Voxtral's, Gemma 4's conformer)
// one over a fixed log-mel input (runAudio); a file with both towers gets
// both.

// MMProjInfo describes a projector file.
type MMProjInfo struct {
	// Projector is clip.projector_type ("" when absent) and Known whether
	// ggufkit has its tensor table.
	Projector string
	Known     bool
	// What says in words what the projector is.
	What          string
	Vision, Audio *Tower
}

// Tower holds a vision or audio encoder's hyperparameters (0 when absent).
type Tower struct {
	Blocks, Embedding, FeedForward, Heads, ProjectionDim int64
	// Vision only.
	ImageSize, PatchSize int64
	ImageMean, ImageStd  []float32
}

// projectorRule is the tensor table of one projector type. Shapes are in
// ggml order over symbols: E (tower width), F (FFN width), D (projection
// dim, the text model's width), P (patch size), M (E × spatial merge²),
// "" (any size).
type projectorRule struct {
	what string
	// tensors are required outside the blocks.
	tensors []tensorRule
	// gate: the blocks' FFN is gated (ffn_gate); qkv: fused QKV.
	gate, qkv bool
	// deepstack: the blocks clip.vision.is_deepstack_layers flags have
	// v.deepstack.<i>.* mergers.
	deepstack bool
	// ln2 names the blocks' second norm when it is not "ln2".
	ln2 string
	// anyFFN: feed_forward_length is not the blocks' FFN width (the
	// converter writes the tower's width there for Qwen2.5-Omni).
	anyFFN bool
}

type tensorRule struct {
	name  string
	shape []string
}

// projectorRules are the projectors ggufkit converts, from the tensors
// llama.cpp's clip loader (tools/mtmd/clip.cpp) reads for each.
var projectorRules = map[string]projectorRule{
	"gemma3": {what: "Gemma 3: SigLIP tower, average-pooling projector with an RMS norm",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.position_embd.weight", []string{"E", ""}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.soft_emb_norm.weight", []string{"E"}}, {"mm.input_projection.weight", []string{"D", "E"}}}},
	"pixtral": {what: "Pixtral / Mistral 3: 2-D RoPE tower with SwiGLU, patch merger and two-layer projector", gate: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.pre_ln.weight", []string{"E"}},
			{"mm.1.weight", []string{"E", "D"}}, {"mm.2.weight", []string{"D", "D"}}}},
	"qwen2.5vl_merger": {what: "Qwen2.5-VL: window-attention tower with SwiGLU, 2×2 patch merger", gate: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.patch_embd.weight.1", []string{"P", "P", "", "E"}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.0.weight", []string{"M", "M"}}, {"mm.2.weight", []string{"M", "D"}}}},
	"qwen2.5o": {what: "Qwen2.5-Omni: Qwen2.5-VL's vision tower and merger, and a Whisper-style audio encoder with a linear projector", gate: true, anyFFN: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.patch_embd.weight.1", []string{"P", "P", "", "E"}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.0.weight", []string{"M", "M"}}, {"mm.2.weight", []string{"M", "D"}},
			{"a.conv1d.1.weight", []string{"", "", ""}}, {"a.conv1d.2.weight", []string{"", "", ""}}, {"a.position_embd.weight", []string{"", ""}},
			{"a.post_ln.weight", []string{""}}, {"mm.a.fc.weight", []string{"", "D"}}}},
	"qwen2vl_merger": {what: "Qwen2-VL: ViT with 2-D RoPE, 2×2 patch merger",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.patch_embd.weight.1", []string{"P", "P", "", "E"}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.0.weight", []string{"M", "M"}}, {"mm.2.weight", []string{"M", "D"}}}},
	"qwen3vl_merger": {what: "Qwen3-VL / Qwen3.5: tower with learned positions, patch merger and deepstack mergers", qkv: true, deepstack: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.patch_embd.weight.1", []string{"P", "P", "", "E"}},
			{"v.position_embd.weight", []string{"E", ""}}, {"v.post_ln.weight", []string{"E"}}, {"mm.0.weight", []string{"M", "M"}},
			{"mm.2.weight", []string{"M", "D"}}}},
	"glm4v": {what: "GLM-4.1V / GLM-4.5V: tower with learned positions, downsampling convolution, SwiGLU merger", qkv: true, gate: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.patch_embd.weight.1", []string{"P", "P", "", "E"}},
			{"v.position_embd.weight", []string{"E", ""}}, {"v.post_ln.weight", []string{"E"}}, {"mm.patch_merger.weight", []string{"", "", "E", ""}},
			{"mm.model.fc.weight", []string{"", ""}}, {"mm.up.weight", []string{"", ""}}, {"mm.gate.weight", []string{"", ""}},
			{"mm.down.weight", []string{"", "D"}}}},
	"idefics3": {what: "SmolVLM / Idefics3: SigLIP-style tower, pixel-shuffle connector",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.position_embd.weight", []string{"E", ""}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.model.fc.weight", []string{"", "D"}}}},
	"lfm2": {what: "LFM2-VL: SigLIP2 NaFlex tower, pixel-unshuffle, LayerNorm and two-layer projector",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.position_embd.weight", []string{"E", ""}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.input_norm.weight", []string{""}}, {"mm.1.weight", []string{"", ""}},
			{"mm.2.weight", []string{"", "D"}}}},
	"internvl": {what: "InternVL: InternViT with layer scales and a class embedding, pixel-shuffle MLP projector",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.class_embd", []string{"E", "", ""}},
			{"v.position_embd.weight", []string{"E", "", ""}}, {"mm.model.mlp.0.weight", []string{""}},
			{"mm.model.mlp.1.weight", []string{"", "D"}}, {"mm.model.mlp.3.weight", []string{"D", "D"}}}},
	"kimivl": {what: "Kimi-VL: MoonViT with a learned 2-D position table, pixel-shuffle LayerNorm and two-layer projector",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.position_embd.weight", []string{"E", ""}},
			{"v.post_ln.weight", []string{"E"}}, {"mm.input_norm.weight", []string{"E"}}, {"mm.1.weight", []string{"", ""}},
			{"mm.2.weight", []string{"", "D"}}}},
	"qwen2a": {what: "Qwen2-Audio: Whisper encoder, linear projector",
		tensors: []tensorRule{{"a.conv1d.1.weight", []string{"", "", "E"}}, {"a.conv1d.2.weight", []string{"", "E", "E"}},
			{"a.position_embd.weight", []string{"E", ""}}, {"a.post_ln.weight", []string{"E"}}, {"mm.a.fc.weight", []string{"E", "D"}}}},
	"voxtral": {what: "Voxtral: Whisper encoder, frames stacked by 4, two-layer projector",
		tensors: []tensorRule{{"a.conv1d.1.weight", []string{"", "", "E"}}, {"a.conv1d.2.weight", []string{"", "E", "E"}},
			{"a.position_embd.weight", []string{"E", ""}}, {"a.post_ln.weight", []string{"E"}}, {"mm.a.mlp.1.weight", []string{"F", "D"}},
			{"mm.a.mlp.2.weight", []string{"D", "D"}}}},
	"ultravox": {what: "Ultravox: Whisper encoder, frames stacked by stack_factor, RMS-normed SwiGLU projector",
		tensors: []tensorRule{{"a.conv1d.1.weight", []string{"", "", "E"}}, {"a.conv1d.2.weight", []string{"", "E", "E"}},
			{"a.position_embd.weight", []string{"E", ""}}, {"a.post_ln.weight", []string{"E"}}, {"mm.a.norm_pre.weight", []string{""}},
			{"mm.a.mlp.1.weight", []string{"", ""}}, {"mm.a.norm_mid.weight", []string{""}}, {"mm.a.mlp.2.weight", []string{"", "D"}}}},
	"gemma4v": {what: "Gemma 4: ViT with clipped linears, 2-D position table, pooling and linear projector (and, in the same file " +
		"when the checkpoint has one, a conformer audio tower: clip.audio.projector_type gemma4a)", gate: true,
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"P", "P", "", "E"}}, {"v.position_embd.weight", []string{"E", "", ""}},
			{"mm.input_projection.weight", []string{"E", "D"}}}},
	"llama4": {what: "Llama 4: tower with a class embedding, pixel-shuffle MLP adapter, linear projector", ln2: "attn_post_norm",
		tensors: []tensorRule{{"v.patch_embd.weight", []string{"", "E"}}, {"v.class_embd", []string{"E"}},
			{"v.position_embd.weight", []string{"E", ""}}, {"v.pre_ln.weight", []string{"E"}}, {"v.post_ln.weight", []string{"E"}},
			{"mm.model.mlp.1.weight", []string{"", ""}}, {"mm.model.mlp.2.weight", []string{"", ""}}, {"mm.model.fc.weight", []string{"", "D"}}}},
}

// ReadMMProj reads a projector file's clip.* keys; problems are the keys
// that are missing or of the wrong type. The projector is
// clip.projector_type, or for a file with one per tower (Gemma 4) the
// vision tower's, else the audio tower's.
func ReadMMProj(f *File) (*MMProjInfo, []Problem) {
	var probs []Problem
	info := &MMProjInfo{}
	for _, key := range []string{"clip.projector_type", "clip.vision.projector_type", "clip.audio.projector_type"} {
		if v, ok := f.KV(key); ok {
			info.Projector, _ = v.Str()
			break
		}
	}
	rule, known := projectorRules[info.Projector]
	info.Known, info.What = known, rule.what
	tower := func(prefix string) *Tower {
		t := &Tower{}
		for _, k := range []struct {
			key string
			dst *int64
		}{{"block_count", &t.Blocks}, {"embedding_length", &t.Embedding}, {"feed_forward_length", &t.FeedForward},
			{"attention.head_count", &t.Heads}, {"projection_dim", &t.ProjectionDim}} {
			*k.dst = uintKey(f, prefix+k.key, &probs)
		}
		return t
	}
	if b, _ := boolKey(f, "clip.has_vision_encoder"); b {
		info.Vision = tower("clip.vision.")
		info.Vision.ImageSize = uintKey(f, "clip.vision.image_size", &probs)
		info.Vision.PatchSize = uintKey(f, "clip.vision.patch_size", &probs)
		for _, k := range []struct {
			key string
			dst *[]float32
		}{{"clip.vision.image_mean", &info.Vision.ImageMean}, {"clip.vision.image_std", &info.Vision.ImageStd}} {
			v, ok := f.KV(k.key)
			xs, isF := v.Float32s()
			switch {
			case !ok:
				probs = append(probs, Problem{CheckMetadata, k.key, "missing (the image normalisation)"})
			case !isF || len(xs) != 3:
				probs = append(probs, Problem{CheckMetadata, k.key, "not 3 FLOAT32 values (one per RGB channel)"})
			default:
				*k.dst = xs
			}
		}
	}
	if b, _ := boolKey(f, "clip.has_audio_encoder"); b {
		info.Audio = tower("clip.audio.")
	}
	if info.Vision == nil && info.Audio == nil {
		probs = append(probs, Problem{CheckMetadata, "clip.has_vision_encoder", "neither a vision nor an audio encoder"})
	}
	return info, probs
}

func boolKey(f *File, key string) (bool, bool) {
	v, ok := f.KV(key)
	if !ok {
		return false, false
	}
	return v.BoolValue()
}

// uintKey reads a required UINT32 key.
func uintKey(f *File, key string, probs *[]Problem) int64 {
	v, ok := f.KV(key)
	if !ok {
		*probs = append(*probs, Problem{CheckMetadata, key, "missing"})
		return 0
	}
	if v.Type() != gguf.TypeUint32 {
		*probs = append(*probs, Problem{CheckMetadata, key, fmt.Sprintf("type %s, llama.cpp reads a UINT32", v.Type())})
		return 0
	}
	n, _ := v.Int()
	return n
}

// Describe is the projector in words, for inspect.
func (m *MMProjInfo) Describe() string {
	var b strings.Builder
	proj := m.Projector
	if proj == "" {
		proj = "(no clip.projector_type)"
	}
	fmt.Fprintf(&b, "multimodal projector %s", proj)
	if m.What != "" {
		fmt.Fprintf(&b, " — %s", m.What)
	}
	b.WriteString("\n")
	if t := m.Vision; t != nil {
		fmt.Fprintf(&b, "vision tower: %d blocks, width %d, FFN %d, %d heads; images %d px in %d px patches (mean %v, std %v); output projected to %d (the text model's width)\n",
			t.Blocks, t.Embedding, t.FeedForward, t.Heads, t.ImageSize, t.PatchSize, t.ImageMean, t.ImageStd, t.ProjectionDim)
	}
	if t := m.Audio; t != nil {
		fmt.Fprintf(&b, "audio tower: %d blocks, width %d, FFN %d, %d heads; output projected to %d\n",
			t.Blocks, t.Embedding, t.FeedForward, t.Heads, t.ProjectionDim)
	}
	b.WriteString("use with: llama-mtmd-cli -m MODEL.gguf --mmproj THIS.gguf\n")
	return b.String()
}

// checkMMProj is the structural check of a projector file: its keys, and
// for a projector type ggufkit knows, every tensor it needs with its shape.
func (v *verifier) checkMMProj() {
	info, probs := ReadMMProj(v.f)
	v.rep.Problems = append(v.rep.Problems, probs...)
	if info.Vision != nil && len(probs) == 0 && slices.Contains(forward.VisionProjectors, info.Projector) {
		v.vision = towerConfig(v, forward.ParseVisionConfig)
	}
	// The audio tower's type is clip.audio.projector_type in a file with
	// both towers (Gemma 4's gemma4v + gemma4a), clip.projector_type alone.
	if info.Audio != nil && len(probs) == 0 {
		v.audio = towerConfig(v, forward.ParseAudioConfig)
	}
	if _, ok := v.f.Tensor("v.token_embd.img_break"); info.Projector == "pixtral" && !ok {
		v.rep.Warnings = append(v.rep.Warnings, "no v.token_embd.img_break: llama.cpp's clip loader (0c1e570) requires it for "+
			"projector pixtral and refuses the file; its converter writes it only from Mistral's own checkpoint layout, "+
			"not from a Hugging Face one (whose language_model.* tensors it drops first)")
	}
	if v.vision == nil && v.audio == nil {
		v.structureOnly = true
		v.rep.Warnings = append(v.rep.Warnings, "a multimodal projector: verify checks its keys, tensor set and shapes and "+
			"its tensors' values; it has no forward pass of its towers (it has one of the vision towers of "+
			strings.Join(forward.VisionProjectors, ", ")+" and of the audio encoders of "+strings.Join(forward.AudioProjectors, ", ")+")")
	}
	if !info.Known {
		v.rep.Warnings = append(v.rep.Warnings, fmt.Sprintf("projector type %q: ggufkit has no tensor table for it "+
			"(known: %s); only the keys and values are checked", info.Projector, strings.Join(knownProjectors(), ", ")))
		return
	}
	t, tower := info.Vision, "v"
	if t == nil {
		t, tower = info.Audio, "a"
	}
	if t == nil || len(probs) > 0 {
		return
	}
	rule := projectorRules[info.Projector]
	merge := int64(1)
	if x, ok := v.f.KV("clip.vision.spatial_merge_size"); ok {
		merge, _ = x.Int()
	} else if strings.HasPrefix(info.Projector, "qwen") {
		merge = 2
	}
	sym := map[string]int64{"E": t.Embedding, "F": t.FeedForward, "D": t.ProjectionDim, "P": t.PatchSize, "M": t.Embedding * merge * merge}
	want := slices.Clone(rule.tensors)
	ffn := "F"
	if rule.anyFFN {
		ffn = ""
	}
	for i := range t.Blocks {
		p := fmt.Sprintf("%s.blk.%d.", tower, i)
		ln2 := cmp.Or(rule.ln2, "ln2")
		want = append(want, tensorRule{p + "ln1.weight", []string{"E"}}, tensorRule{p + ln2 + ".weight", []string{"E"}},
			tensorRule{p + "attn_out.weight", []string{"E", "E"}}, tensorRule{p + "ffn_up.weight", []string{"E", ffn}},
			tensorRule{p + "ffn_down.weight", []string{ffn, "E"}})
		if rule.gate {
			want = append(want, tensorRule{p + "ffn_gate.weight", []string{"E", ffn}})
		}
		if rule.qkv {
			want = append(want, tensorRule{p + "attn_qkv.weight", []string{"E", ""}})
		} else {
			want = append(want, tensorRule{p + "attn_q.weight", []string{"E", ""}}, tensorRule{p + "attn_k.weight", []string{"E", ""}},
				tensorRule{p + "attn_v.weight", []string{"E", ""}})
		}
	}
	if rule.deepstack {
		if x, ok := v.f.KV("clip.vision.is_deepstack_layers"); ok {
			flags, _ := x.Any().([]bool)
			for i, on := range flags {
				if on {
					p := fmt.Sprintf("v.deepstack.%d.", i)
					want = append(want, tensorRule{p + "norm.weight", []string{"M"}}, tensorRule{p + "fc1.weight", []string{"M", "M"}},
						tensorRule{p + "fc2.weight", []string{"M", "D"}})
				}
			}
		}
	}
	for _, r := range want {
		ti, ok := v.f.Tensor(r.name)
		if !ok {
			v.fail(CheckTensors, r.name, fmt.Sprintf("missing (projector %s needs it)", info.Projector))
			continue
		}
		if msg := shapeMismatch(ti.Shape, r.shape, sym); msg != "" {
			v.fail(CheckTensors, r.name, msg)
		}
	}
}

// shapeMismatch compares a ggml shape with symbolic dimensions.
func shapeMismatch(got []uint64, want []string, sym map[string]int64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("shape %v has %d dimensions, the projector needs %d", got, len(got), len(want))
	}
	for i, s := range want {
		if s == "" {
			continue
		}
		if n := sym[s]; uint64(n) != got[i] {
			return fmt.Sprintf("shape %v: dimension %d is %d, the clip.* keys give %d (%s)", got, i, got[i], n, symbolName[s])
		}
	}
	return ""
}

var symbolName = map[string]string{"E": "embedding_length", "F": "feed_forward_length", "D": "projection_dim",
	"P": "patch_size", "M": "embedding_length × spatial_merge_size²"}

func knownProjectors() []string {
	var names []string
	for n := range projectorRules {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
