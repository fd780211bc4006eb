package split

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// ErrNotFirstShard is returned when the file given to Merge is not the
// first shard of a gguf-split set.
var ErrNotFirstShard = errors.New("split: not the first shard of a gguf-split set")

// MergeOptions configure Merge.
type MergeOptions struct {
	// DropSplitKeys leaves split.no, split.count and split.tensors.count out
	// of the merged file, which then has the bytes of the file the set was
	// cut from (llama-gguf-split keeps them, with split.count 0).
	DropSplitKeys bool
	// Overwrite allows replacing an existing output.
	Overwrite bool
}

// Merged describes a planned merge.
type Merged struct {
	// Shards are the paths of the set, in order.
	Shards []string
	// KVs and Tensors are the merged file's metadata and tensor infos (the
	// offsets those of each tensor in its shard's data section).
	KVs     []gguf.KV
	Tensors []gguf.TensorInfo
	shardOf []int
	order   binary.AppendByteOrder
}

// PlanMerge reads the headers of the set whose first shard is first
// (PREFIX-00001-of-NNNNN.gguf), as gguf_merge's first pass does, and checks
// what llama-gguf-split takes on trust: each shard's split.no and
// split.count, no tensor twice, and the tensor count split.tensors.count
// announces.
func PlanMerge(first string, opts MergeOptions) (*Merged, error) {
	f0, err := ggufread.Open(first)
	if err != nil {
		return nil, err
	}
	n, err := splitCount(f0)
	if err != nil {
		f0.Close()
		return nil, err
	}
	suffix := fmt.Sprintf("-%05d-of-%05d.gguf", 1, n)
	if len(first) <= len(suffix) || !strings.HasSuffix(first, suffix) {
		f0.Close()
		return nil, fmt.Errorf("%w: %s: split.count is %d, so its name must end in %s", ErrNotFirstShard, first, n, suffix)
	}
	prefix := strings.TrimSuffix(first, suffix)
	m := &Merged{order: byteOrder(f0)}
	var kvs gguf.KVList
	kvs.Append(f0.KVs...)
	// gguf_merge sets split.count to 0 so that the output is not taken for
	// a set again; set_val moves it last.
	setLast(&kvs, gguf.KeySplitCount, gguf.Uint16(0))
	if opts.DropSplitKeys {
		kvs.Remove(gguf.KeySplitNo)
		kvs.Remove(gguf.KeySplitCount)
		kvs.Remove(gguf.KeySplitTensorsCount)
	}
	m.KVs = kvs.KVs()
	want, hasWant := int64(-1), false
	if v, ok := f0.KV(gguf.KeySplitTensorsCount); ok {
		want, hasWant = v.Int()
	}
	seen := map[string]string{}
	for s := range n {
		path := Path(prefix, s, n)
		f := f0
		if s > 0 {
			if f, err = ggufread.Open(path); err != nil {
				return nil, err
			}
		}
		err := m.addShard(f, path, s, n, seen)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if hasWant && want != int64(len(m.Tensors)) {
		return nil, fmt.Errorf("split: %s: %s says %d tensors, the %d shards hold %d", first, gguf.KeySplitTensorsCount, want, n, len(m.Tensors))
	}
	return m, nil
}

// addShard adds the tensors of shard s of n, read from f.
func (m *Merged) addShard(f *ggufread.File, path string, s, n int, seen map[string]string) error {
	if s > 0 {
		c, err := splitCount(f)
		if err != nil {
			return err
		}
		if c != n {
			return fmt.Errorf("split: %s: %s is %d, the first shard says %d", path, gguf.KeySplitCount, c, n)
		}
	}
	if v, ok := f.KV(gguf.KeySplitNo); ok {
		if no, _ := v.Int(); no != int64(s) {
			return fmt.Errorf("split: %s: %s is %d, expected %d", path, gguf.KeySplitNo, no, s)
		}
	}
	m.Shards = append(m.Shards, path)
	for _, t := range f.Tensors {
		if other, dup := seen[t.Name]; dup {
			return fmt.Errorf("split: tensor %q is in both %s and %s", t.Name, other, path)
		}
		seen[t.Name] = path
		m.Tensors = append(m.Tensors, t)
		m.shardOf = append(m.shardOf, len(m.Shards)-1)
	}
	return nil
}

// splitCount is a shard's split.count, which must be a positive uint16.
func splitCount(f *ggufread.File) (int, error) {
	v, ok := f.KV(gguf.KeySplitCount)
	if !ok {
		return 0, fmt.Errorf("%w: %s has no %s", ErrNotFirstShard, f.Name, gguf.KeySplitCount)
	}
	n, isInt := v.Int()
	if !isInt || v.Type() != gguf.TypeUint16 || n < 1 {
		return 0, fmt.Errorf("%w: %s: %s is %v, not a positive uint16", ErrNotFirstShard, f.Name, gguf.KeySplitCount, v.Any())
	}
	return int(n), nil
}

// Merge writes the planned merge to out (atomically: nothing is left on
// failure), copying each tensor's bytes from its shard.
func Merge(ctx context.Context, m *Merged, out string, opts MergeOptions) error {
	w, err := startFile(ctx, out, writer.Options{Overwrite: opts.Overwrite, ByteOrder: m.order}, m.KVs, m.Tensors)
	if err != nil {
		return err
	}
	for s, path := range m.Shards {
		if err := m.copyShard(w, s, path); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// copyShard copies the tensors of shard s, reopened from path.
func (m *Merged) copyShard(w *writer.Writer, s int, path string) error {
	f, err := ggufread.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	src, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("split: %w", err)
	}
	defer src.Close()
	for i, t := range m.Tensors {
		if m.shardOf[i] != s {
			continue
		}
		now, ok := f.Tensor(t.Name)
		if !ok || now.Offset != t.Offset || now.Type != t.Type {
			return fmt.Errorf("split: %s changed during the merge (tensor %q)", path, t.Name)
		}
		if err := copyTensor(w, src, f.DataOffset+int64(t.Offset), t.Name); err != nil {
			return err
		}
	}
	return nil
}
