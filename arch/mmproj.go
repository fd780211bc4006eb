package arch

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
)

// The multimodal projector ("mmproj") side of the converter: its
// MmprojModel (conversion/base.py) and one subclass per vision or audio
// family. The shared part — hyperparameters of the vision and audio
// towers, the clip name table, MmprojModel's filter and type rules — is
// here once; a family is a declarative mmFamily in its own file.

// MMProjArch is the GGUF architecture of a projector file
// (gguf.MODEL_ARCH.MMPROJ) and MMProjType its general.type.
const (
	MMProjArch = "clip"
	MMProjType = "mmproj"
)

// The projector metadata keys (gguf-py's Keys.Clip, ClipVision, ClipAudio).
const (
	KeyProjectorType       = "clip.projector_type"
	KeyHasVisionEncoder    = "clip.has_vision_encoder"
	KeyHasAudioEncoder     = "clip.has_audio_encoder"
	KeyVisionImageSize     = "clip.vision.image_size"
	KeyVisionPatchSize     = "clip.vision.patch_size"
	KeyVisionEmbedding     = "clip.vision.embedding_length"
	KeyVisionFeedForward   = "clip.vision.feed_forward_length"
	KeyVisionProjectionDim = "clip.vision.projection_dim"
	KeyVisionBlockCount    = "clip.vision.block_count"
	KeyVisionHeadCount     = "clip.vision.attention.head_count"
	KeyVisionLayerNormEps  = "clip.vision.attention.layer_norm_epsilon"
	KeyVisionImageMean     = "clip.vision.image_mean"
	KeyVisionImageStd      = "clip.vision.image_std"
	KeyVisionScaleFactor   = "clip.vision.projector.scale_factor"
	KeyUseGELU             = "clip.use_gelu"
	KeyUseSILU             = "clip.use_silu"
	KeyAudioEmbedding      = "clip.audio.embedding_length"
	KeyAudioFeedForward    = "clip.audio.feed_forward_length"
	KeyAudioProjectionDim  = "clip.audio.projection_dim"
	KeyAudioBlockCount     = "clip.audio.block_count"
	KeyAudioHeadCount      = "clip.audio.attention.head_count"
)

// mmBlockKeys are MmprojModel.n_block_keys.
var mmBlockKeys = []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers", "depth", "layers",
	"encoder_layers", "vt_num_hidden_layers"}

// mmFamily is one MmprojModel subclass of the converter. Every hook is
// optional; a nil one is MmprojModel's behaviour.
type mmFamily struct {
	// audio and noVision are the class's has_audio_encoder and (negated)
	// has_vision_encoder.
	audio, noVision bool
	// optionalAudio: the class drops has_audio_encoder when the config's
	// audio_config is absent or empty (its block count stays 128).
	optionalAudio bool
	// suffixes are map_tensor_name's try_suffixes beyond ".weight" and
	// ".bias" (the clamp bounds of clipped linears).
	suffixes []string
	// check validates the class's config (its __init__) and may set
	// defaults in the tower configs.
	check func(m *mmproj, dir string) error
	// filter is the class's filter_tensors before MmprojModel's: it
	// renames a checkpoint tensor or drops it.
	filter func(name string) (string, bool)
	// params adds the class's keys after MmprojModel.set_gguf_parameters'.
	params func(m *mmproj, k *kv) error
	// force is the class's tensor_force_quant before MmprojModel's (name
	// is the Hugging Face name, out.Name the GGUF one).
	force func(m *mmproj, out *Output, nDims int) (gguf.Type, bool)
	// modify is the class's modify_tensors; it returns nil outputs and
	// false to leave a tensor to the name table.
	modify func(m *mmproj, in Input, bid int) ([]Output, bool, error)
	// towers are the class's get_vision_config and get_audio_config (nil:
	// the config's vision_config and audio_config or whisper_config).
	towers func(g HParams) (vision, audio map[string]any)
	// extra is the class's generate_extra_tensors.
	extra func(m *mmproj) ([]Output, error)
}

var mmRegistry = map[string]*mmFamily{}

// registerMM adds a projector family under Hugging Face architecture names.
func registerMM(f *mmFamily, names ...string) {
	for _, n := range names {
		if _, dup := mmRegistry[n]; dup {
			panic("arch: duplicate mmproj registration of " + n)
		}
		mmRegistry[n] = f
	}
}

// mmRefused are projector classes of the converter that fail there, with
// the reason; ggufkit refuses them rather than guess a fix.
var mmRefused = map[string]string{
	// conversion/qwen3vl.py Qwen3OmniMmprojModel keeps thinker.visual.* through
	// its filter, renames it model.visual.* in modify_tensors, which then
	// matches none of Qwen3VLVisionModel's cases nor the name table.
	"Qwen3OmniMoeForConditionalGeneration": "llama.cpp's converter (0c1e570) cannot convert Qwen3-Omni's projector: " +
		"it renames the vision tensors thinker.visual.* to model.visual.* and fails with " +
		"\"Can not map tensor 'model.visual.blocks.0.attn.proj.bias'\"",
	// conversion/gemma.py Gemma3nVisionAudioModel: the name table has the
	// audio subsampler's convolutions (conv_{bid}.conv) but not the
	// cumulative group norms beside them, which transformers' Gemma 3n has.
	"Gemma3nForConditionalGeneration": "llama.cpp's converter (0c1e570) cannot convert Gemma 3n's projector: its name " +
		"table lacks the audio subsampler's norms and it fails with \"Can not map tensor " +
		"'model.audio_tower.subsample_conv_projection.conv_0.norm.weight'\"; the text model converts without --mmproj",
}

// SupportedMMProj lists the Hugging Face architecture names whose
// projector ggufkit converts, sorted.
func SupportedMMProj() []string {
	names := slices.Collect(maps.Keys(mmRegistry))
	sort.Strings(names)
	return names
}

// ErrNoTower is wrapped by the error for a --mmproj conversion of a
// checkpoint without a vision or audio tower.
var ErrNoTower = errors.New("arch: no vision or audio tower")

// mmproj is MmprojModel bound to a checkpoint.
type mmproj struct {
	fam *mmFamily
	// g is the whole config (global_config), v and a the vision and audio
	// towers' (nil when absent).
	g, v, a HParams
	// pre is preprocessor_config.json merged with processor_config.json.
	pre       HParams
	nEmbdText int64
	blocks    int
	names     *NameMap
	ft        gguf.FileType
	// audio is has_audio_encoder.
	audio bool
}

// NewMMProj builds the projector model of the checkpoint in dir described
// by h (convert_hf_to_gguf.py --mmproj): the class of architectures[0], or
// of vision_config's architectures[0] when it has one. h is the config as
// MmprojModel's global_config has it: the language model's config under
// text_config, not merged over the top level.
func NewMMProj(h HParams, dir string) (Model, error) {
	name, err := mmArchitecture(h)
	if err != nil {
		return nil, err
	}
	if reason, refused := mmRefused[name]; refused {
		return nil, &UnsupportedError{Arch: name, Reason: reason}
	}
	fam, ok := mmRegistry[name]
	vc, hasV := h["vision_config"].(map[string]any)
	ac, hasA := h["audio_config"].(map[string]any)
	if wc, isMap := h["whisper_config"].(map[string]any); isMap {
		ac, hasA = wc, true
	}
	if ok && fam.towers != nil {
		vc, ac = fam.towers(h)
		hasV, hasA = vc != nil, ac != nil
	}
	if !ok {
		if !hasV && !hasA {
			return nil, fmt.Errorf("%w: %s has no vision_config or audio_config in config.json: convert it without --mmproj", ErrNoTower, name)
		}
		return nil, &UnsupportedError{Arch: name, Reason: fmt.Sprintf("no multimodal projector conversion for it (found %s); "+
			"projectors ggufkit converts: %s", describeTowers(vc, ac), strings.Join(SupportedMMProj(), ", "))}
	}
	if !hasV && !hasA {
		return nil, fmt.Errorf("%w: %s checkpoint's config.json has no vision_config or audio_config", ErrNoTower, name)
	}
	g, err := autoConfig(h)
	if err != nil {
		return nil, err
	}
	m := &mmproj{fam: fam, g: g}
	if hasV {
		if m.v, err = towerConfig(vc); err != nil {
			return nil, err
		}
	}
	if hasA {
		if m.a, err = towerConfig(ac); err != nil {
			return nil, err
		}
	}
	m.audio = fam.audio && (len(m.a) > 0 || !fam.optionalAudio)
	if fam.audio && !fam.optionalAudio && m.a == nil {
		return nil, fmt.Errorf("%w: %s's projector needs an audio tower, config.json has no audio_config", ErrNoTower, name)
	}
	if !fam.noVision && m.v == nil {
		return nil, fmt.Errorf("%w: %s's projector needs a vision tower, config.json has no vision_config", ErrNoTower, name)
	}
	// n_embd of the text model: text_config over the top level.
	text := maps.Clone(g)
	if tc, ok := g["text_config"].(map[string]any); ok {
		maps.Copy(text, tc)
	}
	n, ok, err := text.Int("hidden_size", "n_embd")
	if err != nil {
		return nil, err
	}
	if !ok || n <= 0 {
		return nil, fmt.Errorf("%w: n_embd not found in config.json", ErrConfig)
	}
	m.nEmbdText = n
	tower := m.v
	if tower == nil {
		tower = m.a
	}
	if fam.audio && !fam.noVision {
		m.blocks = 128 // MmprojModel's value for a model with two encoders
	} else {
		nb, err := tower.MustInt(mmBlockKeys...)
		if err != nil {
			return nil, err
		}
		if nb < 0 || nb > 1<<16 {
			return nil, fmt.Errorf("%w: block count %d out of range", ErrConfig, nb)
		}
		m.blocks = int(nb)
	}
	if m.names, err = NewNameMap(MMProjArch, m.blocks); err != nil {
		return nil, err
	}
	if m.pre, err = readPreprocessorConfig(dir); err != nil {
		return nil, err
	}
	if fam.check != nil {
		if err := fam.check(m, dir); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// configdefaults_mm.json holds the field defaults of the towers' own
// config classes (SiglipVisionConfig, PixtralVisionConfig …), generated by
// gen/dump_config_defaults.py from transformers 5.24.0 like
// configdefaults.json: the converter reads vision_config as to_dict has it.
//
//go:embed configdefaults_mm.json
var towerDefaultsJSON []byte

var (
	towerDefaultsOnce sync.Once
	towerDefaults     map[string]*configClass
	towerDefaultsErr  error
)

// towerConfig is a tower's config as AutoConfig's to_dict has it: a copy
// with its config class's defaults for the absent fields.
func towerConfig(c map[string]any) (HParams, error) {
	towerDefaultsOnce.Do(func() {
		var d struct {
			ModelTypes map[string]*configClass `json:"model_types"`
		}
		dec := json.NewDecoder(bytes.NewReader(towerDefaultsJSON))
		dec.UseNumber()
		if err := dec.Decode(&d); err != nil {
			towerDefaultsErr = fmt.Errorf("arch: tower config defaults: %w", err)
			return
		}
		towerDefaults = d.ModelTypes
	})
	if towerDefaultsErr != nil {
		return nil, towerDefaultsErr
	}
	out := HParams(maps.Clone(c))
	mt, _ := c["model_type"].(string)
	if cc := towerDefaults[mt]; cc != nil {
		for k, v := range cc.Fields {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// mmArchitecture is get_model_architecture for ModelType.MMPROJ.
func mmArchitecture(h HParams) (string, error) {
	if vc, ok := h["vision_config"].(map[string]any); ok {
		if archs, ok := vc["architectures"].([]any); ok && len(archs) > 0 {
			if s, ok := archs[0].(string); ok {
				return s, nil
			}
		}
	}
	archs, ok := h["architectures"].([]any)
	if !ok || len(archs) == 0 {
		return "", fmt.Errorf("arch: config.json has no \"architectures\"")
	}
	s, ok := archs[0].(string)
	if !ok {
		return "", &ConfigError{Key: "architectures[0]", Value: archs[0], Msg: "is not a model class name"}
	}
	return s, nil
}

// describeTowers says which towers a config has, in words.
func describeTowers(vc, ac map[string]any) string {
	var parts []string
	for _, t := range []struct {
		what string
		c    map[string]any
	}{{"a vision tower", vc}, {"an audio tower", ac}} {
		if t.c == nil {
			continue
		}
		if mt, ok := t.c["model_type"].(string); ok {
			parts = append(parts, fmt.Sprintf("%s of model_type %q", t.what, mt))
		} else {
			parts = append(parts, t.what)
		}
	}
	return strings.Join(parts, " and ")
}

// readPreprocessorConfig merges preprocessor_config.json (with its
// media_proc_cfg at the top level) and processor_config.json (with its
// image_processor at the top level), as MmprojModel.__init__ does; both
// are optional.
func readPreprocessorConfig(dir string) (HParams, error) {
	out := HParams{}
	for _, f := range []struct{ name, inner string }{
		{"preprocessor_config.json", "media_proc_cfg"},
		{"processor_config.json", "image_processor"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("arch: %w", err)
		}
		var cfg map[string]any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("arch: %s: %w", f.name, err)
		}
		maps.Copy(out, cfg)
		if inner, ok := cfg[f.inner].(map[string]any); ok {
			maps.Copy(out, inner)
		}
	}
	return out, nil
}

// SetFileType tells the model the output's file type, which
// MmprojModel.tensor_force_quant depends on.
func (m *mmproj) SetFileType(ft gguf.FileType) { m.ft = ft }

// GGUFType is general.type.
func (m *mmproj) GGUFType() string { return MMProjType }

func (m *mmproj) Arch() string     { return MMProjArch }
func (m *mmproj) Names() *NameMap  { return m.names }
func (m *mmproj) BlockCount() int  { return m.blocks }
func (m *mmproj) Vocab() VocabKind { return "" }
func (m *mmproj) Finish() error    { return nil }

// Extra is the family's generate_extra_tensors.
func (m *mmproj) Extra() ([]Output, error) {
	if m.fam.extra == nil {
		return nil, nil
	}
	return m.fam.extra(m)
}

// Filter is the family's filter_tensors, then MmprojModel's (the text
// model's tensors go), then ModelBase's.
func (m *mmproj) Filter(name string) (string, bool) {
	if m.fam.filter != nil {
		var ok bool
		if name, ok = m.fam.filter(name); !ok {
			return "", false
		}
	}
	if strings.Contains(name, "language_model.") {
		return "", false
	}
	if strings.HasSuffix(name, "e_score_correction_bias") {
		name = strings.Replace(name, "e_score_correction_bias", "e_score_correction.bias", 1)
	}
	return name, true
}

// Modify is the family's modify_tensors, or the name table's mapping.
func (m *mmproj) Modify(in Input, bid int) ([]Output, error) {
	if m.fam.modify != nil {
		outs, done, err := m.fam.modify(m, in, bid)
		if err != nil || done {
			return outs, err
		}
	}
	return m.mapped(in, in.Name, bid, nil)
}

// mapped maps name through the clip table: one output from in, computed
// by build (nil: in unchanged).
func (m *mmproj) mapped(in Input, name string, bid int, build func([][]float32) ([]float32, error)) ([]Output, error) {
	_, gname, ok := m.names.Lookup(name)
	for _, suf := range m.fam.suffixes {
		if stem, cut := strings.CutSuffix(name, suf); !ok && cut {
			if _, g, found := m.names.Lookup(stem); found {
				gname, ok = g+suf, true
			}
		}
	}
	if !ok {
		return nil, fmt.Errorf("can not map tensor %q", name)
	}
	o := identity(in, gname, bid)
	o.Build = build
	return []Output{o}, nil
}

// ForceType is the family's tensor_force_quant, then MmprojModel's: patch
// embeddings and patch mergers are F16 in an F16 file, F32 otherwise.
func (m *mmproj) ForceType(out *Output, nDims int) (gguf.Type, bool) {
	if m.fam.force != nil {
		if t, ok := m.fam.force(m, out, nDims); ok {
			return t, true
		}
	}
	if strings.Contains(out.Name, ".patch_embd.weight") || strings.Contains(out.Name, ".patch_merger.weight") {
		if m.ft == gguf.FileTypeF16 {
			return gguf.F16, true
		}
		return gguf.F32, true
	}
	return 0, false
}

// Params is MmprojModel.set_gguf_parameters followed by the family's.
func (m *mmproj) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: "clip"}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	if !m.fam.noVision {
		k.l.Set(KeyHasVisionEncoder, gguf.Bool(true))
		k.l.Set(KeyVisionProjectionDim, gguf.Uint32(uint32(m.nEmbdText)))
		for _, p := range []struct {
			key  string
			from []string
		}{
			{KeyVisionImageSize, []string{"image_size"}},
			{KeyVisionPatchSize, []string{"patch_size"}},
			{KeyVisionEmbedding, []string{"hidden_size", "width", "vt_hidden_size"}},
			{KeyVisionFeedForward, []string{"intermediate_size", "vt_intermediate_size"}},
			{KeyVisionBlockCount, mmBlockKeys},
			{KeyVisionHeadCount, []string{"num_attention_heads", "num_heads", "heads", "vt_num_attention_heads"}},
		} {
			if err := m.param(k, m.v, p.key, p.from...); err != nil {
				return nil, err
			}
		}
		for _, p := range []struct{ key, from string }{{KeyVisionImageMean, "image_mean"}, {KeyVisionImageStd, "image_std"}} {
			v, ok := m.pre[p.from]
			if !ok {
				return nil, fmt.Errorf("%w: preprocessor_config.json: no %q (the vision tower's image normalisation)", ErrConfig, p.from)
			}
			a, err := numberArray(v)
			if err != nil {
				return nil, fmt.Errorf("%w: preprocessor_config.json: %s: %w", ErrConfig, p.from, err)
			}
			k.l.Set(p.key, a)
		}
	}
	if m.audio {
		k.l.Set(KeyHasAudioEncoder, gguf.Bool(true))
		k.l.Set(KeyAudioProjectionDim, gguf.Uint32(uint32(m.nEmbdText)))
		for _, p := range []struct {
			key  string
			from []string
		}{
			{KeyAudioEmbedding, []string{"hidden_size"}},
			{KeyAudioFeedForward, []string{"intermediate_size"}},
			{KeyAudioBlockCount, mmBlockKeys},
			{KeyAudioHeadCount, []string{"num_attention_heads"}},
		} {
			if err := m.param(k, m.a, p.key, p.from...); err != nil {
				return nil, err
			}
		}
	}
	if m.fam.params != nil {
		if err := m.fam.params(m, k); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// param writes the first of keys present in the tower config c as a
// uint32 under key (find_vparam / find_aparam).
func (m *mmproj) param(k *kv, c HParams, key string, keys ...string) error {
	v, _, ok := c.Find(keys...)
	if !ok {
		return fmt.Errorf("%w: %s: could not find any of %q", ErrConfig, key, keys)
	}
	return k.u32(strings.TrimPrefix(key, "clip."), v)
}

// numberArray is gguf-py's add_array of a list of numbers: INT32 when the
// first element is an integer, FLOAT32 when it is a float.
func numberArray(v any) (gguf.Value, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return gguf.Value{}, fmt.Errorf("%s is not a list of numbers", describe(v))
	}
	if isInt(list[0]) {
		xs := make([]int32, len(list))
		for i, e := range list {
			n, err := asInt(e)
			if err != nil || n != int64(int32(n)) {
				return gguf.Value{}, fmt.Errorf("element %d: %s is not an int32", i, describe(e))
			}
			xs[i] = int32(n)
		}
		return gguf.Array(xs), nil
	}
	xs := make([]float32, len(list))
	for i, e := range list {
		f, err := asFloat(e)
		if err != nil {
			return gguf.Value{}, fmt.Errorf("element %d: %w", i, err)
		}
		xs[i] = float32(f)
	}
	return gguf.Array(xs), nil
}

// visionAct writes clip.use_silu or clip.use_gelu for the vision tower's
// hidden_act, the two activations Pixtral's and InternVL's classes accept.
func (m *mmproj) visionAct(k *kv) error {
	switch act := m.v["hidden_act"]; act {
	case "silu":
		k.l.Set(KeyUseSILU, gguf.Bool(true))
	case "gelu":
		k.l.Set(KeyUseGELU, gguf.Bool(true))
	default:
		return &ConfigError{Key: "vision_config.hidden_act", Value: act, Msg: "is not silu or gelu"}
	}
	return nil
}

// preInt is preprocessor_config.get(key, def) as an integer.
func (m *mmproj) preInt(key string, def int64) (int64, error) {
	v, ok := m.pre[key]
	if !ok {
		return def, nil
	}
	n, err := asInt(v)
	if err != nil {
		return 0, fmt.Errorf("%w: preprocessor_config.json: %s: %w", ErrConfig, key, err)
	}
	return n, nil
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
