// Package split cuts a GGUF into a gguf-split set and merges a set back into
// one file, as llama.cpp's llama-gguf-split does (tools/gguf-split/
// gguf-split.cpp, gguf_split and gguf_merge): the same shard boundaries, the
// same metadata in the same order, the same layout, so that its files and
// ours are byte-identical. Tensor data is copied between files (in the
// kernel where the system can), never decoded.
package split

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// DefaultMaxTensors is llama-gguf-split's default --split-max-tensors.
const DefaultMaxTensors = 128

// maxShards is the most shards split.count (a uint16) can number.
const maxShards = 1<<16 - 1

// ErrEmptyShard is returned when the limits leave a shard without tensors
// (llama-gguf-split: "one of splits have 0 tensors").
var ErrEmptyShard = errors.New("split: a shard would hold no tensor; the size or tensor limit is too small")

// Options say where shards are cut.
type Options struct {
	// MaxTensors is the number of tensors per shard (--split-max-tensors);
	// 0 means DefaultMaxTensors. It is used when MaxBytes is 0.
	MaxTensors int
	// MaxBytes is the most tensor bytes (each padded to 32 bytes) per
	// shard (--split-max-size); a tensor larger than it gets a shard of its
	// own, unless it is the first tensor of the set (ErrEmptyShard).
	MaxBytes int64
	// NoTensorFirstSplit leaves the first shard with the metadata only.
	NoTensorFirstSplit bool
}

// Shard is one planned output file.
type Shard struct {
	// Path is PREFIX-%05d-of-%05d.gguf (llama_split_path).
	Path string
	// KVs are its metadata pairs in file order: the first shard has the
	// input's, then split.no, split.tensors.count, split.count; the others
	// only the three split keys.
	KVs []gguf.KV
	// Tensors are the input's tensor infos it holds, in input order, with
	// their offsets in the input file's data section.
	Tensors []gguf.TensorInfo
	// MetaSize is the header's size (before the data section's padding) and
	// DataSize the sum of the tensors' unpadded byte sizes, as
	// llama-gguf-split reports a shard's size.
	MetaSize, DataSize int64
}

// Path is llama_split_path: the name of shard i (0-based) of n.
func Path(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, n)
}

// Plan cuts the GGUF in into shards named after prefix, as
// split_strategy's constructor does: tensors in file order, a new shard
// when the tensor count reaches a multiple of MaxTensors, or when the
// padded bytes of the current shard plus the next tensor would exceed
// MaxBytes.
func Plan(in *ggufread.File, prefix string, opts Options) ([]Shard, error) {
	if opts.MaxTensors < 0 || opts.MaxBytes < 0 {
		return nil, fmt.Errorf("split: negative limits (%d tensors, %d bytes)", opts.MaxTensors, opts.MaxBytes)
	}
	if opts.MaxTensors == 0 {
		opts.MaxTensors = DefaultMaxTensors
	}
	var groups [][]int
	if opts.NoTensorFirstSplit {
		groups = append(groups, nil)
	}
	groups = append(groups, nil)
	cur := uint64(0)
	for i := range in.Tensors {
		// llama-gguf-split pads with GGUF_DEFAULT_ALIGNMENT whatever the
		// file's alignment.
		padded, ok := gguf.AlignUp(in.TensorSize(i), gguf.DefaultAlignment)
		if !ok {
			return nil, fmt.Errorf("split: %s: tensor %q: size overflows", in.Name, in.Tensors[i].Name)
		}
		last := len(groups) - 1
		var cut bool
		if opts.MaxBytes > 0 {
			cut = cur+padded > uint64(opts.MaxBytes)
		} else {
			cut = i > 0 && i%opts.MaxTensors == 0
		}
		if cut {
			if len(groups[last]) == 0 && !(opts.NoTensorFirstSplit && last == 0) {
				return nil, ErrEmptyShard
			}
			groups = append(groups, nil)
			last++
			cur = 0
		}
		cur += padded
		groups[last] = append(groups[last], i)
	}
	if len(groups) > maxShards {
		return nil, fmt.Errorf("split: %s: the limits give %d shards, more than split.count can number (%d)", in.Name, len(groups), maxShards)
	}
	n := len(groups)
	shards := make([]Shard, n)
	for s, g := range groups {
		var kvs gguf.KVList
		if s == 0 {
			kvs.Append(in.KVs...)
		}
		// gguf_set_val_* removes a key and appends it again: split.count,
		// set as a placeholder and then to the count, ends up last.
		setLast(&kvs, gguf.KeySplitNo, gguf.Uint16(uint16(s)))
		setLast(&kvs, gguf.KeySplitTensorsCount, gguf.Int32(int32(len(in.Tensors))))
		setLast(&kvs, gguf.KeySplitCount, gguf.Uint16(uint16(n)))
		sh := Shard{Path: Path(prefix, s, n), KVs: slices.Clone(kvs.KVs())}
		for _, i := range g {
			sh.Tensors = append(sh.Tensors, in.Tensors[i])
			sh.DataSize += int64(in.TensorSize(i))
		}
		sh.MetaSize = metaSize(byteOrder(in), sh.KVs, sh.Tensors)
		shards[s] = sh
	}
	return shards, nil
}

// setLast is gguf_set_val_*: the key is removed and appended.
func setLast(l *gguf.KVList, key string, v gguf.Value) {
	l.Remove(key)
	l.Append(gguf.KV{Key: key, Value: v})
}

// written is how gguf.cpp writes a tensor info: the dimensions up to the
// last one that is not 1 (ggml_n_dims, at least one).
func written(t gguf.TensorInfo, offset uint64) gguf.TensorInfo {
	n := len(t.Shape)
	for n > 1 && t.Shape[n-1] == 1 {
		n--
	}
	return gguf.TensorInfo{Name: t.Name, Type: t.Type, Shape: slices.Clone(t.Shape[:n]), Offset: offset}
}

// metaSize is gguf_get_meta_size of a file with these pairs and tensors,
// without the padding that aligns the data section.
func metaSize(order binary.AppendByteOrder, kvs []gguf.KV, tensors []gguf.TensorInfo) int64 {
	e := gguf.NewEncoder(order)
	e.Header(gguf.Version, uint64(len(tensors)), uint64(len(kvs)))
	for _, kv := range kvs {
		e.KV(kv)
	}
	for _, t := range tensors {
		e.TensorInfo(written(t, 0))
	}
	padded, _ := gguf.AlignUp(uint64(e.Len()), alignment(kvs))
	return int64(padded)
}

// alignment is the data alignment a file with these pairs has: its
// general.alignment, else 32. Every shard but the first has none, and each
// file is laid out with its own (llama-gguf-split lays every file out with
// 32, which breaks a first shard whose general.alignment differs).
func alignment(kvs []gguf.KV) uint64 {
	for _, kv := range kvs {
		if kv.Key == gguf.KeyGeneralAlignment {
			if a, ok := kv.Value.Int(); ok && a > 0 {
				return uint64(a)
			}
		}
	}
	return gguf.DefaultAlignment
}

// Write writes the planned shards of in. Each shard is written to a
// temporary file and published when complete; if one fails, the shards
// published before it are removed too, so no partial set is left.
func Write(ctx context.Context, in *ggufread.File, shards []Shard, overwrite bool) error {
	src, err := os.Open(in.Name)
	if err != nil {
		return fmt.Errorf("split: %w", err)
	}
	defer src.Close()
	for s, sh := range shards {
		if err := writeShard(ctx, in, src, sh, overwrite); err != nil {
			for _, p := range shards[:s] {
				os.Remove(p.Path)
			}
			return err
		}
	}
	return nil
}

// writeShard writes one file whose tensors are copied from src, the file
// in was read from.
func writeShard(ctx context.Context, in *ggufread.File, src *os.File, sh Shard, overwrite bool) error {
	w, err := startFile(ctx, sh.Path, writer.Options{Overwrite: overwrite, ByteOrder: byteOrder(in)}, sh.KVs, sh.Tensors)
	if err != nil {
		return err
	}
	for _, t := range sh.Tensors {
		if err := copyTensor(w, src, in.DataOffset+int64(t.Offset), t.Name); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// startFile creates path with these pairs and tensor infos, its header
// written and its tensors ready to be copied in (the caller Aborts or
// Closes it).
func startFile(ctx context.Context, path string, opts writer.Options, kvs []gguf.KV, tensors []gguf.TensorInfo) (*writer.Writer, error) {
	w, err := writer.Create(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, t := range tensors {
		wt := written(t, 0)
		if err := w.AddTensor(wt.Name, wt.Type, wt.Shape); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Start(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// copyTensor copies a tensor's bytes from src at off into w.
func copyTensor(w *writer.Writer, src *os.File, off int64, name string) error {
	tw, err := w.TensorWriterAt(name)
	if err != nil {
		return err
	}
	return tw.CopyFrom(src, off, 0, tw.Size())
}

// byteOrder is the input's byte order, kept by the output (llama.cpp reads
// and writes little-endian files only).
func byteOrder(in *ggufread.File) binary.AppendByteOrder {
	if in.ByteOrder == binary.ByteOrder(binary.BigEndian) {
		return binary.BigEndian
	}
	return binary.LittleEndian
}
