// Package pytorch reads PyTorch checkpoints without Python and without
// trusting them: torch.save's zip format (<folder>/data.pkl +
// <folder>/data/<key>, stored or deflated entries, either byte order), the
// legacy pre-1.6 format, Hugging Face shards (pytorch_model-*.bin with
// pytorch_model.bin.index.json) and Meta's original consolidated.NN.pth
// layout, whose model-parallel shards are merged on the fly.
//
// Pickles are run by a small restricted unpickler equivalent to
// torch.load(weights_only=True): torch's opcode list, torch's global
// allow-list, nothing else. A global outside the list is an ErrForbidden
// error naming it (`refusing pickle global "os.system"`); nothing named by
// a pickle is ever resolved to code. Tensor data is read lazily, straight
// from the file for stored entries and legacy storages, by streaming
// decompression for deflated ones.
package pytorch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
)

// Formats reported by Checkpoint.Format.
const (
	FormatZip          = "pytorch-zip"
	FormatLegacy       = "pytorch-legacy"
	FormatConsolidated = "meta-consolidated"
)

// Options tune how checkpoints are opened; the zero value (or nil) is the
// default.
type Options struct {
	Limits Limits
}

func (o *Options) limits() Limits {
	if o == nil {
		return Limits{}.withDefaults()
	}
	return o.Limits.withDefaults()
}

// tensorData is what a Checkpoint reads a tensor from: one stored view, or
// a merge of model-parallel shards.
type tensorData interface {
	// readElems fills dst with elements [first, first+count) of the tensor,
	// row-major, little-endian.
	readElems(ctx context.Context, dst []byte, first, count int64) error
}

// Checkpoint is an opened set of PyTorch checkpoint files. It implements
// readers.Source and readers.RawReader and is safe for concurrent use.
type Checkpoint struct {
	format  string
	infos   []readers.TensorInfo
	index   map[string]int
	data    []tensorData
	files   []*os.File
	inflate []*inflater
	params  []byte
}

var (
	_ readers.Source    = (*Checkpoint)(nil)
	_ readers.RawReader = (*Checkpoint)(nil)
)

// Format names the container: FormatZip, FormatLegacy (of the first file
// when several are open) or FormatConsolidated.
func (c *Checkpoint) Format() string { return c.format }

// Tensors lists the tensors: files in the order they were opened, and
// within a file in pickle (state-dict insertion) order — the order
// llama.cpp's converter visits them.
func (c *Checkpoint) Tensors() []readers.TensorInfo {
	out := slices.Clone(c.infos)
	for i := range out {
		out[i].Shape = slices.Clone(out[i].Shape)
	}
	return out
}

// Params returns the raw params.json of a Meta consolidated checkpoint, nil
// for other checkpoints or when the folder has none.
func (c *Checkpoint) Params() []byte { return c.params }

// readChunk is how many elements ReadFloat32 converts per read.
const readChunk = 1 << 18

// ReadFloat32 converts rows [row0, row0+nrows) of the named tensor to
// float32 into dst, reading a bounded number of elements at a time.
func (c *Checkpoint) ReadFloat32(ctx context.Context, name string, dst []float32, row0, nrows int) error {
	i, ok := c.index[name]
	if !ok {
		return fmt.Errorf("%w: %q", readers.ErrNotFound, name)
	}
	info := c.infos[i]
	first, count, err := readers.RowSpan(info, len(dst), row0, nrows)
	if err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	_, cols := readers.Rows(info.Shape)
	es := int64(info.DType.Size())
	// Chunks of whole rows where a row fits, so strided matrices keep their
	// column-order path.
	chunk := int64(readChunk)
	if cols > 0 && cols <= chunk {
		chunk = chunk / cols * cols
	}
	buf := make([]byte, min(chunk, count)*es)
	for done := int64(0); done < count; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, count-done)
		b := buf[:n*es]
		if err := c.data[i].readElems(ctx, b, first+done, n); err != nil {
			return c.readErr(info, err)
		}
		if err := readers.ToFloat32(dst[done:done+n], b, info.DType); err != nil {
			return c.readErr(info, err)
		}
		done += n
	}
	return nil
}

// RawBytes returns a copy of the named tensor's elements in their own
// dtype: little-endian, row-major, contiguous.
func (c *Checkpoint) RawBytes(name string) ([]byte, error) {
	i, ok := c.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", readers.ErrNotFound, name)
	}
	info := c.infos[i]
	n, err := readers.NumElements(info.Shape)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n*int64(info.DType.Size()))
	if err := c.data[i].readElems(context.Background(), b, 0, n); err != nil {
		return nil, c.readErr(info, err)
	}
	return b, nil
}

func (c *Checkpoint) readErr(info readers.TensorInfo, err error) error {
	var e *Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	sentinel := err
	if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) {
		sentinel = fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return &Error{File: info.File, Tensor: info.Name, Offset: -1, Msg: "reading tensor data", Err: sentinel}
}

// Close releases the files.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, d := range c.inflate {
		d.close()
	}
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files, c.inflate = nil, nil
	return errors.Join(errs...)
}

func (c *Checkpoint) add(info readers.TensorInfo, d tensorData) error {
	if _, dup := c.index[info.Name]; dup {
		return &Error{File: info.File, Tensor: info.Name, Offset: -1, Msg: "tensor name appears twice", Err: ErrFormat}
	}
	c.index[info.Name] = len(c.infos)
	c.infos = append(c.infos, info)
	c.data = append(c.data, d)
	return nil
}

// file is one opened checkpoint file and the tensors found in it.
type file struct {
	path    string
	format  string
	f       *os.File
	root    any
	tensors []namedTensor
}

type namedTensor struct {
	name string
	t    *tensor
}

// openFile opens one .bin / .pt / .pth file of either format and collects
// its tensors.
func openFile(path string, lim Limits) (*file, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	out, err := openReader(path, f, fi.Size(), lim)
	if err != nil {
		f.Close()
		return nil, err
	}
	out.f = f
	return out, nil
}

// openReader opens a checkpoint held in r (size bytes) and collects its
// tensors; path is only used in errors and as the file's name.
func openReader(path string, r io.ReaderAt, size int64, lim Limits) (*file, error) {
	var magic [4]byte
	n, _ := r.ReadAt(magic[:], 0)
	out := &file{path: path}
	var err error
	switch {
	case n == 4 && string(magic[:]) == "PK\x03\x04":
		// torch/serialization.py _is_zipfile: a local file header at 0.
		out.format = FormatZip
		out.root, err = openZip(path, r, size, lim)
	case n > 0 && magic[0] == opProto:
		// Legacy files are binary pickles; torch's weights-only unpickler
		// cannot read the text opcodes of protocols 0 and 1 anyway.
		out.format = FormatLegacy
		out.root, err = openLegacy(path, r, size, lim)
	case isTar(r):
		err = &Error{File: path, Offset: -1, Msg: "pre-0.4 tar checkpoint", Err: ErrUnsupported}
	default:
		err = &Error{File: path, Offset: 0, Msg: "not a PyTorch checkpoint: neither a zip archive nor a binary pickle", Err: ErrFormat}
	}
	if err != nil {
		return nil, err
	}
	if out.tensors, err = collectTensors(path, stateDict(out.root), lim); err != nil {
		return nil, err
	}
	return out, nil
}

// stateDict returns the mapping whose tensors a checkpoint holds: the
// top-level object, or its "model" entry when that is a mapping (training
// checkpoints {"model": state_dict, "optimizer": …}; llama.cpp's
// convert_legacy_llama.py lazy_load_torch_file does the same).
func stateDict(root any) any {
	if d, ok := root.(*pyDict); ok {
		if m, ok := d.get("model"); ok {
			if md, ok := m.(*pyDict); ok {
				return md
			}
		}
	}
	return root
}

// collectTensors walks the unpickled object and names every tensor by its
// path: mapping keys joined with ".", list and tuple items as "[i]"
// ("layers.0.attention.wq.weight", "nested.list_of_tensors[1]"). Other
// values (ints, strings, OrderedDict _metadata …) are skipped.
func collectTensors(path string, root any, lim Limits) ([]namedTensor, error) {
	var out []namedTensor
	visits := 0
	onPath := map[any]bool{}
	var walk func(v any, name string, depth int) error
	walk = func(v any, name string, depth int) error {
		switch v.(type) {
		case *tensor, *pyDict, *pyList, pyTuple:
		default:
			return nil // scalars, sets, bytes …: nothing to name
		}
		// Shared containers (memo) make the object a DAG whose paths can
		// be exponentially many: bound the walk, not just its depth.
		if visits++; visits > 4*lim.MaxStack {
			return &Error{File: path, Offset: -1, Msg: fmt.Sprintf("object graph has more than %d nodes to visit", 4*lim.MaxStack), Err: ErrLimit}
		}
		if depth > lim.MaxDepth {
			return &Error{File: path, Offset: -1, Msg: fmt.Sprintf("containers nested deeper than %d at %q", lim.MaxDepth, name), Err: ErrLimit}
		}
		switch x := v.(type) {
		case *tensor:
			if name == "" {
				return &Error{File: path, Offset: -1, Msg: "the checkpoint is a bare tensor, not a mapping of named tensors", Err: ErrUnsupported}
			}
			out = append(out, namedTensor{name, x})
		case *pyDict:
			if onPath[x] {
				return &Error{File: path, Offset: -1, Msg: fmt.Sprintf("mapping at %q contains itself", name), Err: ErrFormat}
			}
			onPath[x] = true
			for i, k := range x.keys {
				if err := walk(x.vals[i], join(name, keyName(k)), depth+1); err != nil {
					return err
				}
			}
			delete(onPath, x)
		case *pyList:
			if onPath[x] {
				return &Error{File: path, Offset: -1, Msg: fmt.Sprintf("list at %q contains itself", name), Err: ErrFormat}
			}
			onPath[x] = true
			for i, e := range x.items {
				if err := walk(e, name+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
			delete(onPath, x)
		case pyTuple:
			for i, e := range x {
				if err := walk(e, name+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, err
	}
	return out, nil
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// keyName renders a mapping key as a tensor-name component.
func keyName(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return shortRepr(k)
}

// relName is p relative to root when it lies under it, p otherwise.
func relName(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return p
}

// Open opens one or more PyTorch checkpoint files (zip or legacy; HF
// pytorch_model*.bin shards, single .pt/.pth files) as one Source. Tensors
// keep the file order given and the pickle order within each file; a name
// found in two files is an error. TensorInfo.File is relative to the first
// file's folder.
func Open(paths []string, opts *Options) (*Checkpoint, error) {
	if len(paths) == 0 {
		return nil, &Error{Offset: -1, Msg: "no files given", Err: ErrNoFiles}
	}
	lim := opts.limits()
	root := filepath.Dir(paths[0])
	c := &Checkpoint{index: map[string]int{}}
	for _, p := range paths {
		f, err := openFile(p, lim)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.files = append(c.files, f.f)
		c.collectInflaters(f)
		if c.format == "" {
			c.format = f.format
		}
		for _, nt := range f.tensors {
			info := readers.TensorInfo{Name: nt.name, DType: nt.t.dtype, Shape: nt.t.shape, File: relName(root, p)}
			if err := c.add(info, nt.t); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *Checkpoint) collectInflaters(f *file) {
	seen := map[*inflater]bool{}
	for _, nt := range f.tensors {
		if d, ok := nt.t.st.src.(*inflater); ok && !seen[d] {
			seen[d] = true
			c.inflate = append(c.inflate, d)
		}
	}
}

// IndexName is the Hugging Face index of sharded .bin checkpoints.
const IndexName = "pytorch_model.bin.index.json"

// maxIndexBytes caps an index file (a 1000-tensor index is ~100 KB).
const maxIndexBytes = 64 << 20

// OpenIndex opens the shards named by a pytorch_model.bin.index.json, in
// sorted file-name order as llama.cpp's converter does, and checks that the
// tensors in the shards are exactly those of the index's weight_map.
func OpenIndex(indexPath string, opts *Options) (*Checkpoint, error) {
	fail := func(format string, args ...any) error {
		return &Error{File: indexPath, Offset: -1, Msg: fmt.Sprintf(format, args...), Err: ErrIndex}
	}
	f, err := os.Open(indexPath)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(raw) > maxIndexBytes {
		return nil, &Error{File: indexPath, Offset: -1, Msg: fmt.Sprintf("index larger than %d bytes", maxIndexBytes), Err: ErrLimit}
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fail("parsing: %v", err)
	}
	if idx.WeightMap == nil {
		return nil, fail("no weight_map")
	}
	dir := filepath.Dir(indexPath)
	var shards []string
	seen := map[string]bool{}
	for _, shard := range idx.WeightMap {
		if !filepath.IsLocal(shard) || strings.ContainsAny(shard, `/\`) {
			return nil, fail("shard name %q is not a file name in the index's folder", shard)
		}
		if !seen[shard] {
			seen[shard] = true
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	paths := make([]string, len(shards))
	for i, s := range shards {
		paths[i] = filepath.Join(dir, s)
	}
	c, err := Open(paths, opts)
	if err != nil {
		return nil, err
	}
	var missing, extra []string
	for name := range idx.WeightMap {
		if _, ok := c.index[name]; !ok {
			missing = append(missing, name)
		}
	}
	for _, t := range c.infos {
		if _, ok := idx.WeightMap[t.Name]; !ok {
			extra = append(extra, t.Name)
		}
	}
	if len(missing)+len(extra) > 0 {
		c.Close()
		slices.Sort(missing)
		slices.Sort(extra)
		return nil, fail("tensors in the index but not the shards: %s; in the shards but not the index: %s", list(missing), list(extra))
	}
	return c, nil
}

// list renders names for an error message, cut after a few.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	const show = 5
	s := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		s += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return s
}

// OpenDir opens the PyTorch weights of a model folder, choosing like
// llama.cpp's converters: pytorch_model.bin.index.json when present (its
// shards); else every pytorch_model*.bin in sorted order; else Meta's
// consolidated.*.pth (OpenConsolidated); else a single *.pth, *.pt or *.bin
// file. Several candidate files of the last kind are ambiguous (an error).
func OpenDir(dir string, opts *Options) (*Checkpoint, error) {
	if _, err := os.Stat(filepath.Join(dir, IndexName)); err == nil {
		return OpenIndex(filepath.Join(dir, IndexName), opts)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var hf, consolidated, other []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasPrefix(n, "pytorch_model") && strings.HasSuffix(n, ".bin"):
			hf = append(hf, filepath.Join(dir, n))
		case consolidatedName(n) >= 0:
			consolidated = append(consolidated, n)
		case strings.HasSuffix(n, ".pth") || strings.HasSuffix(n, ".pt") || strings.HasSuffix(n, ".bin"):
			other = append(other, filepath.Join(dir, n))
		}
	}
	switch {
	case len(hf) > 0:
		slices.Sort(hf)
		return Open(hf, opts)
	case len(consolidated) > 0:
		return OpenConsolidated(dir, opts)
	case len(other) == 1:
		return Open(other, opts)
	case len(other) > 1:
		slices.Sort(other)
		return nil, &Error{File: dir, Offset: -1, Msg: "several PyTorch files and no index: " + list(other), Err: ErrNoFiles}
	}
	return nil, &Error{File: dir, Offset: -1, Msg: "no PyTorch checkpoint file", Err: ErrNoFiles}
}

// Sniff reports which container a file is without running any pickle:
// FormatZip when it starts with a zip local file header (torch's
// _is_zipfile), FormatLegacy when it starts with a binary pickle of a long
// int (PROTO, LONG1: how torch.save writes the legacy magic number), an
// ErrFormat error otherwise.
func Sniff(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b [4]byte
	n, _ := io.ReadFull(f, b[:])
	switch {
	case n == 4 && string(b[:]) == "PK\x03\x04":
		return FormatZip, nil
	case n >= 3 && b[0] == opProto && b[2] == opLong1:
		return FormatLegacy, nil
	}
	return "", &Error{File: path, Offset: 0, Msg: "not a PyTorch checkpoint", Err: ErrFormat}
}
