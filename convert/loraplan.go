package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/convert/metadata"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

// maxProbeDim bounds the dimensions of a probed weight: row and column
// numbers are carried as exact float32 integers.
const maxProbeDim = 1 << 24

// maxProbeValues bounds the values of a probed transform's sources and
// output together (1 GiB of float32): the probe runs the transform on
// weights of the base model's full size.
const maxProbeValues = 1 << 28

// planLoRA plans every adapted weight as the base converter plans it
// (modify_tensors on the weight's name and shape) and turns each planned
// output into its lora_a and lora_b: the output's rows select lora_b's
// rows, its columns lora_a's columns, and a 3-D output (stacked experts)
// stacks both factors, as convert_lora_to_gguf.py's LoraTorchTensor does.
func planLoRA(ctx context.Context, m arch.Model, src readers.Source, pairs []*loraPair, ft gguf.FileType) ([]loraTensor, error) {
	byBase := map[string]*loraPair{}
	var outs []arch.Output
	for _, p := range pairs {
		byBase[p.base] = p
		if hasAnySuffix(p.base, skippedSuffixes) {
			continue
		}
		in := arch.Input{Name: p.base, Source: p.base, Shape: []int64{p.b.Shape[0], p.a.Shape[1]}, DType: readers.F32}
		o, err := m.Modify(in, arch.BlockID(p.base))
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", p.base, err)
		}
		if p.base == "lm_head.weight" && len(o) == 0 {
			return nil, fmt.Errorf("lm_head is present in the adapter, but the base model has no output tensor of its own (tied embeddings)")
		}
		outs = append(outs, o...)
	}
	if err := m.Finish(); err != nil {
		return nil, err
	}
	values := map[string][]float32{}
	read := func(t *readers.TensorInfo) ([]float32, error) {
		if v, ok := values[t.Name]; ok {
			return v, nil
		}
		v := make([]float32, t.Shape[0]*t.Shape[1])
		if err := src.ReadFloat32(ctx, t.Name, v, 0, int(t.Shape[0])); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		values[t.Name] = v
		return v, nil
	}
	var tensors []loraTensor
	for i := range outs {
		o := &outs[i]
		if o.Packed != nil || len(o.Sources) == 0 || o.DropIfZero {
			return nil, fmt.Errorf("tensor %q: the base converter writes it from its own data, not as a transform of the adapted weight", o.Name)
		}
		if err := checkOutput(o); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", o.Name, err)
		}
		g, err := probe(o)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", o.Name, err)
		}
		a, b, err := g.factors(o, byBase, read)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", o.Name, err)
		}
		for _, f := range []loraTensor{a, b} {
			f.typ, _ = tensorType(m, &f.out, ft)
			tensors = append(tensors, f)
		}
	}
	return tensors, nil
}

// gather is a planned output read as a selection of its sources' values:
// matrix m's row i is row row[m*rows+i] of source src[m*rows+i], and its
// column j is column col[m*cols+j] of that source.
type gather struct {
	mats, rows, cols int64
	src              []int
	row, col         []int64
	// transposed: the output is its one source transposed; row is then
	// per output column and col per output row (see transpose).
	transposed bool
}

// probe runs the output's transform on sources filled with their row
// numbers, then column numbers, then source numbers, and checks with
// values made of all three that the transform only selects: the output
// of a LoRA pair is a LoRA pair only when each output row is one source
// row and each output column one source column, or (a transpose) the
// other way round. An unchanged or only row-reordered source needs no
// probe.
func probe(o *arch.Output) (*gather, error) {
	g := &gather{mats: 1, cols: o.Shape[len(o.Shape)-1]}
	switch len(o.Shape) {
	case 2:
		g.rows = o.Shape[0]
	case 3:
		g.mats, g.rows = o.Shape[0], o.Shape[1]
	default:
		return nil, fmt.Errorf("a %d-dimensional tensor cannot hold a LoRA pair", len(o.Shape))
	}
	for _, s := range o.Sources {
		if len(s.Shape) != 2 || s.Shape[0] >= maxProbeDim || s.Shape[1] >= maxProbeDim {
			return nil, fmt.Errorf("source %q of shape %v is not a weight matrix ggufkit can map", s.Source, s.Shape)
		}
	}
	if len(o.Sources) == 1 && len(o.Shape) == 2 && (o.Build == nil || o.RowOrder != nil) {
		// The source unchanged, or only its rows reordered (Output's
		// RowOrder contract): nothing to probe.
		in := o.Sources[0]
		if in.Shape[1] != g.cols || (o.RowOrder == nil && in.Shape[0] != g.rows) ||
			(o.RowOrder != nil && int64(len(o.RowOrder)) != g.rows) {
			return nil, fmt.Errorf("shape %v does not follow from its source's %v", o.Shape, in.Shape)
		}
		g.src = make([]int, g.rows)
		g.row = make([]int64, g.rows)
		g.col = make([]int64, g.cols)
		for i := range g.row {
			g.row[i] = int64(i)
			if o.RowOrder != nil {
				g.row[i] = o.RowOrder[i]
			}
			if g.row[i] < 0 || g.row[i] >= in.Shape[0] {
				return nil, fmt.Errorf("row order names row %d of %d", g.row[i], in.Shape[0])
			}
		}
		for j := range g.col {
			g.col[j] = int64(j)
		}
		return g, nil
	}
	total := g.mats * g.rows * g.cols
	for _, s := range o.Sources {
		total += s.Shape[0] * s.Shape[1]
	}
	if total > maxProbeValues {
		return nil, fmt.Errorf("its transform (of %d source weights) is too large to map onto the LoRA factors "+
			"(more than %d values)", len(o.Sources), maxProbeValues)
	}
	run := func(val func(s int, r, c int64) float32) ([]float32, error) {
		srcs := make([][]float32, len(o.Sources))
		for s, in := range o.Sources {
			rows, cols := in.Shape[0], in.Shape[1]
			v := make([]float32, rows*cols)
			for r := range rows {
				for c := range cols {
					v[r*cols+c] = val(s, r, c)
				}
			}
			srcs[s] = v
		}
		if o.Build == nil {
			if len(srcs) != 1 {
				return nil, fmt.Errorf("%d sources without a transform", len(srcs))
			}
			return srcs[0], nil
		}
		out, err := o.Build(srcs)
		if err != nil {
			return nil, err
		}
		if int64(len(out)) != g.mats*g.rows*g.cols {
			return nil, fmt.Errorf("its transform gives %d values for shape %v", len(out), o.Shape)
		}
		return out, nil
	}
	rowv, err := run(func(_ int, r, _ int64) float32 { return float32(r) })
	if err != nil {
		return nil, err
	}
	colv, err := run(func(_ int, _, c int64) float32 { return float32(c) })
	if err != nil {
		return nil, err
	}
	srcv := make([]float32, len(rowv)) // one source: all zeros
	if len(o.Sources) > 1 {
		if srcv, err = run(func(s int, _, _ int64) float32 { return float32(s) }); err != nil {
			return nil, err
		}
	}
	if !g.straight(o, rowv, colv, srcv) && !g.transpose(o, rowv, colv) {
		return nil, fmt.Errorf("its transform is not a selection of rows and columns, which a LoRA pair cannot follow")
	}
	check, err := run(probeValue)
	if err != nil {
		return nil, err
	}
	for m := range g.mats {
		for i := range g.rows {
			for j := range g.cols {
				s, r, c := g.at(m, i, j)
				if check[(m*g.rows+i)*g.cols+j] != probeValue(s, r, c) {
					return nil, fmt.Errorf("its transform changes values (not only a selection of rows and columns), " +
						"which a LoRA pair cannot follow")
				}
			}
		}
	}
	return g, nil
}

// at is the source, row and column of matrix m's value (i, j).
func (g *gather) at(m, i, j int64) (int, int64, int64) {
	if g.transposed {
		return 0, g.row[j], g.col[i]
	}
	k := m*g.rows + i
	return g.src[k], g.row[k], g.col[m*g.cols+j]
}

// straight reads the probes as a selection: each output row one row of
// one source, each output column one column.
func (g *gather) straight(o *arch.Output, rowv, colv, srcv []float32) bool {
	g.src = make([]int, g.mats*g.rows)
	g.row = make([]int64, g.mats*g.rows)
	g.col = make([]int64, g.mats*g.cols)
	for m := range g.mats {
		for j := range g.cols {
			g.col[m*g.cols+j] = int64(colv[m*g.rows*g.cols+j])
		}
		for i := range g.rows {
			k := m*g.rows + i
			g.row[k], g.src[k] = int64(rowv[k*g.cols]), int(srcv[k*g.cols])
			if g.src[k] < 0 || g.src[k] >= len(o.Sources) || g.row[k] < 0 || g.row[k] >= o.Sources[g.src[k]].Shape[0] {
				return false
			}
			for j := range g.cols {
				c := g.col[m*g.cols+j]
				if c < 0 || c >= o.Sources[g.src[k]].Shape[1] || int64(colv[k*g.cols+j]) != c ||
					int64(rowv[k*g.cols+j]) != g.row[k] || int(srcv[k*g.cols+j]) != g.src[k] {
					return false
				}
			}
		}
	}
	return true
}

// transpose reads the probes of a matrix from one source as its
// transpose, with rows and columns selected: output column j is source row
// row[j], output row i source column col[i]. LoraTorchTensor transposes a
// pair by swapping its factors, transposed (GPT-2's Conv1D weights).
func (g *gather) transpose(o *arch.Output, rowv, colv []float32) bool {
	if g.mats != 1 || len(o.Sources) != 1 {
		return false
	}
	in := o.Sources[0]
	g.transposed = true
	g.row = make([]int64, g.cols)
	g.col = make([]int64, g.rows)
	for j := range g.cols {
		if g.row[j] = int64(rowv[j]); g.row[j] < 0 || g.row[j] >= in.Shape[0] {
			return false
		}
	}
	for i := range g.rows {
		if g.col[i] = int64(colv[i*g.cols]); g.col[i] < 0 || g.col[i] >= in.Shape[1] {
			return false
		}
		for j := range g.cols {
			if int64(rowv[i*g.cols+j]) != g.row[j] || int64(colv[i*g.cols+j]) != g.col[i] {
				return false
			}
		}
	}
	return true
}

// probeValue is a value that tells source, row and column apart with high
// probability (23 bits of a hash, plus one half so that it is no integer).
func probeValue(s int, r, c int64) float32 {
	h := uint64(s)*0x9E3779B97F4A7C15 ^ uint64(r)*0xC2B2AE3D27D4EB4F ^ uint64(c)*0x165667B19E3779F9
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return float32(h>>41) + 0.5
}

// factors computes the output's lora_a (mats × rank × cols) and lora_b
// (mats × rows × rank), without the leading dimension for a matrix.
func (g *gather) factors(o *arch.Output, byBase map[string]*loraPair, read func(*readers.TensorInfo) ([]float32, error)) (loraTensor, loraTensor, error) {
	pairs := make([]*loraPair, len(o.Sources))
	for s, in := range o.Sources {
		p := byBase[in.Source]
		if p == nil {
			return loraTensor{}, loraTensor{}, fmt.Errorf("source %q is not an adapted weight", in.Source)
		}
		pairs[s] = p
	}
	rank := pairs[0].a.Shape[0]
	for _, p := range pairs {
		if p.a.Shape[0] != rank {
			return loraTensor{}, loraTensor{}, fmt.Errorf("its sources have ranks %d and %d", rank, p.a.Shape[0])
		}
	}
	av := make([]float32, g.mats*rank*g.cols)
	bv := make([]float32, g.mats*g.rows*rank)
	if g.transposed {
		// lora_a is lora_B transposed, lora_b is lora_A transposed.
		a, err := read(pairs[0].a)
		if err != nil {
			return loraTensor{}, loraTensor{}, err
		}
		b, err := read(pairs[0].b)
		if err != nil {
			return loraTensor{}, loraTensor{}, err
		}
		aCols := pairs[0].a.Shape[1]
		for r := range rank {
			for j := range g.cols {
				av[r*g.cols+j] = b[g.row[j]*rank+r]
			}
		}
		for i := range g.rows {
			for r := range rank {
				bv[i*rank+r] = a[r*aCols+g.col[i]]
			}
		}
	} else if err := g.fill(pairs, rank, av, bv, read); err != nil {
		return loraTensor{}, loraTensor{}, err
	}
	aShape, bShape := []int64{rank, g.cols}, []int64{g.rows, rank}
	if len(o.Shape) == 3 {
		aShape, bShape = []int64{g.mats, rank, g.cols}, []int64{g.mats, g.rows, rank}
	}
	mk := func(suffix string, shape []int64, v []float32) loraTensor {
		return loraTensor{out: arch.Output{Name: o.Name + suffix, Shape: shape, Sources: o.Sources, HFName: o.HFName, Bid: o.Bid},
			values: v}
	}
	return mk(".lora_a", aShape, av), mk(".lora_b", bShape, bv), nil
}

// fill fills lora_a and lora_b of a straight selection: lora_b's rows
// are the selected rows of each source's lora_B, lora_a the selected
// columns of the lora_A the matrix's rows share.
func (g *gather) fill(pairs []*loraPair, rank int64, av, bv []float32, read func(*readers.TensorInfo) ([]float32, error)) error {
	for m := range g.mats {
		var aSrc []float32
		var aCols int64
		for i := range g.rows {
			k := m*g.rows + i
			p := pairs[g.src[k]]
			b, err := read(p.b)
			if err != nil {
				return err
			}
			copy(bv[k*rank:(k+1)*rank], b[g.row[k]*rank:(g.row[k]+1)*rank])
			a, err := read(p.a)
			if err != nil {
				return err
			}
			if aSrc == nil {
				aSrc, aCols = a, p.a.Shape[1]
			} else if !slices.Equal(aSrc, a) {
				// LoraTorchTensor concatenates rows of several pairs only
				// when they share lora_A.
				return fmt.Errorf("it joins rows of adapted weights with different lora_A, " +
					"which one LoRA pair cannot hold (convert_lora_to_gguf.py cannot either)")
			}
		}
		for r := range rank {
			dst := av[(m*rank+r)*g.cols : (m*rank+r+1)*g.cols]
			for j := range g.cols {
				dst[j] = aSrc[r*aCols+g.col[m*g.cols+j]]
			}
		}
	}
	return nil
}

// loraOutputPath is the converter's file naming for an adapter: a folder
// (by default the adapter's) gets the naming convention's name with the
// "LoRA" type; a file name has {ftype} filled in.
func loraOutputPath(dir string, opts LoRAOptions, meta *metadata.Metadata, ft gguf.FileType, total int64) (string, error) {
	out := opts.OutFile
	if out == "" {
		out = dir
	}
	if strings.HasSuffix(out, string(os.PathSeparator)) && !opts.DryRun {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", fmt.Errorf("convert: --outfile: %w", err)
		}
	}
	if st, err := os.Stat(out); (err == nil && st.IsDir()) || strings.HasSuffix(out, string(os.PathSeparator)) {
		modelType := ""
		if total < 0 {
			modelType = "LoRA"
		}
		name := metadata.NamingConvention(meta.Name, meta.Basename, meta.Finetune, meta.Version, meta.SizeLabel, ft.String(), modelType)
		return filepath.Join(out, name+".gguf"), nil
	}
	return filepath.Join(filepath.Dir(out), metadata.FillTemplatedFilename(filepath.Base(out), ft.String())), nil
}
