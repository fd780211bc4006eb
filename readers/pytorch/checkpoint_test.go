package pytorch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

type wantTensor struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256_f32le"`
}

// checkSource compares every tensor of src, in order, with torch's list:
// name, dtype, shape and the digest of its float32 values read through
// ReadFloat32.
func checkSource(t *testing.T, src readers.Source, want []wantTensor) {
	t.Helper()
	got := src.Tensors()
	if len(got) != len(want) {
		t.Fatalf("%d tensors, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		dt := readers.DType(w.DType)
		if td, ok := torchDTypes[w.DType]; ok {
			dt = td
		}
		if g.Name != w.Name || g.DType != dt || !slices.Equal(g.Shape, w.Shape) {
			t.Errorf("tensor %d: %s %s %v, want %s %s %v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
			continue
		}
		sum, err := readers.Checksum(context.Background(), src, g)
		if err != nil {
			t.Errorf("%s: %v", g.Name, err)
			continue
		}
		if sum != w.SHA256 {
			t.Errorf("%s: sha256 %s, torch %s", g.Name, sum, w.SHA256)
		}
	}
}

// TestTorchBert reads the same BERT weights from the zip and the legacy
// .bin and compares all 44 tensors with torch's digests.
func TestTorchBert(t *testing.T) {
	var exp struct {
		Files map[string]struct {
			Format  string       `json:"format"`
			Tensors []wantTensor `json:"tensors"`
		} `json:"files"`
	}
	readJSON(t, "testdata/torch-bert/expected.json", &exp)
	for _, name := range []string{"pytorch_model.bin", "legacy/pytorch_model.bin"} {
		t.Run(name, func(t *testing.T) {
			want := exp.Files[name]
			c, err := Open([]string{filepath.Join("testdata/torch-bert", name)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Format() != want.Format || len(want.Tensors) != 44 {
				t.Errorf("format %s (want %s), %d expected tensors", c.Format(), want.Format, len(want.Tensors))
			}
			checkSource(t, c, want.Tensors)
		})
	}
}

type checkpointsJSON struct {
	Files map[string]struct {
		Tensors []wantTensor `json:"tensors"`
	} `json:"files"`
}

// TestTorchtune reads torchtune's checkpoints: Meta's layout (one shard,
// zip folder tiny_fair_checkpoint/, copied as consolidated.00.pth) and a
// one-key state dict.
func TestTorchtune(t *testing.T) {
	var exp checkpointsJSON
	readJSON(t, "testdata/torchtune/checkpoints.json", &exp)
	t.Run("consolidated", func(t *testing.T) {
		c, err := OpenConsolidated("testdata/torchtune/tiny_fair", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Format() != FormatConsolidated || c.Params() != nil {
			t.Errorf("format %s, params %q", c.Format(), c.Params())
		}
		checkSource(t, c, exp.Files["tiny_fair_checkpoint.pt"].Tensors)
	})
	t.Run("one key", func(t *testing.T) {
		c, err := Open([]string{"testdata/torchtune/tiny_state_dict_with_one_key.pt"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		checkSource(t, c, exp.Files["tiny_state_dict_with_one_key.pt"].Tensors)
	})
}

type generatedJSON struct {
	Files map[string][]wantTensor `json:"files"`
}

func readGenerated(t *testing.T) generatedJSON {
	var exp generatedJSON
	readJSON(t, "testdata/generated/expected.json", &exp)
	return exp
}

// TestGeneratedTiny reads one state dict (f32/f16/bf16/f64/i64, tied,
// transposed, strided, expanded, 0-d and 3-D permuted tensors) from a zip,
// a legacy, a deflated and a big-endian file, and from safetensors with a
// minimal test-only parser, and checks all five agree with torch.
func TestGeneratedTiny(t *testing.T) {
	exp := readGenerated(t)
	want := exp.Files["tiny/zip.bin"]
	for _, c := range []struct{ file, format string }{
		{"zip.bin", FormatZip}, {"legacy.bin", FormatLegacy}, {"deflated.bin", FormatZip}, {"bigendian.bin", FormatZip},
	} {
		t.Run(c.file, func(t *testing.T) {
			if !slices.EqualFunc(exp.Files["tiny/"+c.file], want, func(a, b wantTensor) bool {
				return a.Name == b.Name && a.SHA256 == b.SHA256
			}) {
				t.Fatal("expected.json: torch's digests differ between formats")
			}
			ck, err := Open([]string{filepath.Join("testdata/generated/tiny", c.file)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			if ck.Format() != c.format {
				t.Errorf("format %s, want %s", ck.Format(), c.format)
			}
			checkSource(t, ck, want)
		})
	}
	t.Run("model.safetensors", func(t *testing.T) {
		got := safetensorsDigests(t, "testdata/generated/tiny/model.safetensors")
		for _, w := range want {
			if got[w.Name] != w.SHA256 {
				t.Errorf("%s: safetensors %s, .bin %s", w.Name, got[w.Name], w.SHA256)
			}
		}
	})
}

// safetensorsDigests is a minimal safetensors reader for the cross-check
// (the real one is readers/safetensors): u64 header length, JSON header,
// data offsets from the end of the header.
func safetensorsDigests(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	data := b[8+n:]
	out := map[string]string{}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		dt := readers.DType(e.DType)
		chunk := data[e.Offsets[0]:e.Offsets[1]]
		vals := make([]float32, len(chunk)/dt.Size())
		if err := readers.ToFloat32(vals, chunk, dt); err != nil {
			t.Fatal(err)
		}
		out[name] = f32Digest(vals)
	}
	return out
}

// TestGeneratedWrapped: {"model": state_dict, "step": 7} is read as the
// state dict, from a zip whose folder is not named after the file.
func TestGeneratedWrapped(t *testing.T) {
	c, err := Open([]string{"testdata/generated/wrapped.pt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkSource(t, c, readGenerated(t).Files["wrapped.pt"])
}

// TestGeneratedSharded opens the HF shards through their index (and
// through OpenDir) and compares with each shard's digests in order.
func TestGeneratedSharded(t *testing.T) {
	exp := readGenerated(t)
	want := append(slices.Clone(exp.Files["sharded/pytorch_model-00001-of-00002.bin"]),
		exp.Files["sharded/pytorch_model-00002-of-00002.bin"]...)
	for name, open := range map[string]func() (*Checkpoint, error){
		"index": func() (*Checkpoint, error) { return OpenIndex("testdata/generated/sharded/"+IndexName, nil) },
		"dir":   func() (*Checkpoint, error) { return OpenDir("testdata/generated/sharded", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			c, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			checkSource(t, c, want)
			if f := c.Tensors()[len(want)-1].File; f != "pytorch_model-00002-of-00002.bin" {
				t.Errorf("File = %q", f)
			}
		})
	}
}

// TestIndexMismatch: an index naming a tensor the shards lack (or the
// reverse) is an ErrIndex error listing the names.
func TestIndexMismatch(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"} {
		copyFile(t, filepath.Join("testdata/generated/sharded", f), filepath.Join(dir, f))
	}
	for name, c := range map[string]struct{ index, msg string }{
		"missing": {`{"weight_map": {"model.norm.weight": "pytorch_model-00002-of-00002.bin", "extra.weight": "pytorch_model-00002-of-00002.bin"}}`, "in the index but not the shards: extra.weight"},
		"escape":  {`{"weight_map": {"a": "../x.bin"}}`, `shard name "../x.bin"`},
		"no map":  {`{"metadata": {}}`, "no weight_map"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, IndexName)
			if err := os.WriteFile(p, []byte(c.index), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenIndex(p, nil)
			if !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want ErrIndex with %q", err, c.msg)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedMeta merges two model-parallel shards, split the Llama 2
// way (zip, f32) and the Llama 3 way (legacy files, bf16, with and without
// params.json), and checks every merged tensor equals the unsplit original.
func TestGeneratedMeta(t *testing.T) {
	exp := readGenerated(t)
	// Without params.json the Llama 3 rule falls back on norm.weight's length.
	noParams := t.TempDir()
	for _, f := range []string{"consolidated.00.pth", "consolidated.01.pth"} {
		copyFile(t, filepath.Join("testdata/generated/meta-llama3", f), filepath.Join(noParams, f))
	}
	for name, dir := range map[string]string{
		"meta-llama2":                "testdata/generated/meta-llama2",
		"meta-llama3":                "testdata/generated/meta-llama3",
		"meta-llama3 without params": noParams,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := OpenDir(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Format() != FormatConsolidated || (c.Params() != nil) != (dir != noParams) {
				t.Errorf("format %s, params %q", c.Format(), c.Params())
			}
			checkSource(t, c, exp.Files[strings.Fields(name)[0]])
			// Read in odd row chunks too: merged reads must not depend on
			// where a request starts.
			for _, info := range c.Tensors() {
				whole := readAll(t, c, info, 0)
				chunked := readAll(t, c, info, 3)
				if !slices.Equal(whole, chunked) {
					t.Errorf("%s: chunked read differs", info.Name)
				}
			}
		})
	}
}

// readAll reads a tensor in chunks of step rows (0: all at once).
func readAll(t *testing.T, src readers.Source, info readers.TensorInfo, step int) []float32 {
	t.Helper()
	rows, cols := readers.Rows(info.Shape)
	out := make([]float32, rows*cols)
	if step <= 0 {
		step = int(rows)
	}
	for r := 0; r < int(rows); r += step {
		n := min(step, int(rows)-r)
		if err := src.ReadFloat32(context.Background(), info.Name, out[int64(r)*cols:int64(r+n)*cols], r, n); err != nil {
			t.Fatalf("%s rows %d+%d: %v", info.Name, r, n, err)
		}
	}
	return out
}

// TestRowChunks reads every tensor of every tiny file row by row and
// concurrently, and checks the result is the whole-tensor read: strided
// views, deflated streams and big-endian swaps must not depend on where a
// read starts.
func TestRowChunks(t *testing.T) {
	for _, f := range []string{"zip.bin", "legacy.bin", "deflated.bin", "bigendian.bin"} {
		t.Run(f, func(t *testing.T) {
			c, err := Open([]string{filepath.Join("testdata/generated/tiny", f)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var wg sync.WaitGroup
			for _, info := range c.Tensors() {
				wg.Go(func() {
					whole := readAll(t, c, info, 0)
					for _, step := range []int{1, 2, 3} {
						if got := readAll(t, c, info, step); !slices.Equal(got, whole) {
							t.Errorf("%s: rows in steps of %d differ", info.Name, step)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestRawBytes: RawBytes gives the native little-endian bytes; for the
// big-endian file they equal the little-endian file's.
func TestRawBytes(t *testing.T) {
	le, err := Open([]string{"testdata/generated/tiny/zip.bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer le.Close()
	be, err := Open([]string{"testdata/generated/tiny/bigendian.bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var _ readers.RawReader = le
	for _, info := range le.Tensors() {
		a, err1 := le.RawBytes(info.Name)
		b, err2 := be.RawBytes(info.Name)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Errorf("%s: %v %v, equal %v", info.Name, err1, err2, slices.Equal(a, b))
		}
		n, _ := readers.NumElements(info.Shape)
		if int64(len(a)) != n*int64(info.DType.Size()) {
			t.Errorf("%s: %d bytes", info.Name, len(a))
		}
	}
	if _, err := le.RawBytes("nope"); !errors.Is(err, readers.ErrNotFound) {
		t.Errorf("RawBytes(nope) = %v", err)
	}
}

// TestReadErrors: unknown names, bad row ranges and a cancelled context.
func TestReadErrors(t *testing.T) {
	c, err := Open([]string{"testdata/generated/tiny/zip.bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.ReadFloat32(ctx, "nope", nil, 0, 0); !errors.Is(err, readers.ErrNotFound) {
		t.Errorf("unknown tensor: %v", err)
	}
	if err := c.ReadFloat32(ctx, "emb.weight", make([]float32, 8), 40, 1); !errors.Is(err, readers.ErrShape) {
		t.Errorf("row past the end: %v", err)
	}
	if err := c.ReadFloat32(ctx, "emb.weight", make([]float32, 7), 0, 1); !errors.Is(err, readers.ErrShape) {
		t.Errorf("short buffer: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.ReadFloat32(cancelled, "emb.weight", make([]float32, 8), 0, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestOpenDir covers the folder rules and their errors.
func TestOpenDir(t *testing.T) {
	single := t.TempDir()
	copyFile(t, "testdata/generated/wrapped.pt", filepath.Join(single, "model.pt"))
	c, err := OpenDir(single, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Format() != FormatZip || len(c.Tensors()) != 3 || c.Tensors()[0].File != "model.pt" {
		t.Errorf("single file: %s %v", c.Format(), c.Tensors())
	}
	c.Close()

	two := t.TempDir()
	copyFile(t, "testdata/generated/wrapped.pt", filepath.Join(two, "a.pt"))
	copyFile(t, "testdata/generated/wrapped.pt", filepath.Join(two, "b.pth"))
	if _, err := OpenDir(two, nil); !errors.Is(err, ErrNoFiles) {
		t.Errorf("two candidates: %v", err)
	}
	if _, err := OpenDir(t.TempDir(), nil); !errors.Is(err, ErrNoFiles) {
		t.Errorf("empty folder: %v", err)
	}

	// The same file twice: every name is a duplicate.
	if _, err := Open([]string{"testdata/generated/wrapped.pt", "testdata/generated/wrapped.pt"}, nil); !errors.Is(err, ErrFormat) ||
		!strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate names: %v", err)
	}

	gap := t.TempDir()
	copyFile(t, "testdata/generated/meta-llama2/consolidated.00.pth", filepath.Join(gap, "consolidated.00.pth"))
	copyFile(t, "testdata/generated/meta-llama2/consolidated.01.pth", filepath.Join(gap, "consolidated.02.pth"))
	if _, err := OpenConsolidated(gap, nil); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "rank 1 is missing") {
		t.Errorf("missing rank: %v", err)
	}
}

// TestSniff tells the containers apart without unpickling.
func TestSniff(t *testing.T) {
	for path, want := range map[string]string{
		"testdata/generated/tiny/zip.bin":                  FormatZip,
		"testdata/generated/tiny/legacy.bin":               FormatLegacy,
		"testdata/generated/meta-llama2/params.json":       "",
		"testdata/torch-edge/malicious/os_system_bare.pkl": "",
	} {
		got, err := Sniff(path)
		if got != want || (want == "") != errors.Is(err, ErrFormat) {
			t.Errorf("Sniff(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
}
