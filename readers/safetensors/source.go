package safetensors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
)

// IndexName is the file naming a sharded checkpoint's tensors and shards,
// the only index name llama.cpp's converter reads.
const IndexName = "model.safetensors.index.json"

// maxIndexSize bounds the index file read into memory. Real indexes are
// well under 1 MB (≈ 100 bytes per tensor).
const maxIndexSize = 64 << 20

// maxListed is how many offending names an index error lists.
const maxListed = 5

// Source is one or more safetensors files read as one readers.Source. It
// also implements readers.RawReader. Its methods are safe for concurrent
// use, except Close.
type Source struct {
	root    string
	files   []*File
	tensors []readers.TensorInfo
	where   map[string]*File
}

var (
	_ readers.Source     = (*Source)(nil)
	_ readers.RawReader  = (*Source)(nil)
	_ readers.RowReader  = (*Source)(nil)
	_ readers.FileRanger = (*Source)(nil)
)

// Open opens path, which is a .safetensors file, an index
// (model.safetensors.index.json or any *.index.json naming safetensors
// shards), or a folder. For a folder it opens, like llama.cpp's converter:
// the shards IndexName names when that file exists; else every file whose
// name starts with "model" and ends with ".safetensors"; else (an
// extension) every *.safetensors file. It returns an error wrapping
// ErrNoFiles when the folder holds none.
func Open(path string) (*Source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Offset: -1, Msg: "open", Err: err}
	}
	if !st.IsDir() {
		if strings.HasSuffix(path, ".json") {
			return OpenIndex(path)
		}
		return OpenFiles(filepath.Dir(path), []string{filepath.Base(path)})
	}
	index := filepath.Join(path, IndexName)
	if _, err := os.Stat(index); err == nil {
		return OpenIndex(index)
	}
	names, err := PartNames(path)
	if err != nil {
		return nil, err
	}
	return OpenFiles(path, names)
}

// PartNames returns the safetensors files of a folder without an index, in
// the order llama.cpp's converter reads them (get_model_part_names: the
// names starting with "model" and ending with ".safetensors", sorted);
// when there are none, every *.safetensors file, sorted. It returns an
// error wrapping ErrNoFiles when there is none at all.
func PartNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &Error{File: dir, Offset: -1, Msg: "read folder", Err: err}
	}
	var model, all []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".safetensors") || e.IsDir() {
			continue
		}
		all = append(all, n)
		if strings.HasPrefix(n, "model") {
			model = append(model, n)
		}
	}
	if len(model) == 0 {
		model = all
	}
	if len(model) == 0 {
		return nil, &Error{File: dir, Offset: -1, Msg: "folder has no .safetensors file", Err: ErrNoFiles}
	}
	slices.Sort(model)
	return model, nil
}

// OpenFiles opens the named files (relative to root) as one source. Tensors
// are listed file by file in the given order and by name within a file
// (llama.cpp's index_tensors reads safetensors names sorted). A name held
// by two files is an error.
func OpenFiles(root string, names []string) (*Source, error) {
	return OpenFilesWith(root, names, localOpener(root))
}

// An Opener opens the safetensors file name of a model, relative to its
// root: a local file (OpenFile) or one read some other way (NewFile over a
// remote reader, see readers/hub).
type Opener func(name string) (*File, error)

// localOpener opens the files under root.
func localOpener(root string) Opener {
	return func(name string) (*File, error) { return OpenFile(filepath.Join(root, name)) }
}

// OpenFilesWith is OpenFiles with the files opened by open.
func OpenFilesWith(root string, names []string, open Opener) (*Source, error) {
	s := &Source{root: root, where: make(map[string]*File)}
	for _, name := range names {
		f, err := open(name)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.files = append(s.files, f)
		ents := slices.Clone(f.hdr.Tensors)
		slices.SortFunc(ents, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
		for _, e := range ents {
			if other, dup := s.where[e.Name]; dup {
				s.Close()
				return nil, &Error{File: f.path, Tensor: e.Name, Offset: -1, Err: ErrFormat,
					Msg: "tensor also stored in " + other.path}
			}
			s.where[e.Name] = f
			s.tensors = append(s.tensors, readers.TensorInfo{Name: e.Name, DType: e.DType, Shape: e.Shape, File: name})
		}
	}
	return s, nil
}

// index is the part of a sharded checkpoint's index file that matters.
type index struct {
	WeightMap map[string]string `json:"weight_map"`
}

// OpenIndex opens the shards a safetensors index names (sorted by file name,
// as llama.cpp does) and checks that index and shards agree: every shard
// exists, every tensor of the index is in the shard the index names, and
// every tensor of a shard is in the index. A mismatch is an error wrapping
// ErrIndex that lists the first few offenders.
func OpenIndex(path string) (*Source, error) {
	root := filepath.Dir(path)
	exists := func(shard string) bool {
		_, err := os.Stat(filepath.Join(root, shard))
		return !errors.Is(err, fs.ErrNotExist)
	}
	return OpenIndexWith(path, localOpener(root), exists)
}

// OpenIndexWith is OpenIndex for an index file on disk whose shards are
// opened by open; exists tells whether a shard is there.
func OpenIndexWith(path string, open Opener, exists func(shard string) bool) (*Source, error) {
	fail := func(err error, format string, args ...any) error {
		return &Error{File: path, Offset: -1, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fail(err, "open")
	}
	if st.Size() > maxIndexSize {
		return nil, fail(ErrIndex, "index is %d bytes, more than the %d-byte limit", st.Size(), maxIndexSize)
	}
	js, err := os.ReadFile(path)
	if err != nil {
		return nil, fail(err, "read")
	}
	if readers.IsLFSPointer(js) {
		return nil, fmt.Errorf("%s: %w", path, readers.ErrLFSPointer)
	}
	var idx index
	if err := json.Unmarshal(js, &idx); err != nil {
		return nil, fail(ErrIndex, "invalid index JSON: %v", err)
	}
	if idx.WeightMap == nil {
		return nil, fail(ErrIndex, `index has no "weight_map" object`)
	}
	var shards []string
	for _, shard := range idx.WeightMap {
		if !filepath.IsLocal(shard) {
			return nil, fail(ErrIndex, "shard name %q is not a file inside the model folder", shard)
		}
		shards = append(shards, shard)
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
	var missing []string
	for _, shard := range shards {
		if !exists(shard) {
			missing = append(missing, shard)
		}
	}
	if len(missing) > 0 {
		return nil, fail(ErrIndex, "%d shard(s) named by the index are missing: %s", len(missing), list(missing))
	}
	s, err := OpenFilesWith(filepath.Dir(path), shards, open)
	if err != nil {
		return nil, err
	}
	if err := s.checkIndex(idx.WeightMap); err != nil {
		s.Close()
		return nil, fail(ErrIndex, "%v", err)
	}
	return s, nil
}

// checkIndex compares the index's weight map with the opened shards.
func (s *Source) checkIndex(weightMap map[string]string) error {
	var notInShard, notInIndex []string
	inFile := make(map[string]string, len(s.tensors))
	for _, t := range s.tensors {
		inFile[t.Name] = t.File
	}
	for _, name := range slices.Sorted(maps.Keys(weightMap)) {
		shard := weightMap[name]
		file, ok := inFile[name]
		switch {
		case !ok:
			notInShard = append(notInShard, fmt.Sprintf("%q (in no shard; index says %s)", name, shard))
		case filepath.Clean(file) != filepath.Clean(shard):
			notInShard = append(notInShard, fmt.Sprintf("%q (in %s; index says %s)", name, file, shard))
		}
	}
	for _, t := range s.tensors {
		if _, ok := weightMap[t.Name]; !ok {
			notInIndex = append(notInIndex, fmt.Sprintf("%q (in %s)", t.Name, t.File))
		}
	}
	var msgs []string
	if len(notInShard) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d tensor(s) of the index are not in the shard it names: %s", len(notInShard), list(notInShard)))
	}
	if len(notInIndex) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d shard tensor(s) are not in the index: %s", len(notInIndex), list(notInIndex)))
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// list joins the first maxListed items, noting how many more there are.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, … and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// Format returns "safetensors".
func (s *Source) Format() string { return "safetensors" }

// Root returns the folder the tensors' File paths are relative to.
func (s *Source) Root() string { return s.root }

// Files returns the opened files, in tensor order (for their headers and
// __metadata__).
func (s *Source) Files() []*File { return s.files }

// Tensors lists every tensor: file by file, by name within a file.
func (s *Source) Tensors() []readers.TensorInfo { return s.tensors }

func (s *Source) file(name string) (*File, error) {
	f, ok := s.where[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", readers.ErrNotFound, name)
	}
	return f, nil
}

// ReadFloat32 converts rows [row0, row0+nrows) of the named tensor to
// float32 (see readers.Source).
func (s *Source) ReadFloat32(ctx context.Context, name string, dst []float32, row0, nrows int) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.ReadFloat32(ctx, name, dst, row0, nrows)
}

// ReadRows copies rows of the named tensor's stored bytes into dst.
func (s *Source) ReadRows(ctx context.Context, name string, dst []byte, row0, nrows int) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.ReadRows(ctx, name, dst, row0, nrows)
}

// VisitRows hands out rows of the named tensor's stored bytes (see
// readers.RowReader).
func (s *Source) VisitRows(ctx context.Context, name string, row0, nrows int, fn func(first int64, b []byte) error) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.VisitRows(ctx, name, row0, nrows, fn)
}

// FileRange returns the file and byte range of the named tensor's stored
// data (see readers.FileRanger).
func (s *Source) FileRange(name string) (*os.File, int64, int64, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, 0, 0, err
	}
	return f.FileRange(name)
}

// RawBytes returns the stored bytes of the named tensor (see
// readers.RawReader).
func (s *Source) RawBytes(name string) ([]byte, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.RawBytes(name)
}

// Close closes every file; the first error is returned.
func (s *Source) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
