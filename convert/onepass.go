package convert

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/requantize"
)

// runQuantized writes a llama-quantize preset or ggml type in one pass: the
// conversion presents itself to requantize as the F32 GGUF it would have
// written (same metadata, same tensors, computed on demand from the
// source), so the output is, by construction, what `ggufkit quantize` makes
// of the F32 conversion — same mix rules, same tensor order, same bytes —
// without the intermediate file.
func (j *job) runQuantized(ctx context.Context, kvs []gguf.KV, tensors []Tensor, out string) (*Report, error) {
	m := &f32Model{ctx: ctx, j: j, kvs: kvs, byName: map[string]*Tensor{}}
	var off uint64
	keep := &mix.Options{Copy: j.target.Copy, LeaveOutput: j.opts.Quantize.LeaveOutput}
	for i := range tensors {
		t := &tensors[i]
		typ := gguf.F32
		size := uint64(t.Elements()) * 4
		switch {
		case t.Packed != nil:
			// A prequantized tensor is in the F32 conversion as it is
			// stored: requantize sees a quantized tensor, as
			// llama-quantize does in the converter's output.
			typ = t.Type
			rs, _ := typ.RowSize(uint64(t.RowLen()))
			size = rs * uint64(t.Elements()/t.RowLen())
		case t.Type != gguf.F32:
			// A type the model forces whatever the outtype
			// (DeepseekV4Model's Q8_0 and BF16): llama-quantize reads the
			// tensor in that type from the F16 conversion too. Any other
			// type is a planning bug.
			if ft, _ := tensorType(j.plugin, &t.Output, gguf.FileTypeF16); ft != t.Type {
				return nil, fmt.Errorf("convert: tensor %q planned as %s in an F32 conversion", t.Name, t.Type)
			}
			typ = t.Type
			rs, _ := typ.RowSize(uint64(t.RowLen()))
			size = rs * uint64(t.Elements()/t.RowLen())
		case j.plugin != nil && !mix.AllowsQuantization(j.plugin.Arch(), t.Name, t.GGUFShape(), keep) && sourceDType(t) != readers.F32:
			// llama-quantize keeps such a tensor in the type of the file
			// it reads, and the reference is its run on the F16
			// conversion (the F32 one for a float32 checkpoint): present
			// the tensor in the type the F16 conversion gives it (F16 for
			// a 2-D weight the converter does not keep in F32, e.g.
			// Gemma 3n / Gemma 4's per_layer_model_proj).
			if ft, _ := tensorType(j.plugin, &t.Output, gguf.FileTypeF16); ft == gguf.F16 {
				typ = gguf.F16
				size = uint64(t.Elements()) * uint64(typ.TypeSize())
			}
		}
		m.byName[t.Name] = t
		m.tensors = append(m.tensors, requantize.InputTensor{
			TensorInfo: gguf.TensorInfo{Name: t.Name, Type: typ, Shape: t.GGUFShape(), Offset: off},
			Size:       size,
		})
		next, ok := gguf.AlignUp(off+size, 32)
		if !ok {
			return nil, fmt.Errorf("convert: model too large")
		}
		off = next
	}
	opts := j.opts.Quantize
	opts.Target = *j.target
	opts.Workers = j.opts.Threads
	opts.Overwrite = j.opts.Overwrite
	// Plan first (a dry run): the split rule and the progress total need
	// each tensor's quantized size, in the output's order.
	plan := opts
	plan.DryRun, plan.OnTensor = true, nil
	var names []string
	var sizes []uint64
	var total int64
	plan.OnTensor = func(r requantize.TensorReport) {
		names, sizes = append(names, r.Name), append(sizes, r.NewSize)
		total += int64(r.NewSize)
	}
	if _, err := requantize.RunModel(ctx, m, j.model.Root, out, plan); err != nil {
		return nil, err
	}
	shardOf, nShards := splitShards(sizes, j.opts.SplitMaxTensors, j.opts.SplitMaxSize, j.opts.NoTensorFirstSplit)
	if err := checkShards(nShards); err != nil {
		return nil, err
	}
	if nShards > 1 {
		// Present the conversion as a split F32 model whose shards are the
		// output's, in the planned order: requantize keeps the split.
		pos := map[string]int{}
		for i, n := range names {
			pos[n] = i
		}
		for i := range m.tensors {
			k := pos[m.tensors[i].Name]
			m.tensors[i].Shard, m.tensors[i].Offset = shardOf[k], uint64(k)
		}
		m.shards = nShards
		opts.KeepSplit = true
	}
	if j.opts.OnStart != nil {
		j.opts.OnStart(len(tensors), total)
	}
	opts.DryRun = j.opts.DryRun
	user := opts.OnTensor
	rep := &Report{Tensors: len(tensors)}
	opts.OnTensor = func(r requantize.TensorReport) {
		tr := TensorReport{Index: r.Index, Count: r.Count, Name: r.Name, Shape: r.Shape, Type: r.NewType, Bytes: r.NewSize}
		if t := m.byName[r.Name]; t != nil {
			tr.SourceDType = sourceDType(t)
		}
		rep.Plan = append(rep.Plan, tr)
		if user != nil {
			user(r)
		}
		if j.opts.OnTensor != nil {
			j.opts.OnTensor(tr)
		}
	}
	qrep, err := requantize.RunModel(ctx, m, j.model.Root, out, opts)
	if err != nil {
		return nil, err
	}
	rep.Outputs = qrep.Outputs
	if len(rep.Outputs) == 0 { // a dry run: the names requantize would use
		rep.Outputs = []string{out}
		if nShards > 1 {
			rep.Outputs = rep.Outputs[:0]
			for i := range nShards {
				rep.Outputs = append(rep.Outputs, fmt.Sprintf("%s-%05d-of-%05d.gguf", strings.TrimSuffix(out, ".gguf"), i+1, nShards))
			}
		}
	}
	rep.Output = rep.Outputs[0]
	if p := j.target.Preset; p != nil {
		rep.FileType = p.FileType
	} else {
		rep.FileType = requantize.FileTypeFor(j.target.Type)
	}
	for _, r := range rep.Plan {
		rep.Bytes += int64(r.Bytes)
	}
	return rep, nil
}

// f32Model is a conversion seen as its F32 GGUF (requantize.RowModel):
// requantize reads its F32 tensors a slab of rows at a time.
type f32Model struct {
	ctx     context.Context
	j       *job
	kvs     []gguf.KV
	tensors []requantize.InputTensor
	byName  map[string]*Tensor
	// shards is the number of output shards (0 or 1: not split).
	shards int

	// kept is the last tensor computed whole (a transform read by rows
	// other than a stack or a reordering): requantize reads a tensor's
	// slabs one after the other, then moves on.
	mu   sync.Mutex
	kept keptTensor
}

func (m *f32Model) KVs() []gguf.KV { return m.kvs }

func (m *f32Model) KV(key string) (gguf.Value, bool) {
	for _, kv := range m.kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}

func (m *f32Model) Alignment() int                       { return 32 }
func (m *f32Model) Shards() int                          { return max(m.shards, 1) }
func (m *f32Model) TensorList() []requantize.InputTensor { return m.tensors }

// ReadRows computes rows of an F32 tensor from the source, refusing a
// non-finite value as the F32 conversion's encoder does (at its row and
// column in the tensor).
func (m *f32Model) ReadRows(t *requantize.InputTensor, row0 int, dst []float32) error {
	ct, ok := m.byName[t.Name]
	if !ok {
		return fmt.Errorf("no tensor %q", t.Name)
	}
	cols := ct.RowLen()
	if err := m.j.readRows(m.ctx, ct, row0, int(int64(len(dst))/cols), dst, m.whole); err != nil {
		return err
	}
	return quantize.CheckFinite(dst, int(cols), row0)
}

// whole returns the computed values of a transformed tensor, computing
// them unless they are the ones kept.
func (m *f32Model) whole(ctx context.Context, t *Tensor) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept.name != t.Name || m.kept.values == nil {
		m.kept = keptTensor{} // free the last one before computing the next
		v, err := m.j.values(ctx, t)
		if err != nil {
			return nil, err
		}
		m.kept = keptTensor{t.Name, v}
	}
	return m.kept.values, nil
}

// Data computes the tensor from the source and returns it in its type: a
// prequantized tensor, or one the model forces into a type other than F32.
func (m *f32Model) Data(t *requantize.InputTensor) ([]byte, error) {
	ct, ok := m.byName[t.Name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", t.Name)
	}
	if ct.Packed != nil {
		return m.j.packed(ct)
	}
	v, err := m.j.values(m.ctx, ct)
	if err != nil {
		return nil, err
	}
	// F32, or the type the model forces (Q8_0, BF16): whole rows.
	rs, _ := t.Type.RowSize(uint64(ct.RowLen()))
	buf := make([]byte, rs*(uint64(len(v))/uint64(ct.RowLen())))
	// By rows, so that a non-finite value is reported at its row and column.
	if err := quantize.Encode(t.Type, buf, v, int(ct.RowLen()), nil); err != nil {
		return nil, err
	}
	return buf, nil
}
