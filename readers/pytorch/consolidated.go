package pytorch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
)

// Meta's original layout: consolidated.00.pth … consolidated.NN.pth, one
// file per model-parallel rank, each holding a slice of every matrix, next
// to params.json. Tensors are merged along their split dimension on the
// fly; the rule is llama.cpp's (examples/convert_legacy_llama.py
// merge_sharded) with the Llama 3 exception of transformers'
// convert_llama_weights_to_hf.py write_model:
//
//   - one shard: tensors as they are;
//   - 0- and 1-D tensors (norms, rope.freqs) are replicated: shard 0's;
//   - "tok_embeddings.*", "*.attention.wo.weight" and
//     "*.feed_forward.w2.weight" are split by columns (concatenated on
//     axis 1) — except tok_embeddings in Llama 3 checkpoints, split by rows.
//     transformers learns the version from a flag; here it is read from the
//     shapes: when each shard's embedding row already has the model width
//     (params.json "dim", else the length of norm.weight) the split is by
//     rows;
//   - everything else (wq, wk, wv, w1, w3, output) is split by rows (axis 0).
//
// No permutation is applied: Meta's q/k weights are already in the order
// ggml's NORM rope expects.

// consolidatedName returns NN for "consolidated.NN.pth", -1 otherwise.
func consolidatedName(name string) int {
	rest, ok := strings.CutPrefix(name, "consolidated.")
	if !ok {
		return -1
	}
	num, ok := strings.CutSuffix(rest, ".pth")
	if !ok || num == "" || len(num) > 6 || strings.Trim(num, "0123456789") != "" {
		return -1
	}
	n, _ := strconv.Atoi(num)
	return n
}

// maxParamsBytes caps params.json.
const maxParamsBytes = 1 << 20

// OpenConsolidated opens Meta's original checkpoint layout in dir:
// consolidated.NN.pth shards numbered 0…N-1 and an optional params.json
// (available through Params). The shards' tensors are merged as described
// above; TensorInfo.File names the first shard.
func OpenConsolidated(dir string, opts *Options) (*Checkpoint, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	byRank := map[int]string{}
	for _, e := range entries {
		if n := consolidatedName(e.Name()); n >= 0 && !e.IsDir() {
			if prev, dup := byRank[n]; dup {
				return nil, &Error{File: dir, Offset: -1, Msg: fmt.Sprintf("shards %s and %s have the same rank", prev, e.Name()), Err: ErrFormat}
			}
			byRank[n] = e.Name()
		}
	}
	if len(byRank) == 0 {
		return nil, &Error{File: dir, Offset: -1, Msg: "no consolidated.NN.pth file", Err: ErrNoFiles}
	}
	names := make([]string, len(byRank))
	for i := range names {
		n, ok := byRank[i]
		if !ok {
			return nil, &Error{File: dir, Offset: -1, Msg: fmt.Sprintf("consolidated shards are not numbered 0…%d: rank %d is missing", len(byRank)-1, i), Err: ErrFormat}
		}
		names[i] = n
	}
	c := &Checkpoint{format: FormatConsolidated, index: map[string]int{}}
	if c.params, err = readParams(filepath.Join(dir, "params.json")); err != nil {
		return nil, err
	}
	lim := opts.limits()
	shards := make([]*file, len(names))
	for i, n := range names {
		f, err := openFile(filepath.Join(dir, n), lim)
		if err != nil {
			c.Close()
			return nil, err
		}
		shards[i] = f
		c.files = append(c.files, f.f)
		c.collectInflaters(f)
	}
	if err := c.merge(shards, names[0]); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// readParams returns params.json's bytes (nil when absent) after checking
// it is a JSON object.
func readParams(path string) ([]byte, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxParamsBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxParamsBytes {
		return nil, &Error{File: path, Offset: -1, Msg: fmt.Sprintf("larger than %d bytes", maxParamsBytes), Err: ErrLimit}
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, &Error{File: path, Offset: -1, Msg: "not a JSON object: " + err.Error(), Err: ErrFormat}
	}
	return raw, nil
}

// modelDim is the model width for the tok_embeddings rule: params.json
// "dim", else the length of shard 0's norm.weight, else 0 (unknown).
func modelDim(params []byte, shard0 map[string]*tensor) int64 {
	var p struct {
		Dim int64 `json:"dim"`
	}
	if params != nil && json.Unmarshal(params, &p) == nil && p.Dim > 0 {
		return p.Dim
	}
	if t, ok := shard0["norm.weight"]; ok && len(t.shape) == 1 {
		return t.shape[0]
	}
	return 0
}

// merge adds every tensor name of the shards, in first-appearance order,
// merged by the rule above.
func (c *Checkpoint) merge(shards []*file, fileName string) error {
	maps := make([]map[string]*tensor, len(shards))
	var order []string
	seen := map[string]bool{}
	for i, s := range shards {
		maps[i] = map[string]*tensor{}
		for _, nt := range s.tensors {
			if _, dup := maps[i][nt.name]; dup {
				return &Error{File: s.path, Tensor: nt.name, Offset: -1, Msg: "tensor name appears twice", Err: ErrFormat}
			}
			maps[i][nt.name] = nt.t
			if !seen[nt.name] {
				seen[nt.name] = true
				order = append(order, nt.name)
			}
		}
	}
	dim := modelDim(c.params, maps[0])
	for _, name := range order {
		parts := make([]*tensor, len(shards))
		for i := range shards {
			t, ok := maps[i][name]
			if !ok {
				return &Error{File: shards[i].path, Tensor: name, Offset: -1, Msg: "tensor missing from this shard", Err: ErrFormat}
			}
			if i > 0 && t.dtype != parts[0].dtype {
				return &Error{File: shards[i].path, Tensor: name, Offset: -1, Msg: fmt.Sprintf("dtype %s differs from shard 0's %s", t.dtype, parts[0].dtype), Err: ErrFormat}
			}
			parts[i] = t
		}
		info := readers.TensorInfo{Name: name, DType: parts[0].dtype, File: fileName}
		var data tensorData
		switch axis := splitAxis(name, parts, dim); {
		case len(parts) == 1 || len(parts[0].shape) <= 1:
			info.Shape, data = parts[0].shape, parts[0]
		default:
			m, err := newMerged(parts, axis)
			if err != nil {
				return &Error{File: shards[0].path, Tensor: name, Offset: -1, Msg: err.Error(), Err: ErrFormat}
			}
			info.Shape, data = m.shape, m
		}
		if err := c.add(info, data); err != nil {
			return err
		}
	}
	return nil
}

// splitAxis returns the axis a tensor's shards are concatenated on.
func splitAxis(name string, parts []*tensor, dim int64) int {
	switch {
	case strings.HasPrefix(name, "tok_embeddings."):
		if dim > 0 && len(parts[0].shape) == 2 && parts[0].shape[1] == dim {
			return 0 // Llama 3: whole rows per shard
		}
		return 1
	case strings.HasSuffix(name, ".attention.wo.weight"), strings.HasSuffix(name, ".feed_forward.w2.weight"):
		return 1
	}
	return 0
}

// merged is a tensor concatenated from model-parallel shards along axis 0
// (any rank) or axis 1 (matrices).
type merged struct {
	parts []*tensor
	axis  int
	shape []int64
	// starts[i] is where part i begins: a flat element index for axis 0,
	// a column for axis 1.
	starts []int64
}

func newMerged(parts []*tensor, axis int) (*merged, error) {
	ref := parts[0].shape
	if axis == 1 && len(ref) != 2 {
		return nil, fmt.Errorf("column split of a %d-D tensor", len(ref))
	}
	m := &merged{parts: parts, axis: axis, shape: slices.Clone(ref), starts: make([]int64, len(parts))}
	total, start := int64(0), int64(0)
	for i, p := range parts {
		if len(p.shape) != len(ref) {
			return nil, fmt.Errorf("shard %d has shape %v, shard 0 %v", i, p.shape, ref)
		}
		for d := range ref {
			if d != axis && p.shape[d] != ref[d] {
				return nil, fmt.Errorf("shard %d has shape %v, shard 0 %v (only axis %d may differ)", i, p.shape, ref, axis)
			}
		}
		m.starts[i] = start
		if axis == 0 {
			n, _ := readers.NumElements(p.shape)
			start += n
		} else {
			start += p.shape[1]
		}
		total += p.shape[axis]
	}
	m.shape[axis] = total
	if _, err := readers.NumElements(m.shape); err != nil {
		return nil, err
	}
	return m, nil
}

// readElems implements tensorData. Axis 0: the flat data is the shards'
// data one after another. Axis 1: each row is the shards' rows side by
// side.
func (m *merged) readElems(ctx context.Context, dst []byte, first, count int64) error {
	es := int64(m.parts[0].dtype.Size())
	end := first + count
	if m.axis == 0 {
		for i, p := range m.parts {
			n, _ := readers.NumElements(p.shape)
			lo, hi := max(first, m.starts[i]), min(end, m.starts[i]+n)
			if lo >= hi {
				continue
			}
			if err := p.readElems(ctx, dst[(lo-first)*es:(hi-first)*es], lo-m.starts[i], hi-lo); err != nil {
				return err
			}
		}
		return nil
	}
	cols := m.shape[1]
	for r := first / cols; r*cols < end; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rowLo, rowHi := max(first, r*cols), min(end, (r+1)*cols)
		for i, p := range m.parts {
			pc := p.shape[1]
			lo, hi := max(rowLo, r*cols+m.starts[i]), min(rowHi, r*cols+m.starts[i]+pc)
			if lo >= hi {
				continue
			}
			src := r*pc + (lo - r*cols - m.starts[i])
			if err := p.readElems(ctx, dst[(lo-first)*es:(hi-first)*es], src, hi-lo); err != nil {
				return err
			}
		}
	}
	return nil
}
