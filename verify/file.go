package verify

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/requantize"
)

// File is a GGUF model as verify reads it: one file, or a gguf-split set
// taken together as llama.cpp's loader takes it — the first shard's
// metadata and the tensors of every shard, in shard then file order.
type File struct {
	// Name is the path given to Open (the first shard's for a set).
	Name string
	// KVs are the (first shard's) metadata pairs in file order.
	KVs []gguf.KV
	// Tensors are every shard's tensor infos.
	Tensors []gguf.TensorInfo

	byName map[string]int // index into Tensors
	shard  []*ggufread.File
	close  func() error
}

// Open opens a GGUF file; a file with split.count > 1 must be the first
// shard of its set (PREFIX-00001-of-0000N.gguf), whose other shards are
// opened beside it.
func Open(path string) (*File, error) {
	in, err := requantize.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	f := &File{Name: path, KVs: in.Files[0].KVs, close: in.Close}
	for _, sf := range in.Files {
		for _, t := range sf.Tensors {
			f.Tensors = append(f.Tensors, t)
			f.shard = append(f.shard, sf)
		}
	}
	f.index()
	return f, nil
}

// FromGGUF makes a File of one open GGUF (closing the File leaves it open).
func FromGGUF(g *ggufread.File) *File {
	f := &File{Name: g.Name, KVs: g.KVs, Tensors: g.Tensors, close: func() error { return nil }}
	f.shard = make([]*ggufread.File, len(g.Tensors))
	for i := range f.shard {
		f.shard[i] = g
	}
	f.index()
	return f
}

func (f *File) index() {
	f.byName = make(map[string]int, len(f.Tensors))
	for i, t := range f.Tensors {
		f.byName[t.Name] = i
	}
}

// KV looks a metadata key up.
func (f *File) KV(key string) (gguf.Value, bool) {
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}

// Architecture is general.architecture, or "" when absent or not a string.
func (f *File) Architecture() string {
	v, _ := f.KV(gguf.KeyGeneralArchitecture)
	s, _ := v.Str()
	return s
}

// Tensor finds a tensor's info by name.
func (f *File) Tensor(name string) (*gguf.TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns a tensor's bytes in its type, from its shard's map.
func (f *File) TensorData(name string) ([]byte, error) {
	i, ok := f.byName[name]
	if !ok {
		return nil, fmt.Errorf("verify: %s: no tensor %q", f.Name, name)
	}
	return f.shard[i].TensorData(name)
}

// Close closes every shard Open opened.
func (f *File) Close() error { return f.close() }
