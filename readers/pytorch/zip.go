package pytorch

import (
	"archive/zip"
	"bufio"
	"cmp"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/ggufkit/ggufkit/readers"
)

// maxDeflateRatio bounds an entry's declared uncompressed size by its
// compressed size: DEFLATE cannot expand more than 1032:1 (258 bytes per
// 2-bit match code, RFC 1951), so a larger claim is a lie.
const maxDeflateRatio = 1032

// zipCheckpoint is a checkpoint in torch.save's zip format:
// <prefix>/data.pkl, <prefix>/byteorder, <prefix>/data/<key>, … under one
// top-level folder whose name varies (torch uses the file stem, "archive"
// in old releases).
type zipCheckpoint struct {
	path    string
	r       io.ReaderAt
	size    int64
	zr      *zip.Reader
	prefix  string // top folder with its trailing "/"
	entries map[string]*zip.File
	swap    bool
	lim     Limits
	// storages by key: several tensors may view one storage.
	storages map[string]*storage
}

func (z *zipCheckpoint) errf(entry string, off int64, sentinel error, format string, args ...any) error {
	return &Error{File: z.path, Entry: entry, Offset: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// openZip validates the zip's directory and entry layout, reads the byte
// order record and unpickles data.pkl; storage data is located but not read.
func openZip(path string, r io.ReaderAt, size int64, lim Limits) (any, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &Error{File: path, Offset: -1, Msg: "not a valid zip archive: " + err.Error(), Err: ErrFormat}
	}
	z := &zipCheckpoint{path: path, r: r, size: size, zr: zr, entries: map[string]*zip.File{}, lim: lim, storages: map[string]*storage{}}
	if err := z.checkEntries(); err != nil {
		return nil, err
	}
	if err := z.readByteOrder(); err != nil {
		return nil, err
	}
	return z.unpickle()
}

// checkEntries enforces what torch's PytorchStreamReader enforces (every
// entry inside the first entry's top folder) and more: no absolute, "..",
// "." or backslash components, no duplicate names, and entry data that lies
// inside the file without overlapping another entry.
func (z *zipCheckpoint) checkEntries() error {
	if len(z.zr.File) == 0 {
		return z.errf("", -1, ErrFormat, "empty zip archive")
	}
	first := z.zr.File[0].Name
	top, _, ok := strings.Cut(first, "/")
	if !ok || top == "" {
		return z.errf(first, -1, ErrFormat, "zip entry %q is not inside a top-level folder", first)
	}
	z.prefix = top + "/"
	type span struct {
		lo, hi int64
		name   string
	}
	spans := make([]span, 0, len(z.zr.File))
	for _, f := range z.zr.File {
		name := f.Name
		if !strings.HasPrefix(name, z.prefix) {
			return z.errf(name, -1, ErrFormat, "zip entry %q is outside the archive folder %q", name, z.prefix)
		}
		if strings.Contains(name, `\`) {
			return z.errf(name, -1, ErrFormat, "zip entry %q contains a backslash", name)
		}
		for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
			if part == "" || part == "." || part == ".." {
				return z.errf(name, -1, ErrFormat, "zip entry %q has an empty, \".\" or \"..\" path component", name)
			}
		}
		if _, dup := z.entries[name]; dup {
			return z.errf(name, -1, ErrFormat, "duplicate zip entry %q", name)
		}
		z.entries[name] = f
		data, err := f.DataOffset()
		if err != nil {
			return z.errf(name, -1, ErrFormat, "bad local header: %v", err)
		}
		// The local header (30 fixed bytes and the name) precedes the data;
		// archive/zip does not expose its offset.
		hdr := max(0, data-30-int64(len(name)))
		if f.CompressedSize64 > math.MaxInt64 || int64(f.CompressedSize64) > z.size-data {
			return z.errf(name, data, ErrFormat, "entry data (%d bytes at offset %d) runs past the end of the %d-byte file", f.CompressedSize64, data, z.size)
		}
		spans = append(spans, span{hdr, data + int64(f.CompressedSize64), name})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return z.errf(spans[i].name, spans[i].lo, ErrFormat, "zip entry overlaps entry %q (which ends at %d)", spans[i-1].name, spans[i-1].hi)
		}
	}
	return nil
}

// entry returns the record <prefix>/name with its declared size checked:
// stored entries must declare equal sizes, deflated ones a size DEFLATE can
// reach; other methods are unsupported.
func (z *zipCheckpoint) entry(name string) (*zip.File, error) {
	full := z.prefix + name
	f, ok := z.entries[full]
	if !ok {
		return nil, nil
	}
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != f.UncompressedSize64 {
			return nil, z.errf(full, -1, ErrFormat, "stored entry declares %d bytes compressed but %d uncompressed", f.CompressedSize64, f.UncompressedSize64)
		}
	case zip.Deflate:
		if f.UncompressedSize64/maxDeflateRatio > f.CompressedSize64 {
			return nil, z.errf(full, -1, ErrFormat, "deflated entry declares %d bytes from %d compressed bytes, more than DEFLATE can produce", f.UncompressedSize64, f.CompressedSize64)
		}
	default:
		return nil, z.errf(full, -1, ErrUnsupported, "zip compression method %d", f.Method)
	}
	if f.UncompressedSize64 > math.MaxInt64 {
		return nil, z.errf(full, -1, ErrFormat, "entry size %d overflows", f.UncompressedSize64)
	}
	return f, nil
}

// readByteOrder reads the optional "byteorder" record (absent: little
// endian, as torch assumes for files it wrote before the record existed).
func (z *zipCheckpoint) readByteOrder() error {
	f, err := z.entry("byteorder")
	if err != nil || f == nil {
		return err
	}
	if f.UncompressedSize64 > 16 {
		return z.errf(f.Name, -1, ErrFormat, "byteorder record of %d bytes", f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return z.errf(f.Name, -1, ErrFormat, "opening: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 17))
	if err != nil {
		return z.errf(f.Name, -1, ErrFormat, "reading: %v", err)
	}
	switch string(b) {
	case "little":
	case "big":
		z.swap = true
	default:
		return z.errf(f.Name, -1, ErrFormat, "unknown byte order %q", b)
	}
	return nil
}

func (z *zipCheckpoint) unpickle() (any, error) {
	const pkl = "data.pkl"
	f, err := z.entry(pkl)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, z.errf(z.prefix+pkl, -1, ErrFormat, "no %s record in the archive", pkl)
	}
	lim := z.lim.withDefaults()
	if int64(f.UncompressedSize64) > lim.MaxPickleBytes {
		return nil, z.errf(f.Name, -1, ErrLimit, "pickle of %d bytes exceeds the %d-byte limit", f.UncompressedSize64, lim.MaxPickleBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, z.errf(f.Name, -1, ErrFormat, "opening: %v", err)
	}
	defer rc.Close()
	u := newUnpickler(bufio.NewReader(rc), int64(f.UncompressedSize64), lim)
	u.persistentLoad = z.persistentLoad
	root, err := u.load()
	if err != nil {
		return nil, pickleErr(z.path, f.Name, err)
	}
	return root, nil
}

// pickleErr turns an unpickling failure into an *Error for file / entry.
func pickleErr(path, entry string, err error) error {
	var pe *pickleError
	if errors.As(err, &pe) {
		return &Error{File: path, Entry: entry, Offset: pe.off, Msg: pe.msg, Err: pe.err}
	}
	return &Error{File: path, Entry: entry, Offset: -1, Msg: "unpickling", Err: err}
}

// persistentLoad resolves ('storage', storage_type, key, location, numel)
// (torch/serialization.py _load, persistent_load) to the storage record
// data/<key>, whose size must be numel × element size.
func (z *zipCheckpoint) persistentLoad(pid pyTuple) (any, error) {
	if len(pid) != 5 {
		return nil, failf(ErrFormat, "storage persistent id has %d items, want 5", len(pid))
	}
	dt, err := storageType(pid[1])
	if err != nil {
		return nil, err
	}
	key, err := storageKey(pid[2])
	if err != nil {
		return nil, err
	}
	if _, ok := pid[3].(string); !ok && asciiString(pid[3]) == "" {
		return nil, failf(ErrFormat, "storage location is a %s, not a str", typeName(pid[3]))
	}
	nbytes, err := storageBytes(pid[4], dt)
	if err != nil {
		return nil, err
	}
	if st, ok := z.storages[key]; ok {
		if st.dtype != dt {
			return nil, failf(ErrUnsupported, "storage %q is viewed as both %s and %s", key, st.dtype, dt)
		}
		return st, nil
	}
	name := "data/" + key
	f, err := z.entry(name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, failf(ErrFormat, "storage record %s%s not found", z.prefix, name)
	}
	if int64(f.UncompressedSize64) != nbytes {
		return nil, failf(ErrFormat, "storage record %s holds %d bytes but the pickle declares %d (%s elements of %s)",
			f.Name, f.UncompressedSize64, nbytes, shortRepr(pid[4]), dt)
	}
	st := &storage{key: key, dtype: dt, nbytes: nbytes, swap: z.swap}
	if f.Method == zip.Store {
		off, err := f.DataOffset()
		if err != nil {
			return nil, failf(ErrFormat, "storage record %s: %v", f.Name, err)
		}
		st.src = io.NewSectionReader(z.r, off, nbytes)
	} else {
		st.src = &inflater{f: f, size: nbytes}
	}
	z.storages[key] = st
	return st, nil
}

// storageType reads a persistent id's storage type: a typed storage class,
// or torch.storage.UntypedStorage (bytes; _rebuild_tensor_v3 gives the dtype).
func storageType(v any) (readers.DType, error) {
	g, ok := v.(*pyGlobal)
	if !ok {
		return "", failf(ErrFormat, "storage type is a %s", typeName(v))
	}
	switch g.kind {
	case gStorageType:
		return g.dtype, nil
	case gUntypedStorage:
		return readers.U8, nil
	}
	return "", failf(ErrFormat, "storage type %s is not a storage class", g.name)
}

// storageKey accepts the keys torch writes: decimal numbers (0, 1, … in zip
// files, object ids in legacy ones). Anything else — in particular a key
// that would name a path outside data/ — is refused.
func storageKey(v any) (string, error) {
	s := asciiString(v)
	if s == "" || len(s) > 32 {
		return "", failf(ErrFormat, "storage key %s is not a decimal number", shortRepr(v))
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return "", failf(ErrFormat, "storage key %q is not a decimal number", s)
		}
	}
	return s, nil
}

// storageBytes returns numel × element size, overflow-checked.
func storageBytes(v any, dt readers.DType) (int64, error) {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, failf(ErrFormat, "storage element count %s is not a non-negative int64", shortRepr(v))
	}
	es := int64(dt.Size())
	if n > math.MaxInt64/es {
		return 0, failf(ErrFormat, "storage of %d %s elements overflows", n, dt)
	}
	return n * es, nil
}

// inflater reads a deflated zip entry at arbitrary offsets by streaming
// through it: forward reads continue from the current position, a read
// behind it restarts from the beginning. Memory stays at the decompressor's
// 32 KiB window plus io.CopyN's buffer, whatever the entry's size.
type inflater struct {
	f    *zip.File
	size int64

	mu  sync.Mutex
	rc  io.ReadCloser
	pos int64
}

// ReadAt implements io.ReaderAt.
func (d *inflater) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > d.size {
		return 0, fmt.Errorf("%w: read at %d of a %d-byte entry", ErrFormat, off, d.size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rc == nil || off < d.pos {
		if d.rc != nil {
			d.rc.Close()
		}
		raw, err := d.f.OpenRaw()
		if err != nil {
			return 0, err
		}
		d.rc, d.pos = flate.NewReader(raw), 0
	}
	if skip := off - d.pos; skip > 0 {
		n, err := io.CopyN(io.Discard, d.rc, skip)
		d.pos += n
		if err != nil {
			return 0, d.fail(err)
		}
	}
	want := min(int64(len(p)), d.size-off)
	n, err := io.ReadFull(d.rc, p[:want])
	d.pos += int64(n)
	if err != nil {
		return n, d.fail(err)
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (d *inflater) fail(err error) error {
	d.rc.Close()
	d.rc = nil
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: deflated entry %q ends before its declared %d bytes", ErrFormat, d.f.Name, d.size)
	}
	return fmt.Errorf("%w: inflating entry %q: %v", ErrFormat, d.f.Name, err)
}

// close releases the decompressor.
func (d *inflater) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rc != nil {
		d.rc.Close()
		d.rc = nil
	}
}
