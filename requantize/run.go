package requantize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/writer"
)

// ErrRequantize is returned when a quantized input tensor would be
// quantized again without Options.AllowRequantize.
var ErrRequantize = errors.New("requantize: requantizing a quantized tensor is disabled (use allow-requantize)")

// ErrNeedImatrix is returned when a tensor's target type needs importance
// weights and none were given for it.
var ErrNeedImatrix = errors.New("requantize: this quantization requires an importance matrix")

// DefaultSlabBytes is Options.SlabBytes' default: with a slab's source
// pages given back once it is decoded, a run's memory is a slab or two and
// the workers' chunk buffers, whatever the tensors' sizes; each slab is
// still a hundred or more of the Quantizer's chunks, so the workers wait
// for one another at its end for a negligible share of the time.
const DefaultSlabBytes = 16 << 20

// plannedTensor is one output tensor: its source, new name and decision.
type plannedTensor struct {
	src     *InputTensor
	name    string // after layer pruning
	imName  string // the name to look up in the imatrix (before pruning)
	shape   []uint64
	newType gguf.Type
	dec     mix.Decision
	outFile int
}

// Run quantizes the GGUF at inPath (a gguf-split set is read as one model)
// into outPath. With KeepSplit, outPath is a prefix and the shards are named
// PREFIX-%05d-of-%05d.gguf.
func Run(ctx context.Context, inPath, outPath string, opts Options) (*Report, error) {
	in, err := OpenInput(inPath)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if !opts.DryRun {
		if same, _ := sameFile(inPath, outPath); same {
			return nil, fmt.Errorf("requantize: input and output are the same file: %s", inPath)
		}
	}
	return RunModel(ctx, in, inPath, outPath, opts)
}

// Model is what a run reads: a GGUF or gguf-split set (Input), or any
// other source that presents itself as one, such as a conversion in
// progress showing its F32 output (convert's one-pass quantization).
type Model interface {
	// KVs are the metadata pairs in file order; KV looks one up.
	KVs() []gguf.KV
	KV(key string) (gguf.Value, bool)
	// Alignment is the data alignment of the output.
	Alignment() int
	// Shards is the number of input files (for KeepSplit).
	Shards() int
	// TensorList lists the tensors with their shard and offset.
	TensorList() []InputTensor
	// Data returns a tensor's bytes in its type.
	Data(t *InputTensor) ([]byte, error)
}

// RowModel is a Model that computes its F32 tensors a run of rows at a
// time (convert's one-pass quantization: a conversion in progress). A run
// reads such a tensor through ReadRows, a slab at a time, never whole.
type RowModel interface {
	Model
	// ReadRows computes rows [row0, row0+len(dst)/ne0) of the F32 tensor t
	// into dst. Every value must be finite (what Validate checks of F32
	// data): a non-finite one is an error naming its row and column.
	ReadRows(t *InputTensor, row0 int, dst []float32) error
}

// releaser is a Model that can give back the memory of bytes [from, to) of
// a tensor it has served (Input releases the mapped pages).
type releaser interface {
	Release(t *InputTensor, from, to int64)
}

// RunModel is Run on an opened model; name identifies it in errors.
func RunModel(ctx context.Context, in Model, name, outPath string, opts Options) (*Report, error) {
	inPath := name
	model, err := mix.ModelFromKVs(in.KV)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", inPath, err)
	}
	ft, defType, err := targetTypes(in, opts)
	if err != nil {
		return nil, err
	}
	plan, newBlockCount, err := planTensors(in, model, ft, defType, opts)
	if err != nil {
		return nil, err
	}
	report := &Report{}
	for i := range plan {
		p := &plan[i]
		report.Elements += elements(p.shape)
		if p.dec.Fallback {
			report.Fallbacks++
		}
	}
	if err := checkImatrixNeeds(plan, opts, report); err != nil {
		return nil, err
	}
	kvs := outputKVs(in, ft, opts, newBlockCount)
	nOut := 1
	if opts.KeepSplit {
		nOut = in.Shards()
	}
	if opts.DryRun {
		for i := range plan {
			p := &plan[i]
			newSize := p.src.Size
			if p.newType != p.src.Type {
				rs, _ := p.newType.RowSize(p.shape[0])
				newSize = rs * (elements(p.shape) / p.shape[0])
			}
			report.add(p, i, len(plan), newSize, "", opts.OnTensor)
		}
		return report, nil
	}
	outs := make([]*writer.Writer, nOut)
	paths := make([]string, nOut)
	abortAll := func() {
		for _, w := range outs {
			if w != nil {
				w.Abort()
			}
		}
	}
	for s := range nOut {
		path := outPath
		if opts.KeepSplit {
			path = fmt.Sprintf("%s-%05d-of-%05d.gguf", strings.TrimSuffix(outPath, ".gguf"), s+1, nOut)
		}
		w, err := writer.Create(ctx, path, writer.Options{Overwrite: opts.Overwrite, Alignment: uint32(in.Alignment())})
		if err != nil {
			abortAll()
			return nil, err
		}
		outs[s], paths[s] = w, path
		if s == 0 {
			for _, kv := range kvs {
				w.SetKV(kv.Key, kv.Value)
			}
		}
		if nOut > 1 {
			w.SetKV(gguf.KeySplitNo, gguf.Uint16(uint16(s)))
			w.SetKV(gguf.KeySplitCount, gguf.Uint16(uint16(nOut)))
			w.SetKV(gguf.KeySplitTensorsCount, gguf.Int32(int32(len(plan))))
		}
		report.Outputs = append(report.Outputs, path)
	}
	for i := range plan {
		p := &plan[i]
		if err := outs[p.outFile].AddTensor(p.name, p.newType, p.shape); err != nil {
			abortAll()
			return nil, err
		}
	}
	for _, w := range outs {
		if err := w.Start(); err != nil {
			abortAll()
			return nil, err
		}
	}
	q := &quantize.Quantizer{Workers: opts.Workers, Validate: true}
	var slab []float32 // reused from tensor to tensor
	for i := range plan {
		p := &plan[i]
		newSize, warning, err := writeTensor(ctx, in, outs[p.outFile], q, p, opts, &slab)
		if err != nil {
			abortAll()
			return nil, fmt.Errorf("%s: tensor %q: %w", inPath, p.src.Name, err)
		}
		if r, ok := in.(releaser); ok {
			r.Release(p.src, 0, int64(p.src.Size))
		}
		report.add(p, i, len(plan), newSize, warning, opts.OnTensor)
	}
	for s, w := range outs {
		if err := w.Close(); err != nil {
			abortAll()
			// The shards published already would be a partial model.
			for _, p := range paths[:s] {
				os.Remove(p)
			}
			return nil, err
		}
	}
	return report, nil
}

func (r *Report) add(p *plannedTensor, i, n int, newSize uint64, warning string, cb func(TensorReport)) {
	tr := TensorReport{Index: i, Count: n, Name: p.name, Shape: p.shape, OldType: p.src.Type, NewType: p.newType,
		OldSize: p.src.Size, NewSize: newSize, Fallback: p.dec.Fallback, Warning: warning}
	r.Tensors = append(r.Tensors, tr)
	r.SizeBefore += p.src.Size
	r.SizeAfter += newSize
	if cb != nil {
		cb(tr)
	}
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

func elements(shape []uint64) uint64 {
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// targetTypes gives the file type to record and the default tensor type.
func targetTypes(in Model, opts Options) (gguf.FileType, gguf.Type, error) {
	t := opts.Target
	switch {
	case t.Copy:
		// COPY records the input's file type (guessed when absent).
		if v, ok := in.KV(gguf.KeyGeneralFileType); ok {
			if n, ok := v.Int(); ok {
				return gguf.FileType(n), gguf.F32, nil
			}
		}
		return guessFileType(in.TensorList()), gguf.F32, nil
	case t.Preset != nil:
		def, ok := mix.DefaultType(t.Preset.FileType)
		if !ok {
			return 0, 0, fmt.Errorf("requantize: invalid output file type %s", t.Preset.Name)
		}
		return t.Preset.FileType, def, nil
	}
	if !quantize.CanEncode(t.Type) && t.Type != gguf.F32 {
		return 0, 0, fmt.Errorf("requantize: cannot quantize to %s", t.Type)
	}
	return FileTypeFor(t.Type), t.Type, nil
}

var blockRe = regexp.MustCompile(`blk\.(\d+)\.`)

// planTensors applies layer pruning, orders the tensors as llama-quantize
// does and decides each one's type. It returns the new block count when
// layers were pruned (else -1).
func planTensors(in Model, model mix.Model, ft gguf.FileType, def gguf.Type, opts Options) ([]plannedTensor, int, error) {
	list := in.TensorList()
	order := make([]*InputTensor, len(list))
	for i := range list {
		order[i] = &list[i]
	}
	// The loader's weights map is ordered by layer then name.
	sort.SliceStable(order, func(i, j int) bool { return mix.Less(order[i].Name, order[j].Name) })

	mapped := map[int]string{}
	nextID := 0
	var plan []plannedTensor
	for _, t := range order {
		name := t.Name
		if len(opts.PruneLayers) > 0 {
			var keep bool
			name, keep = remapLayer(name, opts.PruneLayers, mapped, &nextID)
			if !keep {
				continue
			}
		}
		plan = append(plan, plannedTensor{src: t, name: name, shape: trimShape(t.Shape), outFile: 0})
	}
	for i := range plan {
		plan[i].imName = plan[i].src.Name
	}
	if opts.KeepSplit {
		sort.SliceStable(plan, func(i, j int) bool {
			a, b := plan[i].src, plan[j].src
			if a.Shard != b.Shard {
				return a.Shard < b.Shard
			}
			return a.Offset < b.Offset
		})
		for i := range plan {
			plan[i].outFile = plan[i].src.Shard
		}
	}
	mopts := &mix.Options{
		FileType: ft, Pure: opts.Pure || opts.Target.Preset == nil, Copy: opts.Target.Copy, LeaveOutput: opts.LeaveOutput,
		OutputType: opts.OutputType, TokenEmbdType: opts.TokenEmbdType, Overrides: opts.TensorTypes,
		HasImatrix: opts.IMatrix != nil,
	}
	mts := make([]mix.Tensor, len(plan))
	for i, p := range plan {
		mts[i] = mix.Tensor{Name: p.name, Type: p.src.Type, Shape: p.shape}
	}
	ds, err := mix.Plan(model, mts, def, mopts)
	if err != nil {
		return nil, 0, err
	}
	for i := range plan {
		plan[i].dec = ds[i]
		plan[i].newType = ds[i].Type
	}
	newBlockCount := -1
	if len(opts.PruneLayers) > 0 {
		newBlockCount = nextID
	}
	return plan, newBlockCount, nil
}

// remapLayer is llama-quant.cpp's remap_layer: pruned blocks disappear,
// later blocks are renumbered to close the gap.
func remapLayer(name string, prune []int, mapped map[int]string, next *int) (string, bool) {
	m := blockRe.FindStringSubmatchIndex(name)
	if m == nil {
		return name, true
	}
	blk, _ := strconv.Atoi(name[m[2]:m[3]])
	if _, ok := mapped[blk]; !ok {
		switch {
		case contains(prune, blk):
			mapped[blk] = ""
		case blk < prune[0]:
			mapped[blk] = strconv.Itoa(blk)
			*next = blk + 1
		default:
			mapped[blk] = strconv.Itoa(*next)
			*next++
		}
	}
	if mapped[blk] == "" {
		return "", false
	}
	return name[:m[2]] + mapped[blk] + name[m[3]:], true
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// trimShape drops trailing 1s (ggml_n_dims), as gguf.cpp writes tensor infos.
func trimShape(shape []uint64) []uint64 {
	n := len(shape)
	for n > 1 && shape[n-1] == 1 {
		n--
	}
	return append([]uint64(nil), shape[:n]...)
}

// checkImatrixNeeds refuses, before anything is written, a run whose target
// types need importance weights that were not given (a dry run only notes it).
func checkImatrixNeeds(plan []plannedTensor, opts Options, r *Report) error {
	if opts.IMatrix != nil {
		return nil
	}
	for i := range plan {
		p := &plan[i]
		needs := p.dec.Quantizable && p.dec.RequiresImatrix
		if opts.Target.Preset == nil {
			// A plain ggml type needs weights only where ggml itself does.
			needs = p.dec.Quantizable && quantize.RequiresImatrix(p.newType)
		}
		if needs && p.newType != p.src.Type {
			if opts.DryRun {
				r.NeedsImatrix = true
				continue
			}
			return fmt.Errorf("%w: tensor %q would be %s", ErrNeedImatrix, p.name, p.newType)
		}
	}
	return nil
}

// outputKVs builds the output metadata as llama-quantize does: the input's
// pairs, general.quantization_version and general.file_type re-set (moved to
// the end), split keys dropped, then the overrides and the imatrix record,
// then the block count after pruning.
func outputKVs(in Model, ft gguf.FileType, opts Options, blockCount int) []gguf.KV {
	var kvs kvList
	for _, kv := range in.KVs() {
		kvs.set(kv.Key, kv.Value)
	}
	kvs.set(gguf.KeyGeneralQuantizationVersion, gguf.Uint32(gguf.QuantizationVersion))
	kvs.set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	kvs.remove(gguf.KeySplitNo)
	kvs.remove(gguf.KeySplitCount)
	kvs.remove(gguf.KeySplitTensorsCount)
	for _, o := range opts.KVOverrides {
		kvs.set(o.Key, o.Value)
	}
	if m := opts.IMatrix; m != nil && len(m.Weights) > 0 {
		kvs.set(gguf.KeyQuantizeIMatrixFile, gguf.String(clip127(opts.IMatrixFile)))
		if len(m.Datasets) > 0 {
			kvs.set(gguf.KeyQuantizeIMatrixDataset, gguf.String(clip127(m.Datasets[0])))
		}
		kvs.set(gguf.KeyQuantizeIMatrixEntriesCount, gguf.Uint32(uint32(len(m.Weights))))
		if m.ChunkCount > 0 {
			kvs.set(gguf.KeyQuantizeIMatrixChunksCount, gguf.Uint32(uint32(m.ChunkCount)))
		}
	}
	if blockCount >= 0 {
		arch, _ := in.KV(gguf.KeyGeneralArchitecture)
		name, _ := arch.Str()
		kvs.set(gguf.ArchKey(name, gguf.SuffixBlockCount), gguf.Uint32(uint32(blockCount)))
	}
	return kvs
}

// clip127 keeps the first 127 bytes, as llama-quantize copies strings into
// a 128-byte buffer.
func clip127(s string) string {
	if len(s) > 127 {
		return s[:127]
	}
	return s
}

// kvList is an ordered metadata list whose set removes and appends, like
// gguf.cpp's gguf_set_* functions.
type kvList []gguf.KV

func (l *kvList) remove(key string) {
	for i, kv := range *l {
		if kv.Key == key {
			*l = append((*l)[:i], (*l)[i+1:]...)
			return
		}
	}
}

func (l *kvList) set(key string, v gguf.Value) {
	l.remove(key)
	*l = append(*l, gguf.KV{Key: key, Value: v})
}

// writeTensor copies or converts one tensor into its writer, a slab of
// rows at a time (*slab is the float32 buffer, kept for the next tensor),
// and returns the bytes written and any warning. ggml quantizes row by row
// (an imatrix applies per column), so slabs give the bytes the whole
// tensor would.
func writeTensor(ctx context.Context, in Model, w *writer.Writer, q *quantize.Quantizer, p *plannedTensor, opts Options, slab *[]float32) (uint64, string, error) {
	ncols := int(p.shape[0])
	rows := int(elements(p.shape) / p.shape[0])
	srcRow, _ := p.src.Type.RowSize(uint64(ncols))
	dstRow, _ := p.newType.RowSize(uint64(ncols))
	slabBytes := opts.SlabBytes
	if slabBytes <= 0 {
		slabBytes = DefaultSlabBytes
	}
	slabRows := max(1, min(rows, slabBytes/4/ncols))
	rel, _ := in.(releaser)
	release := func(from, to int) {
		if rel != nil {
			rel.Release(p.src, int64(from), int64(to))
		}
	}
	piece := slabRows * int(srcRow) // a slab's source bytes
	rm, computed := in.(RowModel)
	computed = computed && p.src.Type == gguf.F32
	var src []byte
	if !computed {
		var err error
		if src, err = in.Data(p.src); err != nil {
			return 0, "", err
		}
		if piece <= 0 {
			piece = len(src) // no whole rows of this type: in one piece
		}
		// The model loader validates every tensor it reads (check_tensors).
		if err := validate(p.src.Type, src, piece, release); err != nil && !errors.Is(err, quantize.ErrUnsupported) {
			return 0, "", fmt.Errorf("input data: %w", err)
		}
	}
	tw, err := w.TensorWriterAt(p.name)
	if err != nil {
		return 0, "", err
	}
	var weights []float32
	var warning string
	if p.newType == p.src.Type && !computed {
		for from := 0; from < len(src); from += piece {
			to := min(len(src), from+piece)
			if _, err := tw.WriteAt(src[from:to], int64(from)); err != nil {
				return 0, "", err
			}
			release(from, to)
		}
		return uint64(len(src)), "", nil
	}
	if p.newType != p.src.Type {
		if weights, warning, err = imatrixFor(p, opts); err != nil {
			return 0, "", err
		}
		if weights == nil && p.dec.RequiresImatrix && opts.Target.Preset != nil {
			return 0, "", fmt.Errorf("%w: no importance weights for this tensor (%s)", ErrNeedImatrix, p.newType)
		}
		if p.src.Type.Quantized() && !opts.AllowRequantize {
			return 0, "", fmt.Errorf("%w: from %s", ErrRequantize, p.src.Type)
		}
		switch p.src.Type {
		case gguf.F32, gguf.F16, gguf.BF16:
		default:
			if !p.src.Type.Quantized() || !quantize.CanDecode(p.src.Type) {
				return 0, "", fmt.Errorf("cannot convert a %s tensor to %s", p.src.Type, p.newType)
			}
		}
	}
	rowsPerExpert := rows
	if len(p.shape) > 1 {
		rowsPerExpert = int(p.shape[1])
	}
	if len(*slab) < slabRows*ncols {
		*slab = make([]float32, slabRows*ncols)
	}
	for r0 := 0; r0 < rows; {
		// A slab never crosses an expert: each expert has its own weights.
		n := min(slabRows, rows-r0, rowsPerExpert-r0%rowsPerExpert)
		f32 := (*slab)[:n*ncols]
		if computed {
			if err := rm.ReadRows(p.src, r0, f32); err != nil {
				return 0, "", err
			}
		} else {
			from, to := r0*int(srcRow), (r0+n)*int(srcRow)
			if err := q.Decode(ctx, p.src.Type, f32, src[from:to], ncols); err != nil {
				return 0, "", err
			}
			release(from, to)
		}
		var im []float32
		if weights != nil {
			e := r0 / rowsPerExpert
			im = weights[e*ncols : (e+1)*ncols]
		}
		if err := q.EncodeTo(ctx, tw, int64(r0)*int64(dstRow), p.newType, f32, ncols, im); err != nil {
			return 0, "", err
		}
		r0 += n
	}
	return uint64(rows) * dstRow, warning, nil
}

// validate is Validate of a tensor's bytes, checked a piece (whole rows,
// piece > 0 bytes) at a time and each piece released once checked, so that
// the check does not bring a whole mapped tensor into memory. When a piece
// fails, the whole tensor is checked again for ggml's message, whose block
// numbers (and BF16's counts) are the whole tensor's.
func validate(t gguf.Type, src []byte, piece int, release func(from, to int)) error {
	for from := 0; from < len(src); from += piece {
		to := min(len(src), from+piece)
		err := quantize.Validate(t, src[from:to])
		release(from, to)
		if err != nil {
			return quantize.Validate(t, src)
		}
	}
	return nil
}

// imatrixFor finds the tensor's importance weights: ne0 × experts values,
// llama-quantize's size check; token_embd with the wrong size goes without.
func imatrixFor(p *plannedTensor, opts Options) ([]float32, string, error) {
	if opts.IMatrix == nil {
		return nil, "", nil
	}
	w, ok := opts.IMatrix.Weights[p.imName]
	if !ok {
		return nil, fmt.Sprintf("did not find weights for %s", p.name), nil
	}
	experts := uint64(1)
	if len(p.shape) > 2 {
		experts = p.shape[2]
	}
	if uint64(len(w)) != p.shape[0]*experts {
		msg := fmt.Sprintf("imatrix size %d is different from tensor size %d for %s", len(w), p.shape[0]*experts, p.name)
		if p.name == "token_embd.weight" || p.name == "per_layer_token_embd.weight" {
			return nil, msg, nil
		}
		return nil, "", errors.New(msg)
	}
	return w, "", nil
}
