package convert

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/convert/metadata"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/hf"
)

// A folder in Meta's original layout (consolidated.NN.pth model-parallel
// shards, merged by readers/pytorch, with params.json and tokenizer.model)
// is converted the way llama.cpp converts it, with
// examples/convert_legacy_llama.py: its Params (loadOriginalParamsJson),
// tensor names (convert_model_names: Meta's names through the llama name
// map, rope.freqs dropped, Mixtral experts stacked, no Q/K permutation —
// Meta's weights are already in ggml's rotary order), output types
// (pick_output_type and type_for_tensor: 2-D and larger tensors in the
// output type, 1-D in F32; its own numpy Q8_0), metadata order
// (OutputFile.add_meta_model, add_meta_arch — no general.type and no
// general.quantization_version), vocabulary (legacyVocab) and default file
// name.

// legacyParams is convert_legacy_llama.py's Params as
// loadOriginalParamsJson fills it.
type legacyParams struct {
	nVocab, nEmbd, nLayer, nCtx, nFF, nHead, nHeadKV int64
	// nExperts and nExpertsUsed are params.json's moe entries (0: dense).
	nExperts, nExpertsUsed int64
	normEps                float64
	ropeTheta              float64
	hasRopeTheta           bool
}

// legacyJob is the part of a job only the legacy conversion has.
type legacyJob struct {
	params  *legacyParams
	outputs []arch.Output
}

// isLegacy reports whether the model's configuration is Meta's params.json.
func isLegacy(m *hf.Model) bool {
	return m.Config.File != "" && filepath.Base(m.Config.File) == hf.ParamsName
}

// legacyOutTypes are convert_legacy_llama.py's --outtype choices; "" (and
// "auto", ggufkit's spelling of the default) lets pick_output_type decide.
var legacyOutTypes = map[string]gguf.FileType{
	"f32": gguf.FileTypeAllF32, "f16": gguf.FileTypeF16, "q8_0": gguf.FileTypeQ8_0,
}

// openLegacy prepares the conversion of a Meta folder already opened as m.
func openLegacy(m *hf.Model, opts Options) (*job, error) {
	fail := func(err error) (*job, error) {
		m.Close()
		return nil, fmt.Errorf("convert: %s: %w", m.Root, err)
	}
	if opts.VocabOnly {
		// The script reads neither params.json nor the weights then.
		return &job{opts: opts, model: m, legacy: &legacyJob{}}, nil
	}
	p, err := legacyParamsOf(m.Config.Raw, m.Source)
	if err != nil {
		return fail(err)
	}
	outs, err := legacyOutputs(m.Source, p)
	if err != nil {
		return fail(err)
	}
	j := &job{opts: opts, model: m, legacy: &legacyJob{params: p, outputs: outs}, encoder: legacyEncode}
	outType := opts.OutType
	ft, isLegacyType := legacyOutTypes[outType]
	_, isConverterType := converterTypes[outType]
	switch {
	case isLegacyType:
		j.ft = ft
	case outType == "" || outType == "auto":
		if j.ft, err = legacyPickType(outs); err != nil {
			return fail(err)
		}
	case isConverterType:
		return fail(fmt.Errorf("--outtype %s: convert_legacy_llama.py writes f32, f16 or q8_0", outType))
	default:
		t, err := mix.ParseTarget(outType)
		if err != nil {
			return fail(fmt.Errorf("--outtype %q: not f32, f16, q8_0 nor %w", outType, err))
		}
		if t.Copy {
			return fail(fmt.Errorf("--outtype COPY has no meaning for a checkpoint"))
		}
		// Quantized as llama-quantize would quantize the F32 conversion.
		j.target, j.ft = &t, gguf.FileTypeAllF32
	}
	return j, nil
}

// legacyPickType is pick_output_type without --outtype: blk.0.attn_q's
// stored dtype decides, F16 for F16 weights, F32 for F32 and BF16 ones
// (legacyOutputs has refused any other dtype).
func legacyPickType(outs []arch.Output) (gguf.FileType, error) {
	for _, o := range outs {
		if o.Name == "blk.0.attn_q.weight" {
			if o.Sources[0].DType == readers.F16 {
				return gguf.FileTypeF16, nil
			}
			return gguf.FileTypeAllF32, nil
		}
	}
	return 0, fmt.Errorf("no layers.0.attention.wq.weight to choose the output type from: give --outtype")
}

// runLegacy is Run for a Meta folder.
func (j *job) runLegacy(ctx context.Context, start time.Time) (*Report, error) {
	plan := j.legacyPlan
	if j.opts.VocabOnly {
		plan = j.legacyVocabOnly
	}
	tensors, kvs, meta, err := plan()
	if err != nil {
		return nil, err
	}
	out, err := j.outputPath(meta)
	if err != nil {
		return nil, err
	}
	var rep *Report
	if j.target != nil {
		rep, err = j.runQuantized(ctx, kvs, tensors, out)
	} else {
		rep, err = j.write(ctx, kvs, tensors, out)
	}
	if err != nil {
		return nil, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// legacyPlan types the tensors and builds the metadata in the legacy
// converter's order: general.architecture, add_meta_model's general.*
// pairs, add_meta_arch's hyperparameters ending with general.file_type,
// then the vocabulary. meta is what the default file name is made of.
func (j *job) legacyPlan() ([]Tensor, []gguf.KV, *metadata.Metadata, error) {
	root := j.model.Root
	tensors := make([]Tensor, len(j.legacy.outputs))
	for i, o := range j.legacy.outputs {
		t := Tensor{Output: o, Type: gguf.F32}
		if len(o.Shape) > 1 {
			t.Type = fileTypeTensorType[j.ft]
		}
		if cols := o.Shape[len(o.Shape)-1]; t.Type == gguf.Q8_0 && cols%32 != 0 {
			return nil, nil, nil, fmt.Errorf("convert: %s: tensor %q: rows of %d values are not whole Q8_0 blocks of 32 (convert_legacy_llama.py would quantize across rows and write a file llama.cpp refuses to load): use --outtype f16 or f32", root, o.Sources[0].Source, cols)
		}
		tensors[i] = t
	}
	m, err := metadata.Load(j.opts.MetadataFile, root, j.opts.ModelName, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	// add_meta_model writes no sampling parameters.
	m.Sampling = nil
	if m.Name == "" {
		m.Name = filepath.Base(root)
	}
	// The file name takes a size label from the metadata if it has one;
	// general.size_label is always the one counted from the weights.
	total, shared, expert := legacyParamCount(j.model.Source.Tensors())
	label := metadata.SizeLabel(total, shared, expert, j.legacy.params.nExperts)
	naming := *m
	if naming.SizeLabel == "" {
		naming.SizeLabel = label
	}
	m.SizeLabel = label

	var l gguf.KVList
	l.Set(gguf.KeyGeneralArchitecture, gguf.String("llama"))
	l.Append(m.KVs()...)
	params, err := j.legacy.params.kvs(j.ft, true)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("convert: %s: %w", root, err)
	}
	l.Append(params...)
	vocab, _, err := legacyVocab(root, j.legacy.params.nVocab)
	if err != nil {
		return nil, nil, nil, err
	}
	l.Append(vocab...)
	return tensors, l.KVs(), &naming, nil
}

// legacyVocabOnly is OutputFile.write_vocab_only: the metadata as the
// heuristics found it (no size label counted), the script's stand-in
// Params (the vocabulary's size, 1 for every other size, eps 1e-5, no
// file type) and the vocabulary; no tensors.
func (j *job) legacyVocabOnly() ([]Tensor, []gguf.KV, *metadata.Metadata, error) {
	vocab, n, err := legacyVocab(j.model.Root, -1)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := metadata.Load(j.opts.MetadataFile, j.model.Root, j.opts.ModelName, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	m.Sampling = nil
	if m.Name == "" {
		m.Name = "LLaMA" // add_meta_model's last resort
	}
	p := &legacyParams{nVocab: n, nEmbd: 1, nLayer: 1, nCtx: 1, nFF: 1, nHead: 1, nHeadKV: 1, normEps: 1e-5}
	params, err := p.kvs(0, false)
	if err != nil {
		return nil, nil, nil, err
	}
	var l gguf.KVList
	l.Set(gguf.KeyGeneralArchitecture, gguf.String("llama"))
	l.Append(m.KVs()...)
	l.Append(params...)
	l.Append(vocab...)
	return nil, l.KVs(), m, nil
}

// legacyParamCount is per_model_weight_count_estimation over the source
// tensors under their Meta names (rope.freqs included): the total, the
// parameters outside the experts, and those of expert 0.
func legacyParamCount(infos []readers.TensorInfo) (total, shared, expert int64) {
	for _, t := range infos {
		if hasAnySuffix(t.Name, skippedSuffixes) {
			continue
		}
		n, err := readers.NumElements(t.Shape)
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(t.Name, ".experts.0."):
			expert += n
		case !strings.Contains(t.Name, ".experts."):
			shared += n
		}
		total += n
	}
	return total, shared, expert
}

// kvs is add_meta_arch: the hyperparameters, then general.file_type
// when withFileType.
func (p *legacyParams) kvs(ft gguf.FileType, withFileType bool) ([]gguf.KV, error) {
	var kvs []gguf.KV
	var err error
	u32 := func(suffix string, v int64) {
		if err == nil && (v < 0 || v > math.MaxUint32) {
			err = fmt.Errorf("llama.%s = %d does not fit a uint32", suffix, v)
		}
		kvs = append(kvs, gguf.KV{Key: gguf.ArchKey("llama", suffix), Value: gguf.Uint32(uint32(v))})
	}
	u32(gguf.SuffixVocabSize, p.nVocab)
	u32(gguf.SuffixContextLength, p.nCtx)
	u32(gguf.SuffixEmbeddingLength, p.nEmbd)
	u32(gguf.SuffixBlockCount, p.nLayer)
	u32(gguf.SuffixFeedForwardLength, p.nFF)
	u32(gguf.SuffixRopeDimensionCount, p.nEmbd/p.nHead)
	u32(gguf.SuffixHeadCount, p.nHead)
	u32(gguf.SuffixHeadCountKV, p.nHeadKV)
	if p.nExperts != 0 {
		u32(gguf.SuffixExpertCount, p.nExperts)
	}
	if p.nExpertsUsed != 0 {
		u32(gguf.SuffixExpertUsedCount, p.nExpertsUsed)
	}
	kvs = append(kvs, gguf.KV{Key: gguf.ArchKey("llama", gguf.SuffixLayerNormRMSEps), Value: gguf.Float32(float32(p.normEps))})
	if p.hasRopeTheta {
		kvs = append(kvs, gguf.KV{Key: gguf.ArchKey("llama", gguf.SuffixRopeFreqBase), Value: gguf.Float32(float32(p.ropeTheta))})
	}
	if withFileType {
		kvs = append(kvs, gguf.KV{Key: gguf.KeyGeneralFileType, Value: gguf.Uint32(uint32(ft))})
	}
	return kvs, err
}

// legacyParamsOf is loadOriginalParamsJson: params.json's dim, n_layers,
// n_heads, n_kv_heads (default n_heads), norm_eps and rope_theta; the
// vocabulary size from tok_embeddings' rows and the feed-forward width
// from layers.0's w1 (expert 0's for a mixture of experts); the context
// length by the script's heuristic (Mixtral 32768, rope_theta 1e6
// CodeLlama 16384, norm_eps 1e-5 LLaMA 2 4096, else LLaMA 1 2048).
func legacyParamsOf(raw map[string]any, src readers.Source) (*legacyParams, error) {
	p := &legacyParams{}
	var err error
	req := func(key string) int64 {
		n, ok, e := paramsInt(raw, key)
		switch {
		case err != nil:
		case e != nil:
			err = e
		case !ok:
			err = fmt.Errorf("params.json has no %q", key)
		case n <= 0:
			err = fmt.Errorf("params.json: %s = %d, want a positive integer", key, n)
		}
		return n
	}
	p.nEmbd, p.nLayer, p.nHead = req("dim"), req("n_layers"), req("n_heads")
	if err != nil {
		return nil, err
	}
	p.nHeadKV = p.nHead
	if _, present := raw["n_kv_heads"]; present {
		p.nHeadKV = req("n_kv_heads")
	}
	eps, ok := paramsFloat(raw["norm_eps"])
	if !ok || eps == 0 {
		return nil, fmt.Errorf("params.json: norm_eps = %v, want a non-zero number", raw["norm_eps"])
	}
	p.normEps = eps
	moe, isMap := raw["moe"].(map[string]any)
	isMoE := isMap && len(moe) > 0
	if v := raw["moe"]; !isMap && v != nil && v != false {
		return nil, fmt.Errorf("params.json: moe = %v, want an object", v)
	}
	if isMoE {
		p.nExperts, p.nExpertsUsed = req2(moe, "num_experts", &err), req2(moe, "num_experts_per_tok", &err)
	}
	if v, present := raw["rope_theta"]; present && v != nil {
		if p.ropeTheta, ok = paramsFloat(v); !ok {
			return nil, fmt.Errorf("params.json: rope_theta = %v is not a number", v)
		}
		p.hasRopeTheta = true
	} else if !present && isMoE {
		p.ropeTheta, p.hasRopeTheta = 1e6, true
	}
	if err != nil {
		return nil, err
	}
	theta, _ := paramsFloat(raw["rope_theta"])
	switch {
	case isMoE:
		p.nCtx = 32768
	case theta == 1e6:
		p.nCtx = 16384
	case eps == 1e-05:
		p.nCtx = 4096
	default:
		p.nCtx = 2048
	}
	infos := src.Tensors()
	if p.nLayer > int64(len(infos)) {
		// Every layer has tensors; the bound also keeps the name map,
		// built per layer, from growing with a hostile n_layers.
		return nil, fmt.Errorf("params.json: n_layers = %d, but the checkpoint has only %d tensors", p.nLayer, len(infos))
	}
	shapes := map[string][]int64{}
	for _, t := range infos {
		shapes[t.Name] = t.Shape
	}
	emb, ok := shapes["tok_embeddings.weight"]
	if !ok || len(emb) != 2 {
		return nil, fmt.Errorf("no 2-D tok_embeddings.weight to take the vocabulary size from")
	}
	p.nVocab = emb[0]
	ffn := "layers.0.feed_forward.w1.weight"
	if isMoE {
		ffn = "layers.0.feed_forward.experts.0.w1.weight"
	}
	w1, ok := shapes[ffn]
	if !ok || len(w1) < 1 {
		return nil, fmt.Errorf("no %s to take the feed-forward width from", ffn)
	}
	p.nFF = w1[0]
	return p, nil
}

// req2 reads a required positive integer of params.json's moe object.
func req2(m map[string]any, key string, err *error) int64 {
	n, ok, e := paramsInt(m, key)
	switch {
	case *err != nil:
	case e != nil:
		*err = e
	case !ok || n <= 0:
		*err = fmt.Errorf("params.json: moe.%s = %v, want a positive integer", key, m[key])
	}
	return n
}

// paramsInt reads an integer of params.json; ok is false when the key is
// absent or null.
func paramsInt(m map[string]any, key string) (int64, bool, error) {
	v, present := m[key]
	if !present || v == nil {
		return 0, false, nil
	}
	if num, isNum := v.(json.Number); isNum {
		if n, err := num.Int64(); err == nil {
			return n, true, nil
		}
	}
	return 0, false, fmt.Errorf("params.json: %s = %v is not an integer", key, v)
}

// paramsFloat reads a number of params.json.
func paramsFloat(v any) (float64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := num.Float64()
	return f, err == nil
}

// legacySkipped are the tensor kinds convert_model_names drops for llama
// (MODEL_TENSOR_SKIP).
var legacySkipped = []arch.Kind{arch.KindRopeFreqs, "ATTN_ROT_EMBD"}

// legacyOutputs is convert_model_names: each source tensor, in the
// checkpoint's order, under its GGUF name; with experts, each layer's
// per-expert w1, w2, w3 stacked into one tensor, these coming after all
// the others (layer by layer, w1 w2 w3), as the script appends them.
func legacyOutputs(src readers.Source, p *legacyParams) ([]arch.Output, error) {
	names, err := arch.NewNameMap("llama", int(p.nLayer))
	if err != nil {
		return nil, err
	}
	infos := src.Tensors()
	byName := make(map[string]readers.TensorInfo, len(infos))
	for _, t := range infos {
		byName[t.Name] = t
	}
	for _, hfName := range []string{"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.W_pack.weight"} {
		if _, ok := byName[hfName]; ok {
			return nil, fmt.Errorf("tensor %q has a Hugging Face name beside params.json (convert_legacy_llama.py would undo its Q/K permutation): add the model's config.json to convert it as a Hugging Face model", hfName)
		}
	}
	input := func(t readers.TensorInfo) arch.Input {
		return arch.Input{Name: t.Name, Source: t.Name, Shape: t.Shape, DType: t.DType}
	}
	stacked := map[string]bool{}
	var packed []readers.TensorInfo // one per stack: its name and shape
	var packedSrc [][]arch.Input
	for l := range p.nLayer {
		for w := 1; w <= 3 && p.nExperts > 0; w++ {
			var ins []arch.Input
			for e := range p.nExperts {
				name := fmt.Sprintf("layers.%d.feed_forward.experts.%d.w%d.weight", l, e, w)
				t, ok := byName[name]
				if !ok {
					return nil, fmt.Errorf("expert tensor %q not found", name)
				}
				if len(ins) > 0 && !slices.Equal(t.Shape, ins[0].Shape) {
					return nil, fmt.Errorf("expert tensor %q has shape %v, expert 0 %v", name, t.Shape, ins[0].Shape)
				}
				stacked[name] = true
				ins = append(ins, input(t))
			}
			packed = append(packed, readers.TensorInfo{Name: fmt.Sprintf("layers.%d.feed_forward.experts.w%d.weight", l, w),
				Shape: append([]int64{p.nExperts}, ins[0].Shape...)})
			packedSrc = append(packedSrc, ins)
		}
	}
	var outs []arch.Output
	seen := map[string]string{}
	add := func(srcName string, shape []int64, ins []arch.Input, build func([][]float32) ([]float32, error)) error {
		kind, name, ok := names.Lookup(srcName)
		if !ok {
			return fmt.Errorf("unexpected tensor name %q (convert_legacy_llama.py refuses it too unless --skip-unknown)", srcName)
		}
		if slices.Contains(legacySkipped, kind) {
			return nil
		}
		if prev, dup := seen[name]; dup {
			return fmt.Errorf("tensors %q and %q both map to %q", prev, srcName, name)
		}
		for _, in := range ins {
			switch in.DType {
			case readers.F32, readers.F16, readers.BF16:
			default:
				return fmt.Errorf("tensor %q is stored as %s; convert_legacy_llama.py converts F32, F16 and BF16 weights", in.Source, in.DType)
			}
		}
		if len(shape) == 0 {
			return fmt.Errorf("tensor %q is a scalar", srcName)
		}
		seen[name] = srcName
		outs = append(outs, arch.Output{Name: name, Shape: shape, Sources: ins, Build: build, HFName: srcName, Bid: arch.BlockID(srcName)})
		return nil
	}
	for _, t := range infos {
		if stacked[t.Name] {
			continue
		}
		if err := add(t.Name, t.Shape, []arch.Input{input(t)}, nil); err != nil {
			return nil, err
		}
	}
	for i, t := range packed {
		if err := add(t.Name, t.Shape, packedSrc[i], stackExperts); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// stackExperts is pack_experts_lazy: the experts one after another along a
// new first axis.
func stackExperts(srcs [][]float32) ([]float32, error) {
	n := 0
	for _, s := range srcs {
		n += len(s)
	}
	out := make([]float32, 0, n)
	for _, s := range srcs {
		out = append(out, s...)
	}
	return out, nil
}
