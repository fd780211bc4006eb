// Package writer writes GGUF files by placeholder and backfill: once the
// metadata and tensor infos are declared, the header size is known, every
// tensor's offset is fixed, and tensor bytes may be written in any order and
// concurrently. Close writes the header, syncs and renames the temporary file
// over the destination; on any failure the destination is left untouched.
//
// The layout is gguf.cpp's (gguf_write_out): header, key/value pairs, tensor
// infos, zero padding to the alignment, then each tensor's data followed by
// zero padding to the alignment.
package writer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ggufkit/ggufkit/gguf"
)

// Sentinel errors.
var (
	// ErrExists: the destination exists and Overwrite was not asked for.
	ErrExists = errors.New("writer: destination exists")
	// ErrState: a method was called at the wrong stage (e.g. AddTensor after Start).
	ErrState = errors.New("writer: wrong stage")
	// ErrIncomplete: Close found a tensor whose bytes were not all written.
	ErrIncomplete = errors.New("writer: tensor data incomplete")
	// ErrMetadataSize: a metadata change after Start altered the header size.
	ErrMetadataSize = errors.New("writer: metadata size changed after Start")
)

// Options configure a Writer.
type Options struct {
	// Alignment of the data section and of every tensor; 0 means the value of
	// a general.alignment KV if one is set, else 32. A general.alignment KV
	// that disagrees is an error at Start.
	Alignment uint32
	// Overwrite allows replacing an existing destination.
	Overwrite bool
	// ByteOrder of every number in the file; nil means little-endian.
	ByteOrder binary.AppendByteOrder
	// Version is the GGUF version written; 0 means 3.
	Version uint32
	// OmitFinalPad leaves out the padding after the last tensor (after the
	// header when there is no tensor). gguf.cpp and gguf-py always write it;
	// this exists to reproduce files of writers that don't.
	OmitFinalPad bool
}

type tensor struct {
	info    gguf.TensorInfo
	size    uint64
	written atomic.Uint64
}

// Writer writes one GGUF file. Declare KVs and tensors, call Start, write
// tensor data (concurrently if wanted), then Close; or Abort at any time.
type Writer struct {
	path string
	opts Options
	tmp  *os.File
	// tmpName is the temporary file's name, "" while it has none (Linux's
	// O_TMPFILE).
	tmpName string
	ctx     context.Context

	mu         sync.Mutex
	kvs        []gguf.KV
	kvIndex    map[string]int
	tensors    []*tensor
	byName     map[string]*tensor
	started    bool
	done       bool
	err        error // set when aborted
	alignment  uint64
	metaSize   int
	dataOffset int64
	total      int64
	stopCtx    func() bool
}

// Create prepares to write a GGUF at path: it refuses an existing
// destination unless opts.Overwrite, and creates the temporary file in the
// same directory. If ctx is cancelled before Close finishes, the temporary
// file is removed and Close fails.
func Create(ctx context.Context, path string, opts Options) (*Writer, error) {
	if opts.ByteOrder == nil {
		opts.ByteOrder = binary.LittleEndian
	}
	if opts.Version == 0 {
		opts.Version = gguf.Version
	}
	if opts.Version < 2 || opts.Version > gguf.Version {
		return nil, fmt.Errorf("writer: %s: cannot write GGUF version %d", path, opts.Version)
	}
	if opts.Alignment != 0 && opts.Alignment&(opts.Alignment-1) != 0 {
		return nil, fmt.Errorf("writer: %s: alignment %d is not a power of 2", path, opts.Alignment)
	}
	if !opts.Overwrite {
		if _, err := os.Lstat(path); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrExists, path)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStale(ctx, dir, base)
	tmp, tmpName, err := createTemp(dir, base)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, opts: opts, tmp: tmp, tmpName: tmpName, ctx: ctx, kvIndex: map[string]int{}, byName: map[string]*tensor{}}
	w.stopCtx = context.AfterFunc(ctx, func() { w.abort(fmt.Errorf("writer: %s: %w", path, context.Cause(ctx))) })
	return w, nil
}

// SetKV sets key to v. A new key is appended; an existing key keeps its
// position (as gguf-py does). After Start, values may still change, provided
// the encoded header size stays the same (Close checks).
func (w *Writer) SetKV(key string, v gguf.Value) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i].Value = v
		return
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, gguf.KV{Key: key, Value: v})
}

// DeleteKV removes key (before Start only; a no-op when absent).
func (w *Writer) DeleteKV(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("%w: DeleteKV(%q) after Start", ErrState, key)
	}
	i, ok := w.kvIndex[key]
	if !ok {
		return nil
	}
	w.kvs = append(w.kvs[:i], w.kvs[i+1:]...)
	delete(w.kvIndex, key)
	for j := i; j < len(w.kvs); j++ {
		w.kvIndex[w.kvs[j].Key] = j
	}
	return nil
}

// KVs returns a copy of the pairs in file order.
func (w *Writer) KVs() []gguf.KV {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]gguf.KV(nil), w.kvs...)
}

// AddTensor declares a tensor (before Start). Tensors are laid out in the
// order they are added; shape is in GGUF order and stored with as many
// dimensions as given.
func (w *Writer) AddTensor(name string, typ gguf.Type, shape []uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("%w: AddTensor(%q) after Start", ErrState, name)
	}
	if _, dup := w.byName[name]; dup {
		return fmt.Errorf("writer: tensor %q added twice", name)
	}
	if len(name) > gguf.MaxNameLength {
		return fmt.Errorf("writer: tensor %q: name is %d bytes, the limit is %d", name, len(name), gguf.MaxNameLength)
	}
	if len(shape) > gguf.MaxDims {
		return fmt.Errorf("writer: tensor %q: %d dimensions, the limit is %d", name, len(shape), gguf.MaxDims)
	}
	if !typ.Valid() {
		return fmt.Errorf("writer: tensor %q: invalid type %s", name, typ)
	}
	t := &tensor{info: gguf.TensorInfo{Name: name, Type: typ, Shape: append([]uint64(nil), shape...)}}
	size, ok := t.info.Size()
	if !ok {
		return fmt.Errorf("writer: tensor %q: shape %v does not fit type %s", name, shape, typ)
	}
	t.size = size
	w.tensors = append(w.tensors, t)
	w.byName[name] = t
	return nil
}

// Start fixes the layout: the header size, every tensor's offset and the file
// size. After it, tensor data may be written.
func (w *Writer) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.startLocked()
}

func (w *Writer) startLocked() error {
	if w.err != nil {
		return w.err
	}
	if w.started {
		return fmt.Errorf("%w: Start called twice", ErrState)
	}
	align := uint64(w.opts.Alignment)
	if i, ok := w.kvIndex[gguf.KeyGeneralAlignment]; ok {
		a, isU32 := w.kvs[i].Value.Any().(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 || (align != 0 && uint64(a) != align) {
			return fmt.Errorf("writer: %s: general.alignment %#v must be a uint32 power of 2 equal to the alignment option", w.path, w.kvs[i].Value)
		}
		align = uint64(a)
	}
	if align == 0 {
		align = gguf.DefaultAlignment
	}
	w.alignment = align
	var off uint64
	for _, t := range w.tensors {
		t.info.Offset = off
		padded, ok := gguf.AlignUp(t.size, align)
		if !ok {
			return fmt.Errorf("writer: tensor %q: size overflows", t.info.Name)
		}
		off += padded
	}
	w.metaSize = len(w.encodeHeader())
	dataOff, _ := gguf.AlignUp(uint64(w.metaSize), align)
	w.dataOffset = int64(dataOff)
	w.total = w.dataOffset + int64(off)
	if w.opts.OmitFinalPad {
		if n := len(w.tensors); n > 0 {
			last := w.tensors[n-1]
			w.total = w.dataOffset + int64(last.info.Offset+last.size)
		} else {
			w.total = int64(w.metaSize)
		}
	}
	// The file is sized now: unwritten ranges (all padding) read as zeros.
	if err := w.tmp.Truncate(w.total); err != nil {
		return w.failLocked(fmt.Errorf("writer: %s: %w", w.path, err))
	}
	w.started = true
	return nil
}

func (w *Writer) encodeHeader() []byte {
	e := gguf.NewEncoder(w.opts.ByteOrder)
	e.Header(w.opts.Version, uint64(len(w.tensors)), uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.KV(kv)
	}
	for _, t := range w.tensors {
		e.TensorInfo(t.info)
	}
	return e.Bytes()
}

// DataOffset is the absolute offset of the data section (after Start).
func (w *Writer) DataOffset() int64 { return w.dataOffset }

// Size is the final file size (after Start).
func (w *Writer) Size() int64 { return w.total }

// Tensors returns the declared tensor infos with their offsets (after Start).
func (w *Writer) Tensors() []gguf.TensorInfo {
	out := make([]gguf.TensorInfo, len(w.tensors))
	for i, t := range w.tensors {
		out[i] = t.info
	}
	return out
}

func (w *Writer) lookup(name string) (*tensor, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	if !w.started {
		return nil, fmt.Errorf("%w: tensor %q written before Start", ErrState, name)
	}
	if w.done {
		return nil, fmt.Errorf("%w: tensor %q written after Close", ErrState, name)
	}
	t, ok := w.byName[name]
	if !ok {
		return nil, fmt.Errorf("writer: tensor %q was not declared", name)
	}
	return t, nil
}

// WriteTensor writes all of a tensor's bytes. Safe for concurrent use.
func (w *Writer) WriteTensor(name string, data []byte) error {
	tw, err := w.TensorWriterAt(name)
	if err != nil {
		return err
	}
	if uint64(len(data)) != tw.t.size {
		return fmt.Errorf("writer: tensor %q: %d bytes given, its size is %d", name, len(data), tw.t.size)
	}
	_, err = tw.WriteAt(data, 0)
	return err
}

// TensorWriter writes parts of one tensor's data at offsets relative to the
// tensor's start. Safe for concurrent use; every byte must be written exactly
// once before Close.
type TensorWriter struct {
	w *Writer
	t *tensor
}

// TensorWriterAt returns a writer for the named tensor's data.
func (w *Writer) TensorWriterAt(name string) (*TensorWriter, error) {
	t, err := w.lookup(name)
	if err != nil {
		return nil, err
	}
	return &TensorWriter{w: w, t: t}, nil
}

// Size is the tensor's byte size.
func (tw *TensorWriter) Size() int64 { return int64(tw.t.size) }

// WriteAt writes p at offset off of the tensor's data.
func (tw *TensorWriter) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || uint64(off)+uint64(len(p)) > tw.t.size {
		return 0, fmt.Errorf("writer: tensor %q: write of %d bytes at %d exceeds its %d bytes", tw.t.info.Name, len(p), off, tw.t.size)
	}
	if err := tw.w.failed(); err != nil {
		return 0, err
	}
	at := tw.w.dataOffset + int64(tw.t.info.Offset) + off
	n, err := tw.w.tmp.WriteAt(p, at)
	tw.t.written.Add(uint64(n))
	if err == nil {
		startWriteback(tw.w.tmp, at, int64(n))
	}
	if err != nil {
		err = fmt.Errorf("writer: %s: tensor %q at offset %d: %w", tw.w.path, tw.t.info.Name, off, err)
		tw.w.abort(err)
	}
	return n, err
}

func (w *Writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkCtxLocked()
	return w.err
}

// checkCtxLocked fails the writer if its context is done (the AfterFunc
// that does the same runs asynchronously and may not have run yet).
func (w *Writer) checkCtxLocked() {
	if w.err == nil && !w.done && w.ctx.Err() != nil {
		w.failLocked(fmt.Errorf("writer: %s: %w", w.path, context.Cause(w.ctx)))
	}
}

// Close checks every tensor was written, writes the header, syncs, and
// renames the temporary file over the destination. On failure the
// temporary file is removed and the destination left as it was.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkCtxLocked()
	if w.err != nil {
		return w.err
	}
	if w.done {
		return nil
	}
	if !w.started {
		// A file without tensor data (vocabulary only) needs no explicit Start.
		if err := w.startLocked(); err != nil {
			return err
		}
	}
	w.done = true
	w.stopCtx()
	for _, t := range w.tensors {
		if got := t.written.Load(); got != t.size {
			return w.failLocked(fmt.Errorf("%w: %s: tensor %q has %d of %d bytes written", ErrIncomplete, w.path, t.info.Name, got, t.size))
		}
	}
	hdr := w.encodeHeader()
	if len(hdr) != w.metaSize {
		return w.failLocked(fmt.Errorf("%w: %s: header is %d bytes, %d were reserved", ErrMetadataSize, w.path, len(hdr), w.metaSize))
	}
	if _, err := w.tmp.WriteAt(hdr, 0); err != nil {
		return w.failLocked(fmt.Errorf("writer: %s: %w", w.path, err))
	}
	if err := w.tmp.Sync(); err != nil {
		return w.failLocked(fmt.Errorf("writer: %s: %w", w.path, err))
	}
	if err := w.tmp.Chmod(0o644); err != nil {
		return w.failLocked(fmt.Errorf("writer: %s: %w", w.path, err))
	}
	if w.tmpName == "" {
		// An unnamed file is linked while its descriptor is open.
		err := w.publish()
		if cerr := w.tmp.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writer: %s: %w", w.path, cerr)
			os.Remove(w.path)
		}
		if err != nil {
			w.err = err
			return err
		}
		syncDir(filepath.Dir(w.path))
		return nil
	}
	if err := w.tmp.Close(); err != nil {
		return w.failLocked(fmt.Errorf("writer: %s: %w", w.path, err))
	}
	if err := w.publish(); err != nil {
		os.Remove(w.tmpName)
		w.err = err
		return err
	}
	syncDir(filepath.Dir(w.path))
	return nil
}

// publish moves the finished temporary file to the destination: an
// unnamed one is linked in place (publishUnnamed), a named one moved by
// publishFile.
func (w *Writer) publish() error {
	if w.tmpName == "" {
		return w.publishUnnamed()
	}
	return publishFile(w.tmpName, w.path, w.opts.Overwrite)
}

// publishFile moves a finished temporary file to path: a rename when
// overwriting, otherwise a hard link (which fails if the destination
// appeared meanwhile) followed by removing the temporary name.
func publishFile(tmp, path string, overwrite bool) error {
	if overwrite {
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("writer: %w", err)
		}
		return nil
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		// Filesystems without hard links: fall back to a checked rename.
		if _, statErr := os.Lstat(path); statErr == nil {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("writer: %w", err)
		}
		return nil
	}
	return os.Remove(tmp)
}

// Abort discards the output: the temporary file is removed and later calls
// fail. It is safe to call at any time, also after a failure.
func (w *Writer) Abort() error {
	w.abort(fmt.Errorf("writer: %s: aborted", w.path))
	return nil
}

func (w *Writer) abort(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done && w.err == nil {
		return // already published
	}
	w.failLocked(err)
}

func (w *Writer) failLocked(err error) error {
	if w.err != nil {
		return w.err
	}
	w.err = err
	w.done = true
	if w.stopCtx != nil {
		w.stopCtx()
	}
	w.tmp.Close()
	if w.tmpName != "" {
		os.Remove(w.tmpName)
	}
	return err
}

// publishUnnamed links the unnamed temporary file at the destination:
// directly when it must not exist, else under a temporary name renamed over
// it.
func (w *Writer) publishUnnamed() error {
	if !w.opts.Overwrite {
		if err := linkTemp(w.tmp, w.path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%w: %s", ErrExists, w.path)
			}
			return fmt.Errorf("writer: %w", err)
		}
		return nil
	}
	dir, base := filepath.Split(w.path)
	for i := 0; ; i++ {
		name := filepath.Join(dir, fmt.Sprintf(".%s.%d%d.partial", base, os.Getpid(), i))
		err := linkTemp(w.tmp, name)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return fmt.Errorf("writer: %w", err)
		}
		if err := os.Rename(name, w.path); err != nil {
			os.Remove(name)
			return fmt.Errorf("writer: %w", err)
		}
		return nil
	}
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

var _ io.WriterAt = (*TensorWriter)(nil)
