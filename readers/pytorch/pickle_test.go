package pytorch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"runtime"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// A tiny pickle assembler for the tests: each helper returns the bytes of
// one or a few opcodes.
type pk []byte

func (p pk) op(b ...byte) pk { return append(p, b...) }

func (p pk) global(module, name string) pk {
	return append(append(p, 'c'), module+"\n"+name+"\n"...)
}

func (p pk) str(s string) pk {
	p = append(p, 'X')
	p = binary.LittleEndian.AppendUint32(p, uint32(len(s)))
	return append(p, s...)
}

func (p pk) int1(n byte) pk { return append(p, 'K', n) }

func (p pk) int4(n int32) pk {
	return binary.LittleEndian.AppendUint32(append(p, 'J'), uint32(n))
}

// ints is a tuple of small ints.
func (p pk) ints(ns ...int32) pk {
	p = p.op('(')
	for _, n := range ns {
		p = p.int4(n)
	}
	return p.op('t')
}

// tensorV2 pushes _rebuild_tensor_v2(storage key, numel, offset, size,
// stride) for a FloatStorage.
func (p pk) tensorV2(key string, numel int32, offset int32, size, stride []int32) pk {
	p = p.global("torch._utils", "_rebuild_tensor_v2").op('(')
	p = p.op('(').str("storage").global("torch", "FloatStorage").str(key).str("cpu").int4(numel).op('t', 'Q')
	p = p.int4(offset).ints(size...).ints(stride...)
	p = p.op(0x89).global("collections", "OrderedDict").op(')', 'R')
	return p.op('t', 'R')
}

// dictPickle wraps key → value pairs (already assembled) into a dict pickle.
func dictPickle(items ...pk) []byte {
	p := pk{0x80, 2, '}', '('}
	for _, it := range items {
		p = append(p, it...)
	}
	return p.op('u', '.')
}

func entry(key string, value pk) pk { return pk{}.str(key).op(value...) }

// fakeStorages resolves zip persistent ids to storages of zeros without
// allocating their claimed size.
type fakeStorages struct {
	m map[string]*storage
}

func (f *fakeStorages) load(pid pyTuple) (any, error) {
	if len(pid) != 5 {
		return nil, failf(ErrFormat, "bad pid")
	}
	dt, err := storageType(pid[1])
	if err != nil {
		return nil, err
	}
	key, err := storageKey(pid[2])
	if err != nil {
		return nil, err
	}
	nbytes, err := storageBytes(pid[4], dt)
	if err != nil {
		return nil, err
	}
	if f.m == nil {
		f.m = map[string]*storage{}
	}
	if st, ok := f.m[key]; ok {
		return st, nil
	}
	st := &storage{key: key, dtype: dt, nbytes: nbytes, src: zeros{}}
	f.m[key] = st
	return st, nil
}

// zeros is an io.ReaderAt of endless zero bytes.
type zeros struct{}

func (zeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

// unpickle runs the restricted unpickler on b with fake storages.
func unpickle(b []byte, lim Limits) (any, error) {
	u := newUnpickler(bufio.NewReader(bytes.NewReader(b)), int64(len(b)), lim)
	fs := &fakeStorages{}
	u.persistentLoad = fs.load
	return u.load()
}

// TestUnpickleValid runs hand-assembled pickles that must load.
func TestUnpickleValid(t *testing.T) {
	cases := []struct {
		name  string
		data  []byte
		check func(v any) bool
	}{
		{"state dict", dictPickle(entry("w", pk{}.tensorV2("0", 6, 0, []int32{2, 3}, []int32{3, 1}))), func(v any) bool {
			w, _ := v.(*pyDict).get("w")
			tn := w.(*tensor)
			return tn.dtype == readers.F32 && tn.shape[0] == 2 && tn.shape[1] == 3
		}},
		{"LONG1 of length 0 is 0", pk{0x80, 2, 0x8a, 0, '.'}, func(v any) bool { return v == int64(0) }},
		{"LONG1 negative", pk{0x80, 2, 0x8a, 2, 0x00, 0xff, '.'}, func(v any) bool { return v == int64(-256) }},
		{"LONG1 beyond int64", pk{0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'}, func(v any) bool {
			return v.(*big.Int).Cmp(new(big.Int).Lsh(big.NewInt(1), 64)) == 0
		}},
		{"BININT negative", pk{}.int4(-5).op('.'), func(v any) bool { return v == int64(-5) }},
		{"BINFLOAT", pk{'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, '.'}, func(v any) bool { return v == 1.5 }},
		{"torch.Size", pk{}.global("torch", "Size").op('(').ints(2, 3).op('t', 'R', '.'), func(v any) bool {
			s := v.(pyTuple)
			return len(s) == 2 && s[1] == int64(3)
		}},
		{"torch.device", pk{}.global("torch", "device").op('(').str("cuda").int1(1).op('t', 'R', '.'), func(v any) bool { return v == "cuda:1" }},
		{"bytes via _codecs.encode", pk{}.global("_codecs", "encode").op('(').str("\u00e9a").str("latin1").op('t', 'R', '.'), func(v any) bool {
			return bytes.Equal(v.(pyBytes), []byte{0xe9, 'a'})
		}},
		{"__builtin__.set maps to builtins.set", pk{}.global("__builtin__", "set").op('(', ']', '(').int1(1).int1(1).int1(2).op('e', 't', 'R', '.'), func(v any) bool {
			return len(v.(*pySet).items) == 2
		}},
		{"dict keys 1, 1.0, True are one key", pk{'}', '('}.int1(1).str("a").op(0x88).str("b").op('u', '.'), func(v any) bool {
			d := v.(*pyDict)
			x, _ := d.get(int64(1))
			return len(d.keys) == 1 && x == "b"
		}},
		{"memo shares a list", pk{']', 'q', 0, 'h', 0, 'K', 7, 'a', '0'}.op('.'), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := unpickle(c.data, Limits{})
			if c.check == nil {
				if err == nil || !errors.Is(err, ErrForbidden) {
					t.Fatalf("POP is not in torch's opcode list, want ErrForbidden, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(v) {
				t.Errorf("unexpected value %#v", v)
			}
		})
	}
}

// TestUnpickleRefused: every case is a clear error of the right kind, and
// nothing is ever resolved outside the table.
func TestUnpickleRefused(t *testing.T) {
	good := pk{}.tensorV2("0", 6, 0, []int32{2, 3}, []int32{3, 1})
	cases := []struct {
		name     string
		data     []byte
		sentinel error
		msg      string
	}{
		{"os.system", pk{}.global("os", "system").op('.'), ErrForbidden, `refusing pickle global "os.system" (module "os" is blocked)`},
		{"nt.system", pk{}.global("nt", "system").op('.'), ErrForbidden, `"nt.system"`},
		{"sys.modules", pk{}.global("sys", "modules").op('.'), ErrForbidden, `module "sys" is blocked`},
		{"builtins.eval", pk{}.global("builtins", "eval").op('.'), ErrForbidden, `refusing pickle global "builtins.eval"`},
		{"__builtin__.eval", pk{}.global("__builtin__", "eval").op('.'), ErrForbidden, `refusing pickle global "builtins.eval"`},
		{"__import__", pk{}.global("builtins", "__import__").op('.'), ErrForbidden, `"builtins.__import__"`},
		{"copy_reg._reconstructor", pk{}.global("copy_reg", "_reconstructor").op('.'), ErrForbidden, `"copyreg._reconstructor"`},
		{"__builtin__.object", pk{}.global("__builtin__", "object").op('.'), ErrForbidden, `"builtins.object"`},
		{"torch.load", pk{}.global("torch", "load").op('.'), ErrForbidden, `"torch.load"`},
		{"allowed by torch, unsupported here", pk{}.global("torch._utils", "_rebuild_sparse_tensor").op('.'), ErrUnsupported, "_rebuild_sparse_tensor"},
		{"REDUCE of a str", pk{}.str("os.system").op(')', 'R', '.'), ErrForbidden, "REDUCE of str"},
		{"REDUCE of a dtype", pk{}.global("torch", "float32").op(')', 'R', '.'), ErrForbidden, "REDUCE of torch.dtype"},
		{"REDUCE of a storage class", pk{}.global("torch", "FloatStorage").op(')', 'R', '.'), ErrUnsupported, "calling torch.FloatStorage"},
		{"REDUCE args not a tuple", pk{}.global("torch", "Size").op(']', 'R', '.'), ErrFormat, "not a tuple"},
		{"NEWOBJ of a function", pk{}.global("torch._utils", "_rebuild_tensor_v2").op(')', 0x81, '.'), ErrUnsupported, "NEWOBJ"},
		{"NEWOBJ of a str", pk{}.str("x").op(')', 0x81, '.'), ErrForbidden, "NEWOBJ of str"},
		{"STACK_GLOBAL", pk{}.str("os").str("system").op(0x93, '.'), ErrForbidden, "opcode 0x93"},
		{"INST", append(pk{'(', 'i'}, "os\nsystem\n."...), ErrForbidden, "opcode 0x69"},
		{"OBJ", pk{'(', 'o', '.'}, ErrForbidden, "opcode 0x6f"},
		{"FRAME", pk{0x95, 0, 0, 0, 0, 0, 0, 0, 0, '.'}, ErrForbidden, "opcode 0x95"},
		{"EXT1", pk{0x82, 1, '.'}, ErrForbidden, "opcode 0x82"},
		{"persistent id not a tuple", pk{}.str("x").op('Q', '.'), ErrForbidden, "not a tuple"},
		{"persistent id of a module", pk{'('}.str("module").str("x").op('t', 'Q', '.'), ErrForbidden, "is not a storage"},
		{"storage key with a path", dictPickle(entry("w", pk{}.tensorV2("../x", 6, 0, []int32{6}, []int32{1}))), ErrFormat, `storage key "../x"`},
		{"storage offset beyond the storage", dictPickle(entry("w", pk{}.tensorV2("0", 4, 4, []int32{1}, []int32{1}))), ErrFormat, "needs 4-byte elements up to index 4"},
		{"negative offset", dictPickle(entry("w", pk{}.tensorV2("0", 4, -1, []int32{1}, []int32{1}))), ErrFormat, "negative storage offset"},
		{"negative size", dictPickle(entry("w", pk{}.tensorV2("0", 4, 0, []int32{-1}, []int32{1}))), ErrFormat, "negative dimension"},
		{"size and stride ranks differ", dictPickle(entry("w", pk{}.tensorV2("0", 4, 0, []int32{2, 2}, []int32{1}))), ErrFormat, "2 sizes but 1 strides"},
		{"stride overflow", dictPickle(entry("w", pk{}.tensorV2("0", 4, 0, []int32{1 << 30, 1 << 30, 1 << 30}, []int32{1 << 30, 1 << 30, 1 << 30}))), ErrFormat, "overflows"},
		{"storage count overflow", dictPickle(entry("w", pk{}.global("torch._utils", "_rebuild_tensor_v2").op('(', '(').str("storage").global("torch", "DoubleStorage").str("0").str("cpu").op(0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x40).op('t', 'Q'))), ErrFormat, "overflows"},
		{"APPEND to a dict", pk{'}'}.int1(1).op('a', '.'), ErrForbidden, "APPEND to a dict"},
		{"SETITEM on a list", pk{']'}.int1(1).int1(2).op('s', '.'), ErrForbidden, "SETITEM on a list"},
		{"SETITEMS odd", pk{'}', '('}.int1(1).op('u', '.'), ErrFormat, "odd number"},
		{"unhashable key", pk{'}', ']'}.int1(1).op('s', '.'), ErrFormat, "unhashable"},
		{"BUILD on a dict", pk{'}', '}', 'b', '.'}, ErrForbidden, "BUILD on a dict"},
		{"BUILD on a tensor", dictPickle(entry("w", good.op('}', 'b'))), ErrUnsupported, "BUILD on a torch.Tensor"},
		{"memo key never stored", pk{'h', 9, '.'}, ErrFormat, "memo key 9"},
		{"PUT on an empty stack", pk{'q', 0, '.'}, ErrFormat, "underflow"},
		{"STOP on an empty stack", pk{0x80, 2, '.'}, ErrFormat, "underflow"},
		{"TUPLE without MARK", pk{'t', '.'}, ErrFormat, "no MARK"},
		{"TUPLE3 short", pk{}.int1(1).op(0x87, '.'), ErrFormat, "TUPLE3"},
		{"no STOP", pk{0x80, 2, 'N'}, ErrFormat, "truncated"},
		{"string length lies", pk{'X', 0xff, 0xff, 0xff, 0xff, 'a', 'b', '.'}, ErrFormat, "needs 4294967295 bytes, 3 left"},
		{"invalid UTF-8", pk{'X', 2, 0, 0, 0, 0xff, 0xfe, '.'}, ErrFormat, "UTF-8"},
		{"GLOBAL line too long", pk{}.global(strings.Repeat("a", 2000), "b").op('.'), ErrFormat, "longer than"},
		{"bare tensor args", pk{}.global("torch._utils", "_rebuild_tensor_v2").op(')', 'R', '.'), ErrFormat, "takes 6 to 7 arguments"},
		{"conj bit set", dictPickle(entry("w", pk{}.global("torch._utils", "_rebuild_tensor_v2").op('(', '(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").int1(4).op('t', 'Q').int1(0).ints(4).ints(1).op(0x89, '}', '}').str("neg").op(0x88, 's', 't', 'R'))), ErrUnsupported, "flag \"neg\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := unpickle(c.data, Limits{})
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q\nwant %v containing %q", err, c.sentinel, c.msg)
			}
		})
	}
}

// TestUnpickleLimits: stack, memo, nesting and size limits are each an
// ErrLimit error, and the walk over the result is bounded too.
func TestUnpickleLimits(t *testing.T) {
	small := Limits{MaxPickleBytes: 1 << 16, MaxStack: 100, MaxMemo: 10, MaxDepth: 8}
	cases := []struct {
		name string
		data []byte
		msg  string
	}{
		{"stack", bytes.Repeat([]byte{'N'}, 101), "more than 100 values"},
		{"memo", func() []byte {
			p := pk{'N'}
			for i := range 11 {
				p = p.op('r', byte(i), 0, 0, 0)
			}
			return p.op('.')
		}(), "more than 10 memo entries"},
		{"nesting", bytes.Repeat([]byte{'('}, 9), "more than 8 nested MARKs"},
		{"size", append(append([]byte{'N'}, bytes.Repeat([]byte{'q', 0}, 1<<15)...), '.'), "pickle limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := unpickle(c.data, small)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want ErrLimit with %q", err, c.msg)
			}
		})
	}

	t.Run("self-containing list", func(t *testing.T) {
		// l = []; l.append(l); {"x": l}
		v, err := unpickle(pk{'}'}.str("x").op(']', 'q', 0, 'h', 0, 'a', 's', '.'), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collectTensors("f", v, Limits{}.withDefaults())
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "contains itself") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("exponential DAG", func(t *testing.T) {
		// x0 = t; x(i+1) = (xi, xi): 2^40 paths through 40 tuples.
		p := pk{'}'}.str("x").op(pk{}.tensorV2("0", 1, 0, nil, nil)...)
		for range 40 {
			p = p.op('q', 0, 'h', 0, 0x86)
		}
		v, err := unpickle(p.op('s', '.'), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collectTensors("f", v, Limits{MaxStack: 1000}.withDefaults())
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 4000 nodes to visit") {
			t.Errorf("error %v", err)
		}
	})
}

// TestUnpickleAllocation: lengths are checked before anything is
// allocated, so a pickle that claims 4 GiB allocates almost nothing.
func TestUnpickleAllocation(t *testing.T) {
	for _, data := range [][]byte{
		{'X', 0xff, 0xff, 0xff, 0xff, '.'}, // BINUNICODE of 4 GiB
		{0x8a, 0xff, '.'},                  // LONG1 of 255 bytes, 1 present
		{'U', 0xff, 'a', '.'},              // SHORT_BINSTRING of 255 bytes
		{'r', 0xff, 0xff, 0xff, 0xff, '.'}, // LONG_BINPUT on an empty stack
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := unpickle(data, Limits{})
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%x loaded", data)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%x: allocated %d bytes", data, d)
		}
	}
}

// TestUnpickleTruncations: every prefix of a real data.pkl fails cleanly.
func TestUnpickleTruncations(t *testing.T) {
	for _, path := range []string{"testdata/torch-edge/ok/ordereddict_metadata.pt", "testdata/torch-edge/ok/nested_checkpoint.pt"} {
		data := zipPickle(t, path)
		if _, err := unpickle(data, Limits{}); err != nil {
			t.Fatalf("%s: whole pickle: %v", path, err)
		}
		for n := range len(data) {
			if _, err := unpickle(data[:n], Limits{}); err == nil || !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: prefix of %d bytes: %v", path, n, err)
			}
		}
	}
}

// zipPickle returns a zip checkpoint's data.pkl.
func zipPickle(t testing.TB, path string) []byte {
	t.Helper()
	f, err := openZipForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.File {
		if strings.HasSuffix(e.Name, "/data.pkl") {
			rc, err := e.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("%s: no data.pkl", path)
	return nil
}
