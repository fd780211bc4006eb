package convert

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ggufkit/ggufkit/convert/metadata"
	"github.com/ggufkit/ggufkit/gguf"
)

// Planned is a conversion planned but not written: the F32 GGUF that
// `--outtype f32` would produce, its metadata and tensor list known, each
// tensor's values computed from the source on demand through the
// architecture plugin's transforms. The verifier uses it as the reference a
// GGUF is compared with: the same plan as the converter's, without writing
// a model-sized file.
type Planned struct {
	j       *job
	kvs     []gguf.KV
	tensors []Tensor
	byName  map[string]*Tensor

	mu   sync.Mutex
	kept []keptTensor // transformed tensors computed whole, oldest first
}

// keptTensor is a transformed tensor's computed values.
type keptTensor struct {
	name   string
	values []float32
}

// PlannedTensor is one tensor of a Planned conversion.
type PlannedTensor struct {
	Name string
	// Shape in ggml order (ne0, the row length, first).
	Shape []uint64
}

// Plan opens the model at path (as Run does) and plans its F32
// conversion. opts.OutType is ignored; ModelName, MetadataFile and
// TokenizerPre apply. Close releases the source.
func Plan(ctx context.Context, path string, opts Options) (*Planned, error) {
	opts.OutType = "f32"
	opts.VocabOnly = false // a plan always has its tensors
	j, err := open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	p := &Planned{j: j, byName: map[string]*Tensor{}}
	if j.legacy != nil {
		p.tensors, p.kvs, _, err = j.legacyPlan()
	} else if p.tensors, err = planTensors(j.plugin, j.model.Source, j.model.Root, j.ft); err != nil {
		err = fmt.Errorf("convert: %s: %w", j.model.Root, err)
	} else {
		var meta *metadata.Metadata
		if meta, err = j.metadata(p.tensors); err == nil {
			p.kvs, err = j.kvs(meta.KVs())
		}
	}
	if err != nil {
		j.model.Close()
		return nil, err
	}
	for i := range p.tensors {
		p.byName[p.tensors[i].Name] = &p.tensors[i]
	}
	return p, nil
}

// KVs is the metadata the F32 conversion would write, in its order.
func (p *Planned) KVs() []gguf.KV { return p.kvs }

// Tensors lists the output tensors in the converter's order.
func (p *Planned) Tensors() []PlannedTensor {
	out := make([]PlannedTensor, len(p.tensors))
	for i := range p.tensors {
		out[i] = PlannedTensor{Name: p.tensors[i].Name, Shape: p.tensors[i].GGUFShape()}
	}
	return out
}

// ReadFloat32 computes the named tensor from the source into dst, whose
// length must be the tensor's element count. It is safe for concurrent use.
func (p *Planned) ReadFloat32(ctx context.Context, name string, dst []float32) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("convert: %s: no tensor %q in the plan", p.j.model.Root, name)
	}
	return p.ReadRows(ctx, name, 0, int(t.Elements()/t.RowLen()), dst)
}

// ReadRows computes rows [row0, row0+nrows) of the named tensor (a row is
// its last PyTorch dimension, ggml's ne0) into dst, whose length must be
// nrows × the row length. A source unchanged, a stack of experts and a
// reordering of a source's rows are read by rows; any other transformed
// tensor is computed whole and kept while its rows are read (the last few
// such tensors are kept).
// It is safe for concurrent use.
func (p *Planned) ReadRows(ctx context.Context, name string, row0, nrows int, dst []float32) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("convert: %s: no tensor %q in the plan", p.j.model.Root, name)
	}
	cols := t.RowLen()
	rows := t.Elements() / max(cols, 1)
	if row0 < 0 || nrows < 0 || int64(row0) > rows-int64(nrows) || int64(len(dst)) != int64(nrows)*cols {
		return fmt.Errorf("convert: tensor %q: rows [%d, %d) into %d values (%d rows of %d)", name, row0, row0+nrows, len(dst), rows, cols)
	}
	if err := p.j.readRows(ctx, t, row0, nrows, dst, p.whole); err != nil {
		return fmt.Errorf("convert: tensor %q: %w", name, err)
	}
	return nil
}

// readRows computes rows [row0, row0+nrows) of t into dst (nrows × the row
// length values): a source unchanged, a stack of experts or a reordering
// of a source's rows straight from the source rows, without the whole
// tensor; any other transform from whole(t), the computed tensor.
func (j *job) readRows(ctx context.Context, t *Tensor, row0, nrows int, dst []float32, whole func(context.Context, *Tensor) ([]float32, error)) error {
	cols := t.RowLen()
	if t.Build == nil && len(t.Sources) == 1 {
		// A source unchanged: straight into dst, no second buffer.
		return j.model.Source.ReadFloat32(ctx, t.Sources[0].Source, dst, row0, nrows)
	}
	if srcRows, ok := stackedRows(t, cols); ok {
		// A stack of experts: each requested row straight from its source.
		r, first := int64(row0), int64(0)
		for i, n := range srcRows {
			end := int64(row0 + nrows)
			if r < end && r < first+n {
				k := min(end, first+n) - r
				d := dst[(r-int64(row0))*cols : (r-int64(row0)+k)*cols]
				if err := j.model.Source.ReadFloat32(ctx, t.Sources[i].Source, d, int(r-first), int(k)); err != nil {
					return err
				}
				r += k
			}
			first += n
		}
		return nil
	}
	if t.RowOrder != nil && len(t.Sources) == 1 && len(t.Shape) == 2 && int64(len(t.RowOrder)) == t.Shape[0] {
		return j.readReordered(ctx, t, row0, nrows, dst)
	}
	v, err := whole(ctx, t)
	if err != nil {
		return err
	}
	copy(dst, v[int64(row0)*cols:int64(row0+nrows)*cols])
	return nil
}

// readReordered reads rows [row0, row0+nrows) of a tensor whose rows are
// its source's in the order t.RowOrder (the Q/K permutation, which moves
// rows within a head): the span of source rows they come from is read in
// one piece and gathered when it is no more than twice the rows asked
// for, else each row is read on its own.
func (j *job) readReordered(ctx context.Context, t *Tensor, row0, nrows int, dst []float32) error {
	cols := t.RowLen()
	order := t.RowOrder[row0 : row0+nrows]
	if len(order) == 0 {
		return nil
	}
	lo, hi := slices.Min(order), slices.Max(order)
	src := t.Sources[0].Source
	if span := hi - lo + 1; span <= 2*int64(nrows) {
		buf := make([]float32, span*cols)
		if err := j.model.Source.ReadFloat32(ctx, src, buf, int(lo), int(span)); err != nil {
			return err
		}
		for i, r := range order {
			copy(dst[int64(i)*cols:int64(i+1)*cols], buf[(r-lo)*cols:(r-lo+1)*cols])
		}
		return nil
	}
	for i, r := range order {
		if err := j.model.Source.ReadFloat32(ctx, src, dst[int64(i)*cols:int64(i+1)*cols], int(r), 1); err != nil {
			return err
		}
	}
	return nil
}

// keptTensors bounds the transformed tensors Planned keeps computed.
const keptTensors = 4

// whole returns the computed values of a transformed tensor, from the
// cache when it is there.
func (p *Planned) whole(ctx context.Context, t *Tensor) ([]float32, error) {
	p.mu.Lock()
	for _, k := range p.kept {
		if k.name == t.Name {
			p.mu.Unlock()
			return k.values, nil
		}
	}
	p.mu.Unlock()
	v, err := p.j.values(ctx, t)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.kept) == keptTensors {
		p.kept = p.kept[1:]
	}
	p.kept = append(p.kept, keptTensor{t.Name, v})
	return v, nil
}

// Close releases the source checkpoint.
func (p *Planned) Close() error { return p.j.model.Close() }
