package pytorch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// torchDTypes maps torch's dtype names (expected.json) to ours.
var torchDTypes = map[string]readers.DType{
	"float32": readers.F32, "float16": readers.F16, "bfloat16": readers.BF16, "float64": readers.F64,
	"int64": readers.I64, "int32": readers.I32, "int16": readers.I16, "int8": readers.I8, "uint8": readers.U8,
	"bool": readers.Bool, "float8_e4m3fn": readers.F8E4M3, "float8_e5m2": readers.F8E5M2,
}

// tensorDigests reads a whole tensor and returns the sha256 of its float32
// little-endian values and of its native little-endian bytes.
func tensorDigests(t *testing.T, tn *tensor) (f32, native string) {
	t.Helper()
	n, err := readers.NumElements(tn.shape)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, n*int64(tn.dtype.Size()))
	if err := tn.readElems(context.Background(), raw, 0, n); err != nil {
		t.Fatalf("reading: %v", err)
	}
	vals := make([]float32, n)
	if err := readers.ToFloat32(vals, raw, tn.dtype); err != nil {
		t.Fatal(err)
	}
	return f32Digest(vals), sha(raw)
}

func f32Digest(vals []float32) string {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return sha(b)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type edgeTensor struct {
	Name          string  `json:"name"`
	PythonType    string  `json:"python_type"`
	DType         string  `json:"dtype"`
	Shape         []int64 `json:"shape"`
	Stride        []int64 `json:"stride"`
	StorageOffset int64   `json:"storage_offset"`
	StorageNBytes int64   `json:"storage_nbytes"`
	RequiresGrad  bool    `json:"requires_grad"`
	SHA256F32     string  `json:"sha256_f32le"`
	SHA256Native  string  `json:"sha256_native_le"`
}

type edgeFile struct {
	Expect        string       `json:"expect"`
	Container     string       `json:"container"`
	RefuseBecause string       `json:"refuse_because"`
	TopLevelType  string       `json:"top_level_type"`
	TopLevelKeys  []string     `json:"top_level_keys"`
	Tensors       []edgeTensor `json:"tensors"`
	SharedGroups  [][]string   `json:"shared_storage_groups"`
	Metadata      map[string]map[string]int64
	Torch         json.RawMessage `json:"torch_load_weights_only"`
}

// TestTorchEdgeOK loads every file torch.load(weights_only=True) accepts
// and checks each tensor's dtype, shape, strides, offset, storage size,
// Parameter-ness and both digests against torch's, and shared storages.
func TestTorchEdgeOK(t *testing.T) {
	var exp struct {
		Files map[string]edgeFile `json:"files"`
	}
	readJSON(t, "testdata/torch-edge/expected.json", &exp)
	n := 0
	for name, ef := range exp.Files {
		if ef.Expect != "ok" {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			f, err := openFile(filepath.Join("testdata/torch-edge", name), Limits{}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			defer f.f.Close()
			if f.format != ef.Container {
				t.Errorf("format %s, torch says %s", f.format, ef.Container)
			}
			root := f.root.(*pyDict)
			if got := typeName(root); got != strings.TrimPrefix(ef.TopLevelType, "builtins.") {
				t.Errorf("top-level type %s, want %s", got, ef.TopLevelType)
			}
			var keys []string
			for _, k := range root.keys {
				keys = append(keys, k.(string))
			}
			if !slices.Equal(keys, ef.TopLevelKeys) {
				t.Errorf("keys %v, want %v", keys, ef.TopLevelKeys)
			}
			all, err := collectTensors(f.path, f.root, Limits{}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != len(ef.Tensors) {
				t.Fatalf("%d tensors, torch has %d", len(all), len(ef.Tensors))
			}
			byName := map[string]*tensor{}
			for i, want := range ef.Tensors {
				got := all[i]
				byName[got.name] = got.t
				tn := got.t
				if got.name != want.Name || tn.dtype != torchDTypes[want.DType] || !slices.Equal(tn.shape, want.Shape) ||
					!slices.Equal(tn.stride, want.Stride) || tn.offset != want.StorageOffset ||
					tn.st.nbytes != want.StorageNBytes || tn.requiresGrad != want.RequiresGrad ||
					typeName(tn) != want.PythonType {
					t.Errorf("tensor %d: got %s %s %v stride %v offset %d storage %d grad %v %s; torch: %+v",
						i, got.name, tn.dtype, tn.shape, tn.stride, tn.offset, tn.st.nbytes, tn.requiresGrad, typeName(tn), want)
					continue
				}
				f32, native := tensorDigests(t, tn)
				if f32 != want.SHA256F32 || native != want.SHA256Native {
					t.Errorf("%s: digests f32 %s native %s, torch %s %s", want.Name, f32, native, want.SHA256F32, want.SHA256Native)
				}
			}
			for _, group := range ef.SharedGroups {
				for _, n := range group[1:] {
					if byName[n].st != byName[group[0]].st {
						t.Errorf("%s and %s should share a storage", n, group[0])
					}
				}
			}
			if ef.Metadata != nil {
				checkMetadata(t, root, ef.Metadata)
			}
		})
	}
	if n != 13 {
		t.Errorf("%d ok files, want 13", n)
	}
}

// checkMetadata compares an OrderedDict's BUILD-restored _metadata.
func checkMetadata(t *testing.T, root *pyDict, want map[string]map[string]int64) {
	t.Helper()
	if root.attrs == nil {
		t.Fatal("no attributes restored by BUILD")
	}
	m, ok := root.attrs.get("_metadata")
	if !ok {
		t.Fatal("no _metadata attribute")
	}
	md := m.(*pyDict)
	if len(md.keys) != len(want) {
		t.Fatalf("_metadata has %d entries, want %d", len(md.keys), len(want))
	}
	for i, k := range md.keys {
		v, _ := md.vals[i].(*pyDict).get("version")
		if v != want[k.(string)]["version"] {
			t.Errorf("_metadata[%q].version = %v, want %v", k, v, want[k.(string)]["version"])
		}
	}
}

// TestTorchEdgeNested checks the non-tensor values of nested_checkpoint.pt.
func TestTorchEdgeNested(t *testing.T) {
	f, err := openFile("testdata/torch-edge/ok/nested_checkpoint.pt", Limits{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer f.f.Close()
	root := f.root.(*pyDict)
	get := func(k string) any { v, _ := root.get(k); return v }
	wantBig, _ := new(big.Int).SetString("1180591620717411303424", 10)
	if get("step") != int64(1234) || get("lr") != 0.0003 || get("name") != "tiny" ||
		get("big_int").(*big.Int).Cmp(wantBig) != 0 {
		t.Errorf("scalars: step %v lr %v name %v big %v", get("step"), get("lr"), get("name"), get("big_int"))
	}
	flags := get("flags").(*pyList).items
	if len(flags) != 3 || flags[0] != true || flags[1] != false || flags[2] != nil {
		t.Errorf("flags %v", flags)
	}
	if s, ok := get("shape").(pyTuple); !ok || len(s) != 2 || s[0] != int64(2) {
		t.Errorf("shape %#v, want the tuple (2, 2)", get("shape"))
	}
}

// TestTorchEdgeMalicious opens every file torch refuses (and the storage
// key torch accepts but we refuse, see the README) and checks each gets a
// clear error of the right kind — and that nothing could have run: the
// unpickler has no way to call anything outside its table.
func TestTorchEdgeMalicious(t *testing.T) {
	cases := map[string]struct {
		sentinel error
		msg      string
	}{
		"builtins_eval.pt":           {ErrForbidden, `refusing pickle global "builtins.eval"`},
		"builtins_exec.pt":           {ErrForbidden, `refusing pickle global "builtins.exec"`},
		"builtins_getattr.pt":        {ErrForbidden, `refusing pickle global "builtins.getattr"`},
		"huge_shape.pt":              {ErrFormat, "needs 4-byte elements up to index"},
		"huge_storage.pt":            {ErrFormat, "holds 16 bytes but the pickle declares 4398046511104"},
		"missing_record.pt":          {ErrFormat, "storage record archive/data/7 not found"},
		"negative_stride.pt":         {ErrFormat, "negative stride -1"},
		"numpy_reconstruct.pt":       {ErrForbidden, `refusing pickle global "numpy.core.multiarray._reconstruct"`},
		"os_system.pt":               {ErrForbidden, `refusing pickle global "os.system" (module "os" is blocked)`},
		"os_system_bare.pkl":         {ErrForbidden, `refusing pickle global "os.system"`},
		"os_system_in_state_dict.pt": {ErrForbidden, `refusing pickle global "os.system"`},
		"os_system_legacy.bin":       {ErrForbidden, `refusing pickle global "os.system"`},
		"os_system_stack_global.pt":  {ErrForbidden, "unsupported pickle opcode 0x93"},
		"posix_system.pt":            {ErrForbidden, `refusing pickle global "posix.system" (module "posix" is blocked)`},
		"subprocess_popen.pt":        {ErrForbidden, `refusing pickle global "subprocess.Popen"`},
		"truncated_half.pt":          {ErrFormat, "not a valid zip archive"},
		"truncated_in_data.pt":       {ErrFormat, "not a valid zip archive"},
		"truncated_tail.pt":          {ErrFormat, "not a valid zip archive"},
		"view_out_of_bounds.pt":      {ErrFormat, "needs 4-byte elements up to index 4, but storage \"0\" holds 16 bytes"},
		"zip_abs_path_entry.pt":      {ErrFormat, `zip entry "/tmp/ggufkit_abs.txt" is outside the archive folder`},
		"zip_slip_entry.pt":          {ErrFormat, `zip entry "../../../../tmp/ggufkit_zip_slip.txt" is outside the archive folder`},
		"zip_slip_storage_key.pt":    {ErrFormat, `zip entry "archive/data/../../../../tmp/x" has an empty, "." or ".." path component`},
	}
	var exp struct {
		Files map[string]edgeFile `json:"files"`
	}
	readJSON(t, "testdata/torch-edge/expected.json", &exp)
	for name, ef := range exp.Files {
		if ef.Expect != "refuse" {
			continue
		}
		base := strings.TrimPrefix(name, "malicious/")
		c, ok := cases[base]
		if !ok {
			t.Errorf("no test case for %s", name)
			continue
		}
		t.Run(base, func(t *testing.T) {
			ck, err := Open([]string{filepath.Join("testdata/torch-edge", name)}, nil)
			if err == nil {
				ck.Close()
				t.Fatalf("opened; torch's verdict: %s (%s)", ef.RefuseBecause, ef.Torch)
			}
			t.Log(err)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q (%T)\nwant %v containing %q", err, err, c.sentinel, c.msg)
			}
		})
	}
	if _, err := os.Stat("/tmp/x"); err == nil {
		t.Log("note: /tmp/x exists (not created by this test: nothing is executed)")
	}
}
