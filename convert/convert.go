// Package convert turns a Hugging Face checkpoint into a GGUF the way
// llama.cpp's convert_hf_to_gguf.py does: open the source lazily, plan every
// output tensor through the architecture's plugin (arch), choose each
// tensor's type, then stream read → float32 → encode → write at the
// tensor's offset, several tensors in flight. Beyond llama.cpp, the output
// type may be any llama-quantize preset or ggml type, quantized in the same
// pass from the source's full precision (see OneTarget). A folder in
// Meta's original layout (params.json) is converted as llama.cpp's
// examples/convert_legacy_llama.py converts it (see legacy.go).
package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/convert/metadata"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/hf"
	"github.com/ggufkit/ggufkit/readers/hub"
	"github.com/ggufkit/ggufkit/requantize"
	"github.com/ggufkit/ggufkit/writer"
)

// Options configure a conversion. The zero value converts with
// convert_hf_to_gguf.py's defaults (--outtype auto, default file name in
// the model's folder).
type Options struct {
	// OutType is one of convert_hf_to_gguf.py's --outtype values (f32,
	// f16, bf16, q8_0, tq1_0, tq2_0, auto; lower case), or any
	// llama-quantize preset (Q4_K_M, IQ4_XS …) or ggml type, which are
	// applied with llama-quantize's rules in the same pass.
	OutType string
	// OutFile is the output path, which may contain "{ftype}"; a directory
	// or "" (the model's folder) gets the GGUF naming convention's name.
	OutFile string
	// ModelName sets general.name (--model-name).
	ModelName string
	// MetadataFile is a JSON file of general.* overrides (--metadata).
	MetadataFile string
	// VocabOnly writes only the metadata and tokenizer.
	VocabOnly bool
	// TokenizerPre overrides the BPE pre-tokenizer identification.
	TokenizerPre string
	// Quantize holds llama-quantize's options for a preset or ggml-type
	// OutType (--imatrix, --tensor-type, --pure, --leave-output-tensor …);
	// its Target, Workers, DryRun and Overwrite come from this struct.
	Quantize requantize.Options
	// SplitMaxTensors and SplitMaxSize split the output into gguf-split
	// shards (PATH-00001-of-0000N.gguf) of at most that many tensors or
	// tensor bytes, as convert_hf_to_gguf.py's --split-max-tensors and
	// --split-max-size do (0: no limit). NoTensorFirstSplit puts no tensor
	// in the first shard (--no-tensor-first-split).
	SplitMaxTensors    int
	SplitMaxSize       int64
	NoTensorFirstSplit bool
	// DryRun plans everything and writes nothing.
	DryRun bool
	// Threads bounds the tensors converted at once (0: all CPUs).
	Threads int
	// Overwrite replaces an existing output file.
	Overwrite bool
	// OnTensor is called after each tensor is written (or planned, in a
	// dry run), from any goroutine.
	OnTensor func(TensorReport)
	// OnStart is called once the output is planned, with the number of
	// tensors and the bytes of tensor data to write.
	OnStart func(tensors int, bytes int64)
	// MMProj writes the multimodal projector of a vision or audio model
	// instead of its text model (convert_hf_to_gguf.py --mmproj): its
	// vision/audio towers and projector as a "clip" GGUF, named with an
	// "mmproj-" prefix.
	MMProj bool
	// Hub sets how a model named "hf:ORG/NAME[@REVISION]" is read from the
	// Hugging Face Hub (see readers/hub); its zero value reads the
	// environment.
	Hub hub.Options
}

// TensorReport describes one converted tensor.
type TensorReport struct {
	Index, Count int
	Name         string
	Shape        []uint64
	SourceDType  readers.DType
	Type         gguf.Type
	Bytes        uint64
}

// Report summarises a conversion.
type Report struct {
	// Output is the file written (or that would be, in a dry run); the
	// first shard of a split output.
	Output string
	// Outputs lists every file, one per shard.
	Outputs []string
	// FileType is general.file_type.
	FileType gguf.FileType
	Tensors  int
	// Bytes is the size of the output files.
	Bytes    int64
	Duration time.Duration
	// Plan lists the output tensors in file order.
	Plan []TensorReport
}

// IsConverterType reports whether outType is one of convert_hf_to_gguf.py's
// own --outtype choices (not a llama-quantize preset or ggml type).
func IsConverterType(outType string) bool {
	_, ok := converterTypes[outType]
	return ok
}

// converterTypes are convert_hf_to_gguf.py's --outtype choices.
var converterTypes = map[string]gguf.FileType{
	"f32": gguf.FileTypeAllF32, "f16": gguf.FileTypeF16, "bf16": gguf.FileTypeBF16, "q8_0": gguf.FileTypeQ8_0,
	"tq1_0": gguf.FileTypeTQ1_0, "tq2_0": gguf.FileTypeTQ2_0, "auto": gguf.FileTypeGuessed,
}

// job is an opened conversion.
type job struct {
	opts   Options
	model  *hf.Model
	h      arch.HParams
	plugin arch.Model
	ft     gguf.FileType
	// target is set for a llama-quantize OutType.
	target *mix.Target
	// legacy is set for Meta's original layout (see legacy.go).
	legacy *legacyJob
	// encoder, when set, stores float32 rows instead of quantize.Encode.
	encoder func(typ gguf.Type, dst []byte, src []float32, ncols int) error
}

func open(ctx context.Context, path string, opts Options) (*job, error) {
	var m *hf.Model
	var err error
	if hub.IsSpec(path) {
		spec, err := hub.ParseSpec(path)
		if err != nil {
			return nil, err
		}
		if m, err = hub.Open(ctx, spec, opts.Hub); err != nil {
			return nil, err
		}
		if opts.OutFile == "" {
			// The snapshot folder goes away with the model: the output
			// goes to the working directory.
			opts.OutFile = "."
		}
	} else {
		if isGGUF(path) {
			return nil, fmt.Errorf("convert: %s is already a GGUF file: use ggufkit quantize to change its types", path)
		}
		if m, err = hf.Open(path); err != nil {
			return nil, err
		}
	}
	if isLegacy(m) {
		if opts.MMProj {
			m.Close()
			return nil, fmt.Errorf("convert: %s: %w: Meta's original layout holds a text model only", m.Root, arch.ErrNoTower)
		}
		return openLegacy(m, opts)
	}
	j := &job{opts: opts, model: m, h: arch.HParams(m.Config.Params)}
	newModel := arch.New
	if opts.MMProj {
		if opts.VocabOnly {
			m.Close()
			return nil, fmt.Errorf("convert: --mmproj and --vocab-only: a projector has no vocabulary")
		}
		newModel = arch.NewMMProj
	}
	h := j.h
	if opts.MMProj && m.Config.Global != nil {
		h = arch.HParams(m.Config.Global) // MmprojModel reads the config unmerged
	}
	if j.plugin, err = newModel(h, m.Root); err != nil {
		m.Close()
		return nil, fmt.Errorf("convert: %s: %w", m.Root, err)
	}
	if sd, ok := j.plugin.(arch.SelfDequantizer); !ok || !sd.OwnsQuantization() {
		if err := dequantSource(m, j.h); err != nil {
			m.Close()
			return nil, fmt.Errorf("convert: %s: %w", m.Root, err)
		}
	}
	if ix, ok := j.plugin.(arch.TensorIndexer); ok {
		infos := m.Source.Tensors()
		names := make([]string, len(infos))
		for i, t := range infos {
			names[i] = t.Name
		}
		if err := ix.IndexTensors(names); err != nil {
			m.Close()
			return nil, fmt.Errorf("convert: %s: %w", m.Root, err)
		}
	}
	outType := opts.OutType
	if outType == "" {
		outType = "auto"
	}
	if ft, ok := converterTypes[outType]; ok {
		j.ft = ft
		if ft == gguf.FileTypeGuessed {
			j.ft = j.guessFileType()
		}
	} else {
		t, err := mix.ParseTarget(outType)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("convert: --outtype %q: not a converter type (f32, f16, bf16, q8_0, tq1_0, tq2_0, auto) nor %w", outType, err)
		}
		if t.Copy {
			m.Close()
			return nil, fmt.Errorf("convert: --outtype COPY has no meaning for a checkpoint")
		}
		if opts.MMProj {
			m.Close()
			return nil, fmt.Errorf("convert: --mmproj --outtype %q: a projector is written as f32, f16, bf16 or q8_0, as llama.cpp's converter writes it", outType)
		}
		j.target = &t
		j.ft = gguf.FileTypeAllF32
	}
	if s, ok := j.plugin.(interface{ SetFileType(gguf.FileType) }); ok {
		s.SetFileType(j.ft)
	}
	return j, nil
}

// isGGUF tells whether path is a file that starts with the GGUF magic.
func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == gguf.Magic
}

// guessFileType is the "auto" rule: the first tensor of two or more
// dimensions stored as BF16 or F16 decides; F16 otherwise.
func (j *job) guessFileType() gguf.FileType {
	for _, t := range j.model.Source.Tensors() {
		if _, ok := j.plugin.Filter(t.Name); !ok || len(t.Shape) < 2 {
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

// Run converts the model at path (a folder, a weights file or a Hugging
// Face cache entry).
func Run(ctx context.Context, path string, opts Options) (*Report, error) {
	start := time.Now()
	j, err := open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	defer j.model.Close()
	if j.legacy != nil {
		return j.runLegacy(ctx, start)
	}
	var tensors []Tensor
	if !opts.VocabOnly {
		if tensors, err = planTensors(j.plugin, j.model.Source, j.model.Root, j.ft); err != nil {
			return nil, fmt.Errorf("convert: %s: %w", j.model.Root, err)
		}
	}
	meta, err := j.metadata(tensors)
	if err != nil {
		return nil, err
	}
	kvs, err := j.kvs(meta.KVs())
	if err != nil {
		return nil, err
	}
	out, err := j.outputPath(meta)
	if err != nil {
		return nil, err
	}
	var rep *Report
	if j.target != nil && !opts.VocabOnly {
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

// kvs is the output metadata in the converter's order: the architecture,
// general.type, the authorship metadata, the hyperparameters (with
// general.file_type), general.quantization_version, then the tokenizer.
func (j *job) kvs(meta []gguf.KV) ([]gguf.KV, error) {
	var l gguf.KVList
	l.Set(gguf.KeyGeneralArchitecture, gguf.String(j.plugin.Arch()))
	if e, ok := j.plugin.(interface{ EarlyKVs() []gguf.KV }); ok {
		// Pairs the converter adds while it prepares the tensors.
		l.Append(e.EarlyKVs()...)
	}
	if v, ok := j.plugin.(interface {
		ValueKVs(read func(arch.Input) ([]float32, error)) ([]gguf.KV, error)
	}); ok {
		// Pairs the converter makes of tensor values while it prepares
		// the tensors (ApertusModel's xIELU parameters): planTensors has
		// called Modify, which names the tensors.
		kvs, err := v.ValueKVs(func(in arch.Input) ([]float32, error) {
			n, err := readers.NumElements(in.Shape)
			if err != nil {
				return nil, err
			}
			if n > 1<<20 {
				return nil, fmt.Errorf("tensor %q: %d values is too many for metadata", in.Source, n)
			}
			rows, _ := readers.Rows(in.Shape)
			dst := make([]float32, n)
			if err := j.model.Source.ReadFloat32(context.Background(), in.Source, dst, 0, int(rows)); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", in.Source, err)
			}
			return dst, nil
		})
		if err != nil {
			return nil, fmt.Errorf("convert: %s: %w", j.model.Root, err)
		}
		l.Append(kvs...)
	}
	generalType := "model"
	if t, ok := j.plugin.(interface{ GGUFType() string }); ok {
		generalType = t.GGUFType()
	}
	l.Set(gguf.KeyGeneralType, gguf.String(generalType))
	l.Append(meta...)
	params, err := j.plugin.Params(j.ft)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", j.model.Root, err)
	}
	l.Append(params...)
	l.Set(gguf.KeyGeneralQuantizationVersion, gguf.Uint32(gguf.QuantizationVersion))
	if j.opts.MMProj {
		return l.KVs(), nil
	}
	vocab, err := j.vocab()
	if err != nil {
		return nil, err
	}
	l.Append(vocab...)
	return l.KVs(), nil
}

// write is the converter's own output: its tensor order and types, in one
// file or in the shards the split options ask for.
func (j *job) write(ctx context.Context, kvs []gguf.KV, tensors []Tensor, out string) (*Report, error) {
	rep := &Report{FileType: j.ft, Tensors: len(tensors)}
	var total int64
	for i := range tensors {
		t := &tensors[i]
		rs, _ := t.Type.RowSize(uint64(t.RowLen()))
		size := rs * uint64(t.Elements()/t.RowLen())
		total += int64(size)
		rep.Plan = append(rep.Plan, TensorReport{Index: i, Count: len(tensors), Name: t.Name, Shape: t.GGUFShape(),
			SourceDType: sourceDType(t), Type: t.Type, Bytes: size})
	}
	sizes := make([]uint64, len(rep.Plan))
	for i, r := range rep.Plan {
		sizes[i] = r.Bytes
	}
	shardOf, nShards := splitShards(sizes, j.opts.SplitMaxTensors, j.opts.SplitMaxSize, j.opts.NoTensorFirstSplit)
	if err := checkShards(nShards); err != nil {
		return nil, err
	}
	rep.Outputs = shardNames(out, nShards)
	rep.Output = rep.Outputs[0]
	if j.opts.OnStart != nil {
		j.opts.OnStart(len(tensors), total)
	}
	if j.opts.DryRun {
		// Nothing touches the file system; the size is the tensor data's.
		rep.Bytes = total
		for _, r := range rep.Plan {
			if j.opts.OnTensor != nil {
				j.opts.OnTensor(r)
			}
		}
		return rep, nil
	}
	ws := make([]*writer.Writer, nShards)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.Abort()
			}
		}
	}()
	for s := range ws {
		// A vocabulary-only file is written by gguf-py's write_vocab, which
		// writes no tensor-info section and so no padding after the header.
		w, err := writer.Create(ctx, rep.Outputs[s], writer.Options{Overwrite: j.opts.Overwrite, OmitFinalPad: j.opts.VocabOnly})
		if err != nil {
			return nil, err
		}
		ws[s] = w
		if s == 0 {
			for _, kv := range kvs {
				w.SetKV(kv.Key, kv.Value)
			}
		}
		if nShards > 1 {
			// gguf-py's add_shard_kv_data: every shard gets these, after
			// the first shard's metadata.
			w.SetKV(gguf.KeySplitNo, gguf.Uint16(uint16(s)))
			w.SetKV(gguf.KeySplitCount, gguf.Uint16(uint16(nShards)))
			w.SetKV(gguf.KeySplitTensorsCount, gguf.Int32(int32(len(tensors))))
		}
	}
	for i := range tensors {
		t := &tensors[i]
		if err := ws[shardOf[i]].AddTensor(t.Name, t.Type, t.GGUFShape()); err != nil {
			return nil, fmt.Errorf("convert: %s: tensor %q: %w", j.model.Root, t.Name, err)
		}
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			return nil, err
		}
		rep.Bytes += w.Size()
	}
	threads := j.opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(threads)
	for i := range tensors {
		t := &tensors[i]
		w := ws[shardOf[i]]
		g.Go(func() error {
			if err := j.writeTensor(gctx, w, t); err != nil {
				return fmt.Errorf("convert: %s: tensor %q: %w", j.model.Root, t.Name, err)
			}
			if j.opts.OnTensor != nil {
				j.opts.OnTensor(rep.Plan[i])
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for s, w := range ws {
		if err := w.Close(); err != nil {
			// The shards published already would be a partial model.
			for _, p := range rep.Outputs[:s] {
				os.Remove(p)
			}
			return nil, err
		}
		ws[s] = nil
	}
	return rep, nil
}

// splitShards is gguf-py's split rule (GGUFWriter.add_tensor_info): a
// tensor starts a new shard when the current one is not empty and already
// holds maxTensors tensors, or its bytes plus this tensor's would exceed
// maxSize (0: no limit). With smallFirst the first shard holds no tensor.
// It returns each tensor's shard and the number of shards.
func splitShards(sizes []uint64, maxTensors int, maxSize int64, smallFirst bool) ([]int, int) {
	shard, n, bytes := 0, 0, uint64(0)
	if smallFirst {
		shard = 1
	}
	out := make([]int, len(sizes))
	for i, sz := range sizes {
		if n > 0 && ((maxTensors > 0 && n >= maxTensors) || (maxSize > 0 && bytes+sz > uint64(maxSize))) {
			shard, n, bytes = shard+1, 0, 0
		}
		out[i] = shard
		n++
		bytes += sz
	}
	return out, shard + 1
}

// maxShards is the most shards a split output can number: split.count is
// a uint16 (gguf-py's struct.pack("<H") refuses more).
const maxShards = 1<<16 - 1

func checkShards(n int) error {
	if n > maxShards {
		return fmt.Errorf("convert: the split options give %d shards, more than split.count can number (%d)", n, maxShards)
	}
	return nil
}

// shardNames is gguf-py's format_shard_names: one file keeps its name,
// several are STEM-00001-of-0000N.gguf beside it.
func shardNames(path string, n int) []string {
	if n == 1 {
		return []string{path}
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	names := make([]string, n)
	for i := range names {
		names[i] = filepath.Join(filepath.Dir(path), fmt.Sprintf("%s-%05d-of-%05d.gguf", stem, i+1, n))
	}
	return names
}

func sourceDType(t *Tensor) readers.DType {
	if len(t.Sources) == 0 {
		return readers.F32
	}
	return t.Sources[0].DType
}

// chunkValues bounds the float32 values a streamed tensor holds at once.
const chunkValues = 1 << 20

// writeTensor computes, encodes and writes one tensor. A tensor that is a
// source unchanged, or a stack of experts, streams a bounded number of rows
// at a time; one with another transform is computed whole.
func (j *job) writeTensor(ctx context.Context, w *writer.Writer, t *Tensor) error {
	cols := t.RowLen()
	if t.Packed != nil {
		b, err := j.packed(t)
		if err != nil {
			return err
		}
		return w.WriteTensor(t.Name, b)
	}
	if t.RowOrder != nil && len(t.Sources) == 1 && len(t.Shape) == 2 && int64(len(t.RowOrder)) == t.Shape[0] {
		// Rows reordered only (the Q/K permutation): straight from the
		// stored rows when the dtypes allow it.
		if rr, ok := j.model.Source.(readers.RowReader); ok {
			if d, ok := directFor(t.Sources[0].DType, t.Type); ok {
				tw, err := w.TensorWriterAt(t.Name)
				if err != nil {
					return err
				}
				return j.writeReordered(ctx, rr, tw, t, d)
			}
		}
	}
	if rows, ok := stackedRows(t, cols); ok {
		return j.writeStacked(ctx, w, t, cols, rows)
	}
	if t.Build != nil || len(t.Sources) != 1 {
		data, err := j.values(ctx, t)
		if err != nil {
			return err
		}
		buf, err := j.encode(t.Type, data, cols)
		if err != nil {
			return err
		}
		return w.WriteTensor(t.Name, buf)
	}
	tw, err := w.TensorWriterAt(t.Name)
	if err != nil {
		return err
	}
	if rr, ok := j.model.Source.(readers.RowReader); ok {
		if f, ok := directFor(t.Sources[0].DType, t.Type); ok {
			return j.writeDirect(ctx, rr, tw, t, f)
		}
	}
	return j.streamRows(ctx, tw, t.Type, t.Sources[0].Source, cols, t.Elements()/cols, 0)
}

// streamRows reads rows of source src a bounded number at a time as
// float32, encodes them as typ and writes them at row offset at of tw.
func (j *job) streamRows(ctx context.Context, tw *writer.TensorWriter, typ gguf.Type, src string, cols, rows, at int64) error {
	rowSize, ok := typ.RowSize(uint64(cols))
	if !ok {
		return fmt.Errorf("row of %d values cannot be stored as %s", cols, typ)
	}
	step := max(1, chunkValues/cols)
	vals := make([]float32, min(step, rows)*cols)
	out := make([]byte, uint64(min(step, rows))*rowSize)
	for r := int64(0); r < rows; r += step {
		n := min(step, rows-r)
		v := vals[:n*cols]
		if err := j.model.Source.ReadFloat32(ctx, src, v, int(r), int(n)); err != nil {
			return err
		}
		b := out[:uint64(n)*rowSize]
		if err := j.encodeRows(typ, b, v, int(cols)); err != nil {
			return fmt.Errorf("rows %d…: %w", at+r, err)
		}
		if _, err := tw.WriteAt(b, (at+r)*int64(rowSize)); err != nil {
			return err
		}
	}
	return nil
}

// stackedRows returns, for a tensor that only stacks its sources
// unchanged (arch.Output's Stacked) into whole rows, each source's row
// count; ok is false for any other tensor.
func stackedRows(t *Tensor, cols int64) (rows []int64, ok bool) {
	if !t.Stacked || len(t.Sources) < 2 || cols <= 0 {
		return nil, false
	}
	var total int64
	for _, s := range t.Sources {
		n, err := readers.NumElements(s.Shape)
		if err != nil || n%cols != 0 {
			return nil, false
		}
		rows = append(rows, n/cols)
		total += n
	}
	return rows, total == t.Elements()
}

// writeStacked writes a stack of experts source by source, each streamed
// into its place: never the whole stack in memory.
func (j *job) writeStacked(ctx context.Context, w *writer.Writer, t *Tensor, cols int64, rows []int64) error {
	tw, err := w.TensorWriterAt(t.Name)
	if err != nil {
		return err
	}
	var at int64
	for i, s := range t.Sources {
		if err := j.streamRows(ctx, tw, t.Type, s.Source, cols, rows[i], at); err != nil {
			return err
		}
		at += rows[i]
	}
	return nil
}

// writeDirect streams a tensor whose stored dtype converts straight to its
// output type (see directFor), a bounded piece at a time, from the source's
// stored bytes (mapped pages are released as they are used). A tensor
// copied unchanged is only scanned for non-finite values and then copied
// by the kernel when the source is a plain file (readers.FileRanger).
func (j *job) writeDirect(ctx context.Context, rr readers.RowReader, tw *writer.TensorWriter, t *Tensor, d direct) error {
	cols := t.RowLen()
	rows := t.Elements() / cols
	src := t.Sources[0]
	inSize, outSize := int64(src.DType.Size()), int64(t.Type.TypeSize())
	check := func(first int64, b []byte) error {
		if i := firstNonFiniteStored(b, src.DType); i >= 0 {
			return nonFiniteError(b, src.DType, i, cols, first)
		}
		return nil
	}
	if fr, ok := j.model.Source.(readers.FileRanger); ok && d.copy {
		if f, off, n, err := fr.FileRange(src.Source); err == nil && n == rows*cols*inSize {
			if err := rr.VisitRows(ctx, src.Source, 0, int(rows), check); err != nil {
				return err
			}
			return tw.CopyFrom(f, off, 0, n)
		}
	}
	var out []byte
	return rr.VisitRows(ctx, src.Source, 0, int(rows), func(first int64, b []byte) error {
		if err := check(first, b); err != nil {
			return err
		}
		n := int64(len(b)) / inSize * outSize
		if int64(cap(out)) < n {
			out = make([]byte, n)
		}
		o := out[:n]
		d.conv(o, b)
		_, err := tw.WriteAt(o, first*outSize)
		return err
	})
}

// writeReordered writes a tensor whose rows are its source's in the order
// t.RowOrder, converting each stored row straight to the output type and
// writing a bounded run of output rows at a time. A non-finite value is
// reported at its output row, as the float32 route reports it.
func (j *job) writeReordered(ctx context.Context, rr readers.RowReader, tw *writer.TensorWriter, t *Tensor, d direct) error {
	cols := t.RowLen()
	src := t.Sources[0]
	inSize, outSize := int64(src.DType.Size()), int64(t.Type.TypeSize())
	step := max(1, chunkValues/cols)
	out := make([]byte, min(step, int64(len(t.RowOrder)))*cols*outSize)
	for r0 := int64(0); r0 < int64(len(t.RowOrder)); r0 += step {
		n := min(step, int64(len(t.RowOrder))-r0)
		for k := range n {
			row := r0 + k
			o := out[k*cols*outSize : (k+1)*cols*outSize]
			err := rr.VisitRows(ctx, src.Source, int(t.RowOrder[row]), 1, func(first int64, b []byte) error {
				if i := firstNonFiniteStored(b, src.DType); i >= 0 {
					return nonFiniteError(b, src.DType, i, cols, row*cols+first)
				}
				d.conv(o[first*outSize:(first+int64(len(b))/inSize)*outSize], b)
				return nil
			})
			if err != nil {
				return err
			}
		}
		if _, err := tw.WriteAt(out[:n*cols*outSize], r0*cols*outSize); err != nil {
			return err
		}
	}
	return nil
}

// packed computes a prequantized tensor's bytes (arch.Output.Packed) from
// its sources' stored bytes.
func (j *job) packed(t *Tensor) ([]byte, error) {
	rr, ok := j.model.Source.(readers.RawReader)
	if !ok {
		return nil, fmt.Errorf("a %s source cannot give the stored bytes of a prequantized tensor", j.model.Source.Format())
	}
	srcs := make([][]byte, len(t.Sources))
	for i, s := range t.Sources {
		b, err := rr.RawBytes(s.Source)
		if err != nil {
			return nil, err
		}
		srcs[i] = b
	}
	out, err := t.Packed(srcs)
	if err != nil {
		return nil, err
	}
	rs, _ := t.PackedType.RowSize(uint64(t.RowLen()))
	if want := rs * uint64(t.Elements()/t.RowLen()); uint64(len(out)) != want {
		return nil, fmt.Errorf("repacked into %d bytes, want %d for %s of shape %v", len(out), want, t.PackedType, t.Shape)
	}
	return out, nil
}

// values computes a tensor's float32 values from its sources.
func (j *job) values(ctx context.Context, t *Tensor) ([]float32, error) {
	if t.Packed != nil {
		b, err := j.packed(t)
		if err != nil {
			return nil, err
		}
		v := make([]float32, t.Elements())
		if err := quantize.Decode(t.PackedType, v, b, int(t.RowLen())); err != nil {
			return nil, err
		}
		return v, nil
	}
	if len(t.Sources) == 0 {
		if int64(len(t.Data)) != t.Elements() {
			return nil, fmt.Errorf("generated tensor has %d values for shape %v", len(t.Data), t.Shape)
		}
		return t.Data, nil
	}
	srcs := make([][]float32, len(t.Sources))
	for i, s := range t.Sources {
		n, err := readers.NumElements(s.Shape)
		if err != nil {
			return nil, err
		}
		rows, _ := readers.Rows(s.Shape)
		srcs[i] = make([]float32, n)
		if err := j.model.Source.ReadFloat32(ctx, s.Source, srcs[i], 0, int(rows)); err != nil {
			return nil, err
		}
	}
	if t.Build == nil {
		if len(srcs) != 1 {
			return nil, errors.New("several sources and no transform")
		}
		return srcs[0], nil
	}
	v, err := t.Build(srcs)
	if err != nil {
		return nil, err
	}
	if int64(len(v)) != t.Elements() {
		return nil, fmt.Errorf("transform gave %d values for shape %v", len(v), t.Shape)
	}
	return v, nil
}

// encode stores float32 values as typ.
func (j *job) encode(typ gguf.Type, v []float32, ncols int64) ([]byte, error) {
	rs, ok := typ.RowSize(uint64(ncols))
	if !ok {
		return nil, fmt.Errorf("row of %d values cannot be stored as %s", ncols, typ)
	}
	dst := make([]byte, rs*uint64(int64(len(v))/ncols))
	if err := j.encodeRows(typ, dst, v, int(ncols)); err != nil {
		return nil, err
	}
	return dst, nil
}

// encodeRows stores rows of float32 values as typ: with the job's encoder
// when it has one, else as ggml does.
func (j *job) encodeRows(typ gguf.Type, dst []byte, v []float32, ncols int) error {
	if j.encoder != nil {
		return j.encoder(typ, dst, v, ncols)
	}
	return quantize.Encode(typ, dst, v, ncols, nil)
}

// outputPath is the converter's file naming: a directory gets the naming
// convention's name, a file name has {ftype} filled in.
func (j *job) outputPath(meta *metadata.Metadata) (string, error) {
	out := j.opts.OutFile
	if out == "" {
		out = j.model.Root
	}
	outputType := j.outputTypeName()
	if strings.HasSuffix(out, string(os.PathSeparator)) && !j.opts.DryRun {
		// "out/" names a folder, made if it does not exist yet.
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", fmt.Errorf("convert: --outfile: %w", err)
		}
	}
	if st, err := os.Stat(out); (err == nil && st.IsDir()) || strings.HasSuffix(out, string(os.PathSeparator)) {
		var name string
		switch {
		case j.opts.VocabOnly:
			name = metadata.NamingConvention(meta.Name, meta.Basename, meta.Finetune, meta.Version, "", "", "vocab")
		case j.opts.MMProj:
			name = "mmproj-" + metadata.NamingConvention(meta.Name, meta.Basename, meta.Finetune, meta.Version, "", outputType, "")
		default:
			name = metadata.NamingConvention(meta.Name, meta.Basename, meta.Finetune, meta.Version, meta.SizeLabel, outputType, "")
		}
		return filepath.Join(out, name+".gguf"), nil
	}
	return filepath.Join(filepath.Dir(out), metadata.FillTemplatedFilename(filepath.Base(out), outputType)), nil
}

// outputTypeName is the encoding part of file names: the file type's name
// after "MOSTLY_"/"ALL_" (Q8_0, BF16, F32), or the preset's name.
func (j *job) outputTypeName() string {
	switch {
	case j.target == nil:
		return j.ft.String()
	case j.target.Preset != nil:
		return strings.ToUpper(j.target.Preset.Name)
	}
	return j.target.Type.String()
}
