package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/convert/metadata"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/hf"
	"github.com/ggufkit/ggufkit/readers/hub"
	"github.com/ggufkit/ggufkit/readers/pytorch"
	"github.com/ggufkit/ggufkit/readers/safetensors"
	"github.com/ggufkit/ggufkit/writer"
)

// LoRAOptions configure the conversion of a PEFT LoRA adapter, as
// llama.cpp's convert_lora_to_gguf.py does it.
type LoRAOptions struct {
	// Base is the base model's folder, or its config.json: only the
	// configuration is read (--base).
	Base string
	// OutType is f32 (the default, as the script's), f16, bf16, q8_0 or
	// auto.
	OutType string
	// OutFile is the output path, which may contain "{ftype}"; a directory
	// or "" (the adapter's folder) gets the GGUF naming convention's name
	// with "LoRA" at its end.
	OutFile string
	// DryRun plans everything and writes nothing.
	DryRun bool
	// Overwrite replaces an existing output file.
	Overwrite bool
	// Hub sets how a base named "hf:ORG/NAME[@REVISION]", or the
	// adapter's base_model_name_or_path when Base is "", is read from the
	// Hugging Face Hub (see readers/hub).
	Hub hub.Options
}

// The files of a PEFT adapter folder.
const (
	loraConfigName      = "adapter_config.json"
	loraSafetensorsName = "adapter_model.safetensors"
	loraBinName         = "adapter_model.bin"
	// keyAloraInvocationTokens is gguf-py's Keys.Adapter.ALORA_INVOCATION_TOKENS.
	keyAloraInvocationTokens = "adapter.alora.invocation_tokens"
)

// loraTypes are convert_lora_to_gguf.py's --outtype choices.
var loraTypes = map[string]gguf.FileType{
	"f32": gguf.FileTypeAllF32, "f16": gguf.FileTypeF16, "bf16": gguf.FileTypeBF16, "q8_0": gguf.FileTypeQ8_0,
	"auto": gguf.FileTypeGuessed,
}

// ErrLoRA is wrapped by every error about an adapter that cannot be
// converted.
var ErrLoRA = errors.New("convert: LoRA adapter")

// loraPair is one adapted weight: its name in the base model and the
// adapter's two factors (W' = W + alpha/r · B·A).
type loraPair struct {
	base string
	a, b *readers.TensorInfo
}

// loraTensor is one output tensor of an adapter with its values.
type loraTensor struct {
	out    arch.Output
	typ    gguf.Type
	values []float32
}

// RunLoRA converts the PEFT LoRA adapter in dir (adapter_config.json and
// adapter_model.safetensors or adapter_model.bin) for the base model whose
// configuration opts.Base gives (a folder, its config.json, or a Hub
// repository; by default the adapter's base_model_name_or_path on the
// Hub). Tensor names, permutations, splits and
// expert stacking come from the base architecture's plugin: each adapted
// weight is planned as the base converter plans it, and the plan's row and
// column selection is applied to lora_b's rows and lora_a's columns.
func RunLoRA(ctx context.Context, dir string, opts LoRAOptions) (*Report, error) {
	start := time.Now()
	cfg, err := readLoRAConfig(dir)
	if err != nil {
		return nil, err
	}
	alpha, tokens, err := checkLoRAConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoRA, dir, err)
	}
	base, remoteName := opts.Base, ""
	if base == "" {
		// The script loads base_model_name_or_path's config from the Hub.
		id, _ := cfg["base_model_name_or_path"].(string)
		if id == "" {
			return nil, fmt.Errorf("%w %s: the base model's configuration is needed (--base FOLDER, its config.json or "+
				"hf:ORG/NAME): %s has no base_model_name_or_path", ErrLoRA, dir, loraConfigName)
		}
		base = hub.Prefix + id
	} else if hub.IsSpec(base) {
		// --base-model-id: general.name becomes the model id.
		remoteName = strings.TrimPrefix(base, hub.Prefix)
	}
	baseDir := base
	if hub.IsSpec(base) {
		spec, err := hub.ParseSpec(base)
		if err != nil {
			return nil, fmt.Errorf("convert: base model: %w (give --base FOLDER or its config.json)", err)
		}
		m, err := hub.Open(ctx, spec, opts.Hub)
		if err != nil {
			return nil, fmt.Errorf("convert: base model %s: %w", spec.Repo, err)
		}
		defer m.Close()
		baseDir = m.Root
		if remoteName != "" {
			remoteName = spec.Repo
		}
	} else if st, err := os.Stat(baseDir); err != nil {
		return nil, fmt.Errorf("convert: --base: %w", err)
	} else if !st.IsDir() {
		if filepath.Base(baseDir) != hf.ConfigName {
			return nil, fmt.Errorf("convert: --base %s: give the base model's folder or its %s", baseDir, hf.ConfigName)
		}
		baseDir = filepath.Dir(baseDir)
	}
	bcfg, err := hf.ReadConfig(baseDir)
	if err != nil {
		return nil, err
	}
	if bcfg.File == "" {
		return nil, fmt.Errorf("convert: --base %s: no %s", opts.Base, hf.ConfigName)
	}
	plugin, err := arch.New(arch.HParams(bcfg.Params), baseDir)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", baseDir, err)
	}
	src, err := openLoRAWeights(dir)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	outType := opts.OutType
	if outType == "" {
		outType = "f32"
	}
	ft, ok := loraTypes[outType]
	if !ok {
		return nil, fmt.Errorf("convert: --outtype %q: a LoRA adapter is converted to f32, f16, bf16, q8_0 or auto", outType)
	}
	if ft == gguf.FileTypeGuessed {
		ft = guessLoRAFileType(src)
	}
	if ix, ok := plugin.(arch.TensorIndexer); ok {
		// index_tensors reads the base folder's weights, which --base need
		// not hold: the adapted weights' names stand in for them.
		var names []string
		for _, t := range src.Tensors() {
			names = append(names, loraBaseName(t.Name))
		}
		if err := ix.IndexTensors(names); err != nil {
			return nil, fmt.Errorf("convert: %s: %w", baseDir, err)
		}
	}
	pairs, norms, err := loraPairs(src, plugin)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoRA, dir, err)
	}
	tensors, err := planLoRA(ctx, plugin, src, pairs, norms, ft)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoRA, dir, err)
	}
	pts := make([]metadata.ParamTensor, len(tensors))
	for i := range tensors {
		pts[i] = metadata.ParamTensor{Name: tensors[i].out.Name, Shape: tensors[i].out.Shape}
	}
	total, _, _, _ := metadata.ParameterCount(pts)
	meta, err := metadata.Load("", dir, "", total)
	if err != nil {
		return nil, err
	}
	if remoteName != "" {
		meta.Name = remoteName
	}
	if meta.Name == "" {
		// prepare_metadata falls back to dir_model, the base model's folder.
		meta.Name = filepath.Base(baseDir)
	}
	var l gguf.KVList
	l.Set(gguf.KeyGeneralArchitecture, gguf.String(plugin.Arch()))
	l.Set(gguf.KeyGeneralType, gguf.String("adapter"))
	l.Set("adapter.type", gguf.String("lora"))
	l.Append(meta.KVs()...)
	l.Set("adapter.lora.alpha", gguf.Float32(alpha))
	if len(tokens) > 0 {
		l.Set(keyAloraInvocationTokens, gguf.Array(tokens))
	}
	l.Set(gguf.KeyGeneralQuantizationVersion, gguf.Uint32(gguf.QuantizationVersion))

	out, err := loraOutputPath(dir, opts, meta, ft, total)
	if err != nil {
		return nil, err
	}
	rep := &Report{Output: out, Outputs: []string{out}, FileType: ft, Tensors: len(tensors)}
	for i := range tensors {
		t := Tensor{Output: tensors[i].out, Type: tensors[i].typ}
		rs, _ := t.Type.RowSize(uint64(t.RowLen()))
		size := rs * uint64(t.Elements()/t.RowLen())
		rep.Plan = append(rep.Plan, TensorReport{Index: i, Count: len(tensors), Name: t.Name, Shape: t.GGUFShape(),
			SourceDType: readers.F32, Type: t.Type, Bytes: size})
		rep.Bytes += int64(size)
	}
	if opts.DryRun {
		rep.Duration = time.Since(start)
		return rep, nil
	}
	w, err := writer.Create(ctx, out, writer.Options{Overwrite: opts.Overwrite})
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	for _, kv := range l.KVs() {
		w.SetKV(kv.Key, kv.Value)
	}
	for i := range tensors {
		if err := w.AddTensor(rep.Plan[i].Name, tensors[i].typ, rep.Plan[i].Shape); err != nil {
			return nil, fmt.Errorf("convert: %s: tensor %q: %w", dir, rep.Plan[i].Name, err)
		}
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	for i := range tensors {
		t := &tensors[i]
		shape := t.out.Shape
		ncols := shape[len(shape)-1]
		data := make([]byte, rep.Plan[i].Bytes)
		if err := quantize.Encode(t.typ, data, t.values, int(ncols), nil); err != nil {
			return nil, fmt.Errorf("convert: %s: tensor %q: %w", dir, t.out.Name, err)
		}
		if err := w.WriteTensor(t.out.Name, data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	rep.Bytes = w.Size()
	rep.Duration = time.Since(start)
	return rep, nil
}

// readLoRAConfig reads adapter_config.json.
func readLoRAConfig(dir string) (map[string]any, error) {
	path := filepath.Join(dir, loraConfigName)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w %s: no %s: not a PEFT adapter folder", ErrLoRA, dir, loraConfigName)
		}
		return nil, fmt.Errorf("convert: %w", err)
	}
	defer f.Close()
	const maxConfig = 16 << 20
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", path, err)
	}
	if len(b) > maxConfig {
		return nil, fmt.Errorf("%w %s: larger than %d bytes", ErrLoRA, path, maxConfig)
	}
	m, err := hf.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", path, err)
	}
	return m, nil
}

// checkLoRAConfig returns lora_alpha and the aLoRA invocation tokens, and
// refuses what convert_lora_to_gguf.py cannot carry into the GGUF, which
// holds one alpha and plain B·A pairs.
func checkLoRAConfig(cfg map[string]any) (float32, []uint32, error) {
	if t, ok := cfg["peft_type"].(string); ok && t != "LORA" {
		return 0, nil, fmt.Errorf("peft_type %q: only LoRA adapters (peft_type \"LORA\") convert to a GGUF adapter", t)
	}
	refusals := []struct{ key, why string }{
		{"use_dora", "DoRA (use_dora) rescales each weight by a learned magnitude vector, which a GGUF LoRA adapter has no " +
			"place for (convert_lora_to_gguf.py stops at its lora_magnitude_vector tensors)"},
		{"use_rslora", "rank-stabilised LoRA (use_rslora) scales by alpha/sqrt(r), but llama.cpp applies alpha/r " +
			"from adapter.lora.alpha: the adapter would be applied with the wrong strength (to convert it, set lora_alpha " +
			"to alpha·sqrt(r) and use_rslora to false)"},
		{"rank_pattern", "per-module ranks (rank_pattern) come with per-module scales; a GGUF adapter holds one alpha"},
		{"alpha_pattern", "per-module alphas (alpha_pattern): a GGUF adapter holds one adapter.lora.alpha"},
		{"lora_bias", "LoRA biases (lora_bias) are not part of a GGUF LoRA adapter"},
	}
	for _, r := range refusals {
		if arch.Truthy(cfg[r.key]) {
			return 0, nil, errors.New(r.why)
		}
	}
	n, ok := cfg["lora_alpha"].(interface{ Float64() (float64, error) })
	if !ok {
		return 0, nil, fmt.Errorf("%s has no numeric lora_alpha", loraConfigName)
	}
	alpha, err := n.Float64()
	if err != nil || math.IsInf(alpha, 0) || math.IsNaN(alpha) {
		return 0, nil, fmt.Errorf("lora_alpha %v is not a number", cfg["lora_alpha"])
	}
	var tokens []uint32
	if arch.Truthy(cfg["alora_invocation_tokens"]) {
		list, ok := cfg["alora_invocation_tokens"].([]any)
		if !ok {
			return 0, nil, fmt.Errorf("alora_invocation_tokens %v is not a list of token ids", cfg["alora_invocation_tokens"])
		}
		for _, v := range list {
			n, ok := v.(interface{ Int64() (int64, error) })
			id, err := int64(0), error(nil)
			if ok {
				id, err = n.Int64()
			}
			if !ok || err != nil || id < 0 || id > math.MaxUint32 {
				return 0, nil, fmt.Errorf("alora_invocation_tokens: %v is not a token id", v)
			}
			tokens = append(tokens, uint32(id))
		}
	} else if arch.Truthy(cfg["invocation_string"]) {
		return 0, nil, errors.New("invocation_string needs the base model's tokenizer to become alora_invocation_tokens " +
			"(convert_lora_to_gguf.py loads it with transformers); ggufkit does not: put the token ids in " +
			"adapter_config.json's alora_invocation_tokens")
	}
	return float32(alpha), tokens, nil
}

// openLoRAWeights opens adapter_model.safetensors, else adapter_model.bin.
func openLoRAWeights(dir string) (readers.Source, error) {
	if _, err := os.Stat(filepath.Join(dir, loraSafetensorsName)); err == nil {
		return safetensors.OpenFiles(dir, []string{loraSafetensorsName})
	}
	bin := filepath.Join(dir, loraBinName)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w %s: neither %s nor %s", ErrLoRA, dir, loraSafetensorsName, loraBinName)
	}
	return pytorch.Open([]string{bin}, nil)
}

// guessLoRAFileType is --outtype auto: the first tensor of two or more
// dimensions stored as BF16 or F16 decides; F16 otherwise.
func guessLoRAFileType(src readers.Source) gguf.FileType {
	for _, t := range src.Tensors() {
		if len(t.Shape) < 2 {
			continue
		}
		switch t.DType {
		case readers.BF16:
			return gguf.FileTypeBF16
		case readers.F16:
			return gguf.FileTypeF16
		}
	}
	return gguf.FileTypeF16
}

// loraBaseName is get_base_tensor_name: the adapted weight's name in the
// base checkpoint.
func loraBaseName(name string) string {
	r := strings.NewReplacer("base_model.model.", "", ".lora_A.weight", ".weight", ".lora_B.weight", ".weight",
		".lora_embedding_A", ".weight", ".lora_embedding_B", ".weight")
	return r.Replace(name)
}

// loraPairs groups the adapter's tensors by base weight, in the order the
// converter first meets each (the adapter's tensor order), after the
// plugin's name filter. Whole norm weights (mergekit-extract-lora adds
// them) come back apart, as inputs of their own.
func loraPairs(src readers.Source, m arch.Model) ([]*loraPair, []arch.Input, error) {
	var pairs []*loraPair
	var norms []arch.Input
	byBase := map[string]*loraPair{}
	infos := src.Tensors()
	for i := range infos {
		t := &infos[i]
		base, ok := m.Filter(loraBaseName(t.Name))
		if !ok {
			continue
		}
		// mergekit-extract-lora stores token embeddings' factors as
		// lora_embedding_A/B.
		isA := strings.Contains(t.Name, ".lora_A.weight") || strings.Contains(t.Name, ".lora_embedding_A")
		isB := strings.Contains(t.Name, ".lora_B.weight") || strings.Contains(t.Name, ".lora_embedding_B")
		switch {
		case isA || isB:
		case strings.Contains(t.Name, ".base_layer.weight"):
			continue
		case strings.Contains(t.Name, "_layernorm") || strings.Contains(t.Name, ".norm"):
			norms = append(norms, arch.Input{Name: base, Source: t.Name, Shape: t.Shape, DType: t.DType})
			continue
		case strings.Contains(t.Name, "lora_magnitude_vector"):
			return nil, nil, fmt.Errorf("tensor %q: a DoRA magnitude vector cannot be part of a GGUF LoRA adapter", t.Name)
		default:
			msg := fmt.Sprintf("tensor %q is not a lora_A or lora_B tensor", t.Name)
			if strings.Contains(t.Name, ".modules_to_save.") || strings.Contains(t.Name, ".original_module.") {
				msg += ": a module trained whole (modules_to_save) cannot be part of a GGUF LoRA adapter; merge the " +
					"adapter into the model and convert the merged model instead"
			} else if strings.Contains(t.Name, ".embed_tokens.weight") || strings.Contains(t.Name, ".lm_head.weight") {
				msg += ": the adapter holds whole embeddings (tokens added during fine-tuning), which a GGUF LoRA adapter cannot carry"
			}
			return nil, nil, errors.New(msg)
		}
		p := byBase[base]
		if p == nil {
			p = &loraPair{base: base}
			byBase[base] = p
			pairs = append(pairs, p)
		}
		if isA {
			p.a = t
		} else {
			p.b = t
		}
	}
	for _, p := range pairs {
		switch {
		case p.a == nil:
			return nil, nil, fmt.Errorf("%s has lora_B but no lora_A", p.base)
		case p.b == nil:
			return nil, nil, fmt.Errorf("%s has lora_A but no lora_B", p.base)
		case len(p.a.Shape) != 2 || len(p.b.Shape) != 2:
			return nil, nil, fmt.Errorf("%s: lora_A %v and lora_B %v are not matrices", p.base, p.a.Shape, p.b.Shape)
		case p.a.Shape[0] != p.b.Shape[1] || p.a.Shape[0] <= 0:
			return nil, nil, fmt.Errorf("%s: lora_A %v and lora_B %v do not share a rank", p.base, p.a.Shape, p.b.Shape)
		}
	}
	return pairs, norms, nil
}
