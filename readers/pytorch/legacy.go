package pytorch

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// The legacy (pre-1.6, non-zip) format, torch/serialization.py
// _legacy_save / _legacy_load: five pickles back to back — the magic
// number, the protocol version, a sys_info dict, the object (storages as
// persistent ids), the list of storage keys — then, for each key in that
// order, an 8-byte little-endian element count and the storage's raw
// little-endian bytes.

// legacyMagic is torch's MAGIC_NUMBER; legacyProtocol its PROTOCOL_VERSION.
var legacyMagic, _ = new(big.Int).SetString("1950a86a20f9469cfc6c", 16)

const legacyProtocol = 1001

// tarMagicOffset / tarMagic identify the pre-0.4 tar layout ("ustar" at
// byte 257 of a tar header).
const tarMagicOffset = 257

var tarMagic = []byte("ustar")

// legacyCheckpoint is the state of one legacy file being opened.
type legacyCheckpoint struct {
	path string
	r    io.ReaderAt
	size int64
	// roots are the storages by root key; views are legacy storage slices
	// (view_metadata) by view key.
	roots map[string]*storage
	views map[string]*storage
}

func openLegacy(path string, r io.ReaderAt, size int64, lim Limits) (any, error) {
	l := &legacyCheckpoint{path: path, r: r, size: size, roots: map[string]*storage{}, views: map[string]*storage{}}
	br := bufio.NewReader(io.NewSectionReader(r, 0, size))
	var off int64
	load := func(what string, persistent bool) (any, error) {
		u := newUnpickler(br, size-off, lim)
		if persistent {
			u.persistentLoad = l.persistentLoad
		}
		v, err := u.load()
		if err != nil {
			var pe *pickleError
			if errors.As(err, &pe) {
				pe.off += off
			}
			e := pickleErr(path, "", err).(*Error)
			e.Msg = what + ": " + e.Msg
			return nil, e
		}
		off += u.off
		return v, nil
	}
	magic, err := load("magic number pickle", false)
	if err != nil {
		return nil, err
	}
	if !isInt(magic, legacyMagic) {
		return nil, &Error{File: path, Offset: 0, Msg: "not a PyTorch checkpoint: neither a zip archive nor the legacy magic number", Err: ErrFormat}
	}
	proto, err := load("protocol version pickle", false)
	if err != nil {
		return nil, err
	}
	if p, ok := proto.(int64); !ok || p != legacyProtocol {
		return nil, &Error{File: path, Offset: off, Msg: fmt.Sprintf("legacy protocol version %s, want %d", shortRepr(proto), legacyProtocol), Err: ErrFormat}
	}
	// sys_info (byte order, type sizes) is informative only: storages are
	// always written little-endian (THPStorage_writeFileRaw).
	if _, err := load("sys_info pickle", false); err != nil {
		return nil, err
	}
	root, err := load("object pickle", true)
	if err != nil {
		return nil, err
	}
	keysOff := off
	keys, err := load("storage keys pickle", false)
	if err != nil {
		return nil, err
	}
	if err := l.placeStorages(keys, keysOff, off); err != nil {
		return nil, err
	}
	return root, nil
}

// placeStorages walks the raw storage section, which starts at off, and
// binds each listed storage to its bytes. Every storage the object uses
// must have data.
func (l *legacyCheckpoint) placeStorages(keys any, keysOff, off int64) error {
	list, ok := keys.(*pyList)
	if !ok {
		return &Error{File: l.path, Offset: keysOff, Msg: fmt.Sprintf("storage keys are a %s, not a list", typeName(keys)), Err: ErrFormat}
	}
	for _, k := range list.items {
		key, err := storageKey(k)
		if err != nil {
			return pickleErr(l.path, "", err)
		}
		st, ok := l.roots[key]
		if !ok {
			return &Error{File: l.path, Offset: keysOff, Msg: fmt.Sprintf("storage key %q is not used by the object", key), Err: ErrFormat}
		}
		if st.src != nil {
			return &Error{File: l.path, Offset: keysOff, Msg: fmt.Sprintf("storage key %q listed twice", key), Err: ErrFormat}
		}
		if l.size-off < 8 {
			return &Error{File: l.path, Offset: off, Msg: fmt.Sprintf("storage %q: file ends before its element count", key), Err: ErrFormat}
		}
		var hdr [8]byte
		if _, err := l.r.ReadAt(hdr[:], off); err != nil {
			return &Error{File: l.path, Offset: off, Msg: fmt.Sprintf("storage %q: reading its element count", key), Err: err}
		}
		n := binary.LittleEndian.Uint64(hdr[:])
		es := uint64(st.dtype.Size())
		if n != uint64(st.nbytes)/es {
			return &Error{File: l.path, Offset: off, Msg: fmt.Sprintf("storage %q: %d elements in the file, %d in the pickle", key, n, uint64(st.nbytes)/es), Err: ErrFormat}
		}
		off += 8
		if st.nbytes > l.size-off {
			return &Error{File: l.path, Offset: off, Msg: fmt.Sprintf("storage %q: %d bytes of data, only %d left in the file", key, st.nbytes, l.size-off), Err: ErrFormat}
		}
		st.src = io.NewSectionReader(l.r, off, st.nbytes)
		off += st.nbytes
	}
	for key, st := range l.roots {
		if st.src == nil {
			return &Error{File: l.path, Offset: keysOff, Msg: fmt.Sprintf("storage %q is used but has no data in the file", key), Err: ErrFormat}
		}
	}
	return nil
}

// persistentLoad resolves ('storage', storage_type, root_key, location,
// numel, view_metadata), view_metadata being None or (view_key, offset,
// size) in elements (torch/serialization.py _legacy_load persistent_load).
func (l *legacyCheckpoint) persistentLoad(pid pyTuple) (any, error) {
	if len(pid) != 6 {
		return nil, failf(ErrFormat, "legacy storage persistent id has %d items, want 6", len(pid))
	}
	g, ok := pid[1].(*pyGlobal)
	if !ok || g.kind != gStorageType {
		return nil, failf(ErrFormat, "legacy storage type is a %s, not a typed storage class", typeName(pid[1]))
	}
	dt := g.dtype
	key, err := storageKey(pid[2])
	if err != nil {
		return nil, err
	}
	if asciiString(pid[3]) == "" {
		return nil, failf(ErrFormat, "storage location is a %s, not a str", typeName(pid[3]))
	}
	nbytes, err := storageBytes(pid[4], dt)
	if err != nil {
		return nil, err
	}
	root, ok := l.roots[key]
	if !ok {
		root = &storage{key: key, dtype: dt, nbytes: nbytes}
		l.roots[key] = root
	} else if root.dtype != dt {
		return nil, failf(ErrUnsupported, "storage %q is viewed as both %s and %s", key, root.dtype, dt)
	}
	if pid[5] == nil {
		return root, nil
	}
	vm, ok := pid[5].(pyTuple)
	if !ok || len(vm) != 3 {
		return nil, failf(ErrFormat, "storage view metadata %s is not (key, offset, size)", shortRepr(pid[5]))
	}
	vkey, err := storageKey(vm[0])
	if err != nil {
		return nil, err
	}
	if v, ok := l.views[vkey]; ok {
		return v, nil
	}
	voff, err := storageBytes(vm[1], dt)
	if err != nil {
		return nil, err
	}
	vsize, err := storageBytes(vm[2], dt)
	if err != nil {
		return nil, err
	}
	if voff > root.nbytes || vsize > root.nbytes-voff {
		return nil, failf(ErrFormat, "storage view %q (%d bytes at %d) outside storage %q of %d bytes", vkey, vsize, voff, key, root.nbytes)
	}
	v := &storage{key: vkey, dtype: dt, nbytes: vsize, parent: root, base: voff}
	l.views[vkey] = v
	return v, nil
}

// isTar reports whether r starts with a tar header.
func isTar(r io.ReaderAt) bool {
	b := make([]byte, len(tarMagic))
	_, err := r.ReadAt(b, tarMagicOffset)
	return err == nil && string(b) == string(tarMagic)
}

// isInt reports whether v is the Python int want.
func isInt(v any, want *big.Int) bool {
	switch x := v.(type) {
	case *big.Int:
		return x.Cmp(want) == 0
	case int64:
		return want.IsInt64() && want.Int64() == x
	}
	return false
}
