package pytorch

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

func openZipForTest(path string) (*zip.Reader, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return zip.NewReader(bytes.NewReader(b), int64(len(b)))
}

type zipEntry struct {
	name   string
	data   []byte
	method uint16
}

// buildZip writes entries in order; method 0 stores, 8 deflates, anything
// else is written raw with that method number.
func buildZip(t *testing.T, entries []zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: e.method}
		var err error
		if e.method == zip.Store || e.method == zip.Deflate {
			var fw interface{ Write([]byte) (int, error) }
			fw, err = w.CreateHeader(h)
			if err == nil {
				_, err = fw.Write(e.data)
			}
		} else {
			h.CompressedSize64, h.UncompressedSize64 = uint64(len(e.data)), uint64(len(e.data))
			var fw interface{ Write([]byte) (int, error) }
			fw, err = w.CreateRaw(h)
			if err == nil {
				_, err = fw.Write(e.data)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// f32s is the little-endian bytes of 0, 1, …, n-1 as float32.
func f32s(n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(i)))
	}
	return b
}

// validEntries is a minimal zip checkpoint: w = [[0 1 2] [3 4 5]].
func validEntries(method uint16) []zipEntry {
	return []zipEntry{
		{"archive/data.pkl", dictPickle(entry("w", pk{}.tensorV2("0", 6, 0, []int32{2, 3}, []int32{3, 1}))), method},
		{"archive/byteorder", []byte("little"), method},
		{"archive/data/0", f32s(6), method},
		{"archive/version", []byte("3\n"), method},
	}
}

// openBytes writes b to a temp file and opens it.
func openBytes(t *testing.T, b []byte) (*Checkpoint, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.pt")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return Open([]string{p}, nil)
}

// centralRecord returns the offset of the central-directory record of the
// named entry.
func centralRecord(t *testing.T, b []byte, name string) int {
	t.Helper()
	for i := 0; i+46 <= len(b); i++ {
		if string(b[i:i+4]) == "PK\x01\x02" {
			n := int(binary.LittleEndian.Uint16(b[i+28:]))
			if i+46+n <= len(b) && string(b[i+46:i+46+n]) == name {
				return i
			}
		}
	}
	t.Fatalf("no central record for %s", name)
	return 0
}

func TestZipValid(t *testing.T) {
	for _, method := range []uint16{zip.Store, zip.Deflate} {
		c, err := openBytes(t, buildZip(t, validEntries(method)))
		if err != nil {
			t.Fatalf("method %d: %v", method, err)
		}
		got := make([]float32, 6)
		if err := c.ReadFloat32(context.Background(), "w", got, 0, 2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []float32{0, 1, 2, 3, 4, 5}) {
			t.Errorf("method %d: %v", method, got)
		}
		c.Close()
	}
}

// TestZipMalformed: each broken archive is a clear error, found before any
// tensor data is read where it can be.
func TestZipMalformed(t *testing.T) {
	with := func(f func([]zipEntry) []zipEntry) []byte { return buildZip(t, f(validEntries(zip.Store))) }
	cases := []struct {
		name     string
		data     func() []byte
		sentinel error
		msg      string
	}{
		{"overlapping entries", func() []byte {
			b := with(func(e []zipEntry) []zipEntry { return append(e, zipEntry{"archive/data/1", f32s(6), 0}) })
			// Point data/1's central record at data/0's local header.
			r0, r1 := centralRecord(t, b, "archive/data/0"), centralRecord(t, b, "archive/data/1")
			copy(b[r1+42:r1+46], b[r0+42:r0+46])
			return b
		}, ErrFormat, "overlaps entry"},
		{"entry past the end", func() []byte {
			b := with(func(e []zipEntry) []zipEntry { return e })
			r := centralRecord(t, b, "archive/data/0")
			binary.LittleEndian.PutUint32(b[r+20:], 0x7fffffff)
			binary.LittleEndian.PutUint32(b[r+24:], 0x7fffffff)
			return b
		}, ErrFormat, "runs past the end"},
		{"deflate size lie", func() []byte {
			b := buildZip(t, validEntries(zip.Deflate))
			r := centralRecord(t, b, "archive/data/0")
			binary.LittleEndian.PutUint32(b[r+24:], 0xfffffff0)
			return b
		}, ErrFormat, "more than DEFLATE can produce"},
		{"stored size mismatch", func() []byte {
			b := with(func(e []zipEntry) []zipEntry { return e })
			r := centralRecord(t, b, "archive/data/0")
			binary.LittleEndian.PutUint32(b[r+24:], 4)
			return b
		}, ErrFormat, "declares 24 bytes compressed but 4 uncompressed"},
		{"unknown byte order", func() []byte {
			return with(func(e []zipEntry) []zipEntry { e[1].data = []byte("middle"); return e })
		}, ErrFormat, `unknown byte order "middle"`},
		{"no data.pkl", func() []byte {
			return with(func(e []zipEntry) []zipEntry { return e[1:] })
		}, ErrFormat, "no data.pkl record"},
		{"entry outside the folder", func() []byte {
			return with(func(e []zipEntry) []zipEntry { return append(e, zipEntry{"other/x", nil, 0}) })
		}, ErrFormat, `"other/x" is outside the archive folder`},
		{"not in a folder", func() []byte {
			return with(func(e []zipEntry) []zipEntry { return append([]zipEntry{{"data.pkl", nil, 0}}, e...) })
		}, ErrFormat, "not inside a top-level folder"},
		{"backslash", func() []byte {
			return with(func(e []zipEntry) []zipEntry { return append(e, zipEntry{`archive/a\b`, nil, 0}) })
		}, ErrFormat, "backslash"},
		{"duplicate", func() []byte {
			return with(func(e []zipEntry) []zipEntry { return append(e, e[2]) })
		}, ErrFormat, "duplicate zip entry"},
		{"bzip2 storage", func() []byte {
			return with(func(e []zipEntry) []zipEntry { e[2].method = 12; return e })
		}, ErrUnsupported, "compression method 12"},
		{"record smaller than the pickle says", func() []byte {
			return with(func(e []zipEntry) []zipEntry { e[2].data = f32s(5); return e })
		}, ErrFormat, "holds 20 bytes but the pickle declares 24"},
		{"empty archive", func() []byte { return buildZip(t, nil) }, ErrFormat, "neither a zip archive nor a binary pickle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ck, err := openBytes(t, c.data())
			if err == nil {
				ck.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q\nwant %v containing %q", err, c.sentinel, c.msg)
			}
		})
	}
}

// TestZipDeflatedShort: a deflated storage that inflates to fewer bytes
// than it declares opens (sizes agree) but fails cleanly when read.
func TestZipDeflatedShort(t *testing.T) {
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	fw.Write(f32s(5))
	fw.Close()
	e := validEntries(zip.Store)
	e[2] = zipEntry{"archive/data/0", comp.Bytes(), zip.Deflate + 100} // raw: written as is
	b := buildZip(t, e)
	r := centralRecord(t, b, "archive/data/0")
	binary.LittleEndian.PutUint16(b[r+10:], zip.Deflate)
	binary.LittleEndian.PutUint32(b[r+24:], 24)
	c, err := openBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.ReadFloat32(context.Background(), "w", make([]float32, 6), 0, 2)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "ends before its declared 24 bytes") {
		t.Errorf("error %v", err)
	}
}

// TestZipPickleLimit: a data.pkl larger than MaxPickleBytes is refused
// before it is read.
func TestZipPickleLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.pt")
	if err := os.WriteFile(p, buildZip(t, validEntries(zip.Store)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open([]string{p}, &Options{Limits: Limits{MaxPickleBytes: 64}})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "exceeds the 64-byte limit") {
		t.Errorf("error %v", err)
	}
}

// legacyFile assembles a legacy checkpoint: the five pickles, then each
// storage as an 8-byte count and its bytes.
func legacyFile(obj []byte, keys []string, storages ...[]byte) []byte {
	magic := pk{0x80, 2, 0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'}
	proto := pk{0x80, 2, 'M', 0xe9, 0x03, '.'}
	sysInfo := pk{0x80, 2, '}', '.'}
	list := pk{0x80, 2, ']', '('}
	for _, k := range keys {
		list = list.str(k)
	}
	list = list.op('e', '.')
	out := slices.Concat(magic, proto, sysInfo, obj, list)
	for _, s := range storages {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s)/4))
		out = append(out, s...)
	}
	return out
}

// legacyTensor pushes _rebuild_tensor_v2 over a legacy persistent id with
// an optional view (key, offset, size).
func legacyTensor(key string, numel int32, view pk, size []int32) pk {
	p := pk{}.global("torch._utils", "_rebuild_tensor_v2").op('(')
	p = p.op('(').str("storage").global("torch", "FloatStorage").str(key).str("cpu").int4(numel)
	if view == nil {
		p = p.op('N')
	} else {
		p = p.op(view...)
	}
	p = p.op('t', 'Q').int4(0).ints(size...).ints(1)
	return p.op(0x89).global("collections", "OrderedDict").op(')', 'R', 't', 'R')
}

func TestLegacy(t *testing.T) {
	obj := dictPickle(entry("w", legacyTensor("11", 6, nil, []int32{6})),
		entry("v", legacyTensor("11", 6, pk{'('}.str("12").int4(2).int4(3).op('t'), []int32{3})))
	t.Run("valid with a storage view", func(t *testing.T) {
		c, err := openBytes(t, legacyFile(obj, []string{"11"}, f32s(6)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Format() != FormatLegacy {
			t.Errorf("format %s", c.Format())
		}
		v := make([]float32, 3)
		if err := c.ReadFloat32(context.Background(), "v", v, 0, 1); err != nil || !slices.Equal(v, []float32{2, 3, 4}) {
			t.Errorf("view: %v %v", v, err)
		}
	})
	cases := []struct {
		name     string
		data     []byte
		sentinel error
		msg      string
	}{
		{"element count lies", func() []byte {
			b := legacyFile(obj, []string{"11"}, f32s(6))
			binary.LittleEndian.PutUint64(b[len(b)-32:], 5)
			return b
		}(), ErrFormat, "5 elements in the file, 6 in the pickle"},
		{"data truncated", func() []byte { b := legacyFile(obj, []string{"11"}, f32s(6)); return b[:len(b)-1] }(), ErrFormat, "only 23 left"},
		{"unknown key listed", legacyFile(obj, []string{"11", "99"}, f32s(6), f32s(1)), ErrFormat, `storage key "99" is not used`},
		{"storage without data", legacyFile(obj, nil), ErrFormat, `storage "11" is used but has no data`},
		{"key listed twice", legacyFile(obj, []string{"11", "11"}, f32s(6), f32s(6)), ErrFormat, "listed twice"},
		{"view outside its storage", legacyFile(dictPickle(entry("v", legacyTensor("11", 6, pk{'('}.str("12").int4(4).int4(3).op('t'), []int32{3}))), []string{"11"}, f32s(6)), ErrFormat, "outside storage"},
		{"wrong protocol", func() []byte {
			b := legacyFile(obj, []string{"11"}, f32s(6))
			b[18] = 0xe8 // 1000
			return b
		}(), ErrFormat, "legacy protocol version 1000"},
		{"wrong magic", func() []byte { b := legacyFile(obj, []string{"11"}, f32s(6)); b[4] ^= 1; return b }(), ErrFormat, "neither a zip archive nor the legacy magic number"},
		{"tar", func() []byte { b := make([]byte, 1024); copy(b[257:], "ustar"); return b }(), ErrUnsupported, "tar checkpoint"},
		{"garbage", []byte("hello"), ErrFormat, "neither a zip archive nor a binary pickle"},
		{"empty", nil, ErrFormat, "neither a zip archive nor a binary pickle"},
		{"pickle that is not the magic", pk{0x80, 2, 'N', '.'}, ErrFormat, "neither a zip archive nor the legacy magic number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ck, err := openBytes(t, c.data)
			if err == nil {
				ck.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q\nwant %v containing %q", err, c.sentinel, c.msg)
			}
		})
	}
}

// TestTruncatedFiles: every prefix of a real zip and legacy checkpoint is
// refused (or, for zip prefixes that still end in a central directory —
// none here — opened consistently); never a panic.
func TestTruncatedFiles(t *testing.T) {
	for _, path := range []string{"testdata/generated/tiny/legacy.bin", "testdata/generated/tiny/zip.bin", "testdata/torch-edge/ok/shared_storage_legacy.pt"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n++ {
			_, err := openReader(path, bytes.NewReader(b[:n]), int64(n), Limits{}.withDefaults())
			if err == nil {
				t.Fatalf("%s: prefix of %d bytes opened", path, n)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s: prefix of %d bytes: %T %v", path, n, err, err)
			}
		}
	}
}

// TestStridedReads reads every tiny tensor through the strided path with
// the window forced to 8 bytes, against the digests torch gave.
func TestStridedReads(t *testing.T) {
	defer func(w int64) { windowSize = w }(windowSize)
	windowSize = 8
	exp := readGenerated(t)
	c, err := Open([]string{"testdata/generated/tiny/zip.bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, info := range c.Tensors() {
		tn, ok := c.data[i].(*tensor)
		if !ok {
			t.Fatalf("%s is not a stored tensor", info.Name)
		}
		n, _ := readers.NumElements(tn.shape)
		raw := make([]byte, n*int64(tn.dtype.Size()))
		if err := tn.gather(context.Background(), raw, 0, n); err != nil {
			t.Fatal(err)
		}
		vals := make([]float32, n)
		if err := readers.ToFloat32(vals, raw, tn.dtype); err != nil {
			t.Fatal(err)
		}
		if got, want := f32Digest(vals), exp.Files["tiny/zip.bin"][i].SHA256; got != want {
			t.Errorf("%s (contiguous %v): gathered %s, torch %s", info.Name, tn.contiguous(), got, want)
		}
	}
}

// zipCheckpoint builds a zip checkpoint of contiguous float32 tensors
// (values 0, 1, …), one storage each.
func zipCheckpointBytes(t *testing.T, names []string, shapes [][]int32) []byte {
	t.Helper()
	var items []pk
	var data []zipEntry
	for i, name := range names {
		shape := shapes[i]
		stride := make([]int32, len(shape))
		numel := int32(1)
		for d := len(shape) - 1; d >= 0; d-- {
			stride[d] = numel
			numel *= shape[d]
		}
		key := string(rune('0' + i))
		items = append(items, entry(name, pk{}.tensorV2(key, numel, 0, shape, stride)))
		data = append(data, zipEntry{"archive/data/" + key, f32s(int(numel)), zip.Store})
	}
	return buildZip(t, append([]zipEntry{{"archive/data.pkl", dictPickle(items...), zip.Store}}, data...))
}

// TestConsolidatedMismatch: shards that cannot be merged are refused with
// the tensor named.
func TestConsolidatedMismatch(t *testing.T) {
	shard0 := zipCheckpointBytes(t, []string{"layers.0.attention.wq.weight", "norm.weight"}, [][]int32{{2, 4}, {4}})
	cases := []struct {
		name   string
		shard1 []byte
		msg    string
	}{
		{"missing tensor", zipCheckpointBytes(t, []string{"layers.0.attention.wq.weight"}, [][]int32{{2, 4}}), `tensor "norm.weight": tensor missing from this shard`},
		{"other dimension differs", zipCheckpointBytes(t, []string{"layers.0.attention.wq.weight", "norm.weight"}, [][]int32{{2, 5}, {4}}), "only axis 0 may differ"},
		{"rank differs", zipCheckpointBytes(t, []string{"layers.0.attention.wq.weight", "norm.weight"}, [][]int32{{2, 4, 1}, {4}}), "has shape [2 4 1], shard 0 [2 4]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "consolidated.00.pth"), shard0, 0o644)
			os.WriteFile(filepath.Join(dir, "consolidated.01.pth"), c.shard1, 0o644)
			_, err := OpenConsolidated(dir, nil)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want %q", err, c.msg)
			}
		})
	}
	t.Run("merges", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "consolidated.00.pth"), shard0, 0o644)
		os.WriteFile(filepath.Join(dir, "consolidated.01.pth"), shard0, 0o644)
		c, err := OpenConsolidated(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := c.Tensors()
		if !slices.Equal(got[0].Shape, []int64{4, 4}) || !slices.Equal(got[1].Shape, []int64{4}) {
			t.Errorf("shapes %v %v", got[0].Shape, got[1].Shape)
		}
	})
}
