package convert

import (
	"context"
	"fmt"
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
// nrows × the row length. A tensor that is a source unchanged is read by
// rows; a transformed one (permuted, stacked, generated) is computed whole
// and kept while its rows are read (the last few such tensors are kept).
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
	if t.Build == nil && len(t.Sources) == 1 {
		// A source unchanged: straight into dst, no second buffer.
		if err := p.j.model.Source.ReadFloat32(ctx, t.Sources[0].Source, dst, row0, nrows); err != nil {
			return fmt.Errorf("convert: tensor %q: %w", name, err)
		}
		return nil
	}
	if srcRows, ok := stackedRows(t, cols); ok {
		// A stack of experts: each requested row straight from its source.
		r, first := int64(row0), int64(0)
		for i, n := range srcRows {
			end := int64(row0 + nrows)
			if r < end && r < first+n {
				k := min(end, first+n) - r
				d := dst[(r-int64(row0))*cols : (r-int64(row0)+k)*cols]
				if err := p.j.model.Source.ReadFloat32(ctx, t.Sources[i].Source, d, int(r-first), int(k)); err != nil {
					return fmt.Errorf("convert: tensor %q: %w", name, err)
				}
				r += k
			}
			first += n
		}
		return nil
	}
	v, err := p.whole(ctx, t)
	if err != nil {
		return fmt.Errorf("convert: tensor %q: %w", name, err)
	}
	copy(dst, v[int64(row0)*cols:int64(row0+nrows)*cols])
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
