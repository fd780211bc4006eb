package split_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/split"
	"github.com/ggufkit/ggufkit/writer"
)

// llamaCase is one llama-gguf-split run recorded in testdata/expected.json
// (see testdata/README.md).
type llamaCase struct {
	Name    string            `json:"name"`
	Input   string            `json:"input"`
	Args    []string          `json:"args"`
	Outputs map[string]string `json:"outputs"` // file name → sha256
	Merged  string            `json:"merged"`  // sha256 of --merge of the outputs
}

func loadCases(t *testing.T) []llamaCase {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []llamaCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// optionsOf reads llama-gguf-split's flags.
func optionsOf(t *testing.T, args []string) split.Options {
	t.Helper()
	var o split.Options
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--split-max-tensors":
			i++
			if _, err := fmt.Sscan(args[i], &o.MaxTensors); err != nil {
				t.Fatal(err)
			}
		case "--split-max-size":
			i++
			var n int64
			if _, err := fmt.Sscan(strings.TrimRight(args[i], "MG"), &n); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(args[i], "G") {
				n *= 1000
			}
			o.MaxBytes = n * 1000 * 1000
		case "--no-tensor-first-split":
			o.NoTensorFirstSplit = true
		case "--split":
		default:
			t.Fatalf("unknown flag %s", args[i])
		}
	}
	return o
}

func sum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestLlamaGGUFSplit: our shards and merges have the bytes of
// llama-gguf-split's for every recorded run.
func TestLlamaGGUFSplit(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 4 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := ggufread.Open(filepath.Join("..", c.Input))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			dir := t.TempDir()
			shards, err := split.Plan(in, filepath.Join(dir, "out"), optionsOf(t, c.Args))
			if err != nil {
				t.Fatal(err)
			}
			if len(shards) != len(c.Outputs) {
				t.Fatalf("%d shards, llama-gguf-split wrote %d", len(shards), len(c.Outputs))
			}
			if err := split.Write(context.Background(), in, shards, false); err != nil {
				t.Fatal(err)
			}
			for _, s := range shards {
				want, ok := c.Outputs[filepath.Base(s.Path)]
				if !ok {
					t.Fatalf("shard %s: llama-gguf-split has no such file", filepath.Base(s.Path))
				}
				if got := sum(t, s.Path); got != want {
					t.Errorf("%s: sha256 %s, llama-gguf-split %s", filepath.Base(s.Path), got, want)
				}
			}
			m, err := split.PlanMerge(shards[0].Path, split.MergeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "merged.gguf")
			if err := split.Merge(context.Background(), m, out, split.MergeOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := sum(t, out); got != c.Merged {
				t.Errorf("merged: sha256 %s, llama-gguf-split --merge %s", got, c.Merged)
			}
		})
	}
}

// localGGUFs are the valid GGUFs of the repository's testdata.
func localGGUFs(t *testing.T) []string {
	var files []string
	for _, pat := range []string{"../testdata/gguf/*.gguf", "../testdata/stories260K/gguf/*.gguf", "../testdata/stories260K/quantized/*.gguf"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	var valid []string
	for _, f := range files {
		if r, err := ggufread.Open(f); err == nil {
			r.Close()
			valid = append(valid, f)
		}
	}
	if len(valid) < 10 {
		t.Fatalf("only %d GGUFs in testdata", len(valid))
	}
	return valid
}

// TestRoundTrip: split, then merge with DropSplitKeys, gives a file with
// the same metadata and the same tensor bytes as the input, and the very
// bytes of every input laid out as gguf.cpp lays files out (version 3,
// little-endian, the split tool's tensor order and packing).
func TestRoundTrip(t *testing.T) {
	for _, p := range localGGUFs(t) {
		t.Run(filepath.Base(p), func(t *testing.T) { roundTrip(t, p) })
	}
}

// TestRoundTripShared does the same for every valid GGUF of the reference
// data beside the project (.ci/run sets GGUFKIT_SHARED).
func TestRoundTripShared(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	var files []string
	for _, pat := range []string{"data/llamacpp-vocab/*.gguf", "data/gguf-other-writer/*/*.gguf", "reference/*/gguf/*.gguf", "reference/*/quantized/*.gguf", "reference/*/quantized/*/*.gguf"} {
		m, _ := filepath.Glob(filepath.Join(shared, pat))
		files = append(files, m...)
	}
	n := 0
	for _, p := range files {
		r, err := ggufread.Open(p)
		if err != nil {
			continue // the invalid ones are the reader's tests
		}
		r.Close()
		n++
		rel, _ := filepath.Rel(shared, p)
		t.Run(rel, func(t *testing.T) { roundTrip(t, p) })
	}
	if n < 40 {
		t.Fatalf("only %d valid GGUFs under %s", n, shared)
	}
}

func roundTrip(t *testing.T, path string) {
	in, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dir := t.TempDir()
	first := filepath.Join(dir, "x-00001-of-00001.gguf")
	for _, opts := range []split.Options{{MaxTensors: 3}, {MaxBytes: 100 << 10, NoTensorFirstSplit: true}} {
		for _, f := range mustGlob(t, filepath.Join(dir, "*")) {
			os.Remove(f)
		}
		if len(in.Tensors) > 0 && opts.MaxBytes > 0 && in.TensorSize(0) > uint64(opts.MaxBytes) {
			opts.MaxBytes = int64(in.TensorSize(0)) * 2
		}
		shards, err := split.Plan(in, filepath.Join(dir, "x"), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := split.Write(context.Background(), in, shards, false); err != nil {
			t.Fatal(err)
		}
		first = shards[0].Path
		m, err := split.PlanMerge(first, split.MergeOptions{DropSplitKeys: true})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "merged.gguf")
		if err := split.Merge(context.Background(), m, out, split.MergeOptions{DropSplitKeys: true}); err != nil {
			t.Fatal(err)
		}
		sameContent(t, in, out)
		if canonical(in) {
			a, _ := os.ReadFile(path)
			b, _ := os.ReadFile(out)
			if !bytes.Equal(a, b) {
				t.Fatalf("%+v: merged file differs from the original", opts)
			}
		}
	}
}

func mustGlob(t *testing.T, pat string) []string {
	m, err := filepath.Glob(pat)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// canonical reports whether a file is laid out as gguf.cpp writes files:
// version 3, little-endian, no split keys, tensors packed in order at the
// alignment, shapes without trailing 1s, padding after the last tensor.
func canonical(f *ggufread.File) bool {
	if f.Version != 3 || f.ByteOrder.String() != "LittleEndian" || !f.EndsPadded() {
		return false
	}
	if _, ok := f.KV(gguf.KeySplitCount); ok {
		return false
	}
	next := uint64(0)
	for i, t := range f.Tensors {
		if t.Offset != next || (len(t.Shape) > 1 && t.Shape[len(t.Shape)-1] == 1) {
			return false
		}
		next, _ = gguf.AlignUp(t.Offset+f.TensorSize(i), f.Alignment)
	}
	return true
}

// sameContent checks that the GGUF at path has in's metadata and tensors.
func sameContent(t *testing.T, in *ggufread.File, path string) {
	t.Helper()
	out, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// A shard given as input loses its own split.* keys: the split
	// overwrites them (as llama-gguf-split does) and the merge drops them.
	want := withoutSplitKeys(in.KVs)
	if len(out.KVs) != len(want) {
		t.Fatalf("%d keys, the input has %d besides split.*", len(out.KVs), len(want))
	}
	for i, kv := range want {
		if out.KVs[i].Key != kv.Key || !out.KVs[i].Value.Equal(kv.Value) {
			t.Fatalf("key #%d: %s, the input has %s", i, out.KVs[i].Key, kv.Key)
		}
	}
	if len(out.Tensors) != len(in.Tensors) {
		t.Fatalf("%d tensors, the input has %d", len(out.Tensors), len(in.Tensors))
	}
	for i, ti := range in.Tensors {
		to := out.Tensors[i]
		if to.Name != ti.Name || to.Type != ti.Type || !gguf.SameShape(to.Shape, ti.Shape) {
			t.Fatalf("tensor #%d: %s %s %v, the input has %s %s %v", i, to.Name, to.Type, to.Shape, ti.Name, ti.Type, ti.Shape)
		}
		a, err := in.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := out.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("tensor %s: data differs", ti.Name)
		}
	}
}

func withoutSplitKeys(kvs []gguf.KV) []gguf.KV {
	var out []gguf.KV
	for _, kv := range kvs {
		switch kv.Key {
		case gguf.KeySplitNo, gguf.KeySplitCount, gguf.KeySplitTensorsCount:
		default:
			out = append(out, kv)
		}
	}
	return out
}

// TestSharedSplitSet: the reference data's llama-gguf-split set of
// tiny-llama (--split-max-tensors 10, its command in logs/) is what split
// writes from the same file, and merging it without the split keys gives
// that file back.
func TestSharedSplitSet(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	ref := filepath.Join(shared, "reference/tiny-llama")
	src := filepath.Join(ref, "gguf/tiny-llama-F32.gguf")
	in, err := ggufread.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dir := t.TempDir()
	shards, err := split.Plan(in, filepath.Join(dir, "tiny-llama-F32"), split.Options{MaxTensors: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := split.Write(context.Background(), in, shards, false); err != nil {
		t.Fatal(err)
	}
	if len(shards) != 3 {
		t.Fatalf("%d shards, llama-gguf-split wrote 3", len(shards))
	}
	for _, s := range shards {
		want := filepath.Join(ref, "quantized/split", filepath.Base(s.Path))
		if sum(t, s.Path) != sum(t, want) {
			t.Errorf("%s differs from llama-gguf-split's", filepath.Base(s.Path))
		}
	}
	m, err := split.PlanMerge(filepath.Join(ref, "quantized/split/tiny-llama-F32-00001-of-00003.gguf"), split.MergeOptions{DropSplitKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "merged.gguf")
	if err := split.Merge(context.Background(), m, out, split.MergeOptions{DropSplitKeys: true}); err != nil {
		t.Fatal(err)
	}
	if sum(t, out) != sum(t, src) {
		t.Error("merging the reference set without split keys does not give tiny-llama-F32.gguf back")
	}
}

// writeGGUF writes a small GGUF with the given extra pairs and tensors of
// 64 F32 values each.
func writeGGUF(t *testing.T, path string, kvs []gguf.KV, names ...string) {
	t.Helper()
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKV("general.architecture", gguf.String("llama"))
	for _, kv := range kvs {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, n := range names {
		if err := w.AddTensor(n, gguf.F32, []uint64{64}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := w.WriteTensor(n, make([]byte, 256)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func splitKVs(no, count, tensors int) []gguf.KV {
	return []gguf.KV{{Key: gguf.KeySplitNo, Value: gguf.Uint16(uint16(no))},
		{Key: gguf.KeySplitTensorsCount, Value: gguf.Int32(int32(tensors))},
		{Key: gguf.KeySplitCount, Value: gguf.Uint16(uint16(count))}}
}

// TestBadSets: a set llama-gguf-split would merge into a wrong model, or
// abort on, is refused with an error that names the problem, and no output
// is left.
func TestBadSets(t *testing.T) {
	cases := []struct {
		name   string
		shards [][]string // tensors of each shard; nil shard: missing file
		kvs    func(s int) []gguf.KV
		want   string
	}{
		{"not a set", [][]string{{"a"}}, func(int) []gguf.KV { return nil }, "has no split.count"},
		{"missing shard", [][]string{{"a"}, nil}, func(s int) []gguf.KV { return splitKVs(s, 2, 1) }, "no such file"},
		{"wrong split.no", [][]string{{"a"}, {"b"}}, func(int) []gguf.KV { return splitKVs(0, 2, 2) }, "split.no is 0, expected 1"},
		{"wrong split.count", [][]string{{"a"}, {"b"}}, func(s int) []gguf.KV { return splitKVs(s, 2-s, 2) }, "split.count is 1, the first shard says 2"},
		{"duplicate tensor", [][]string{{"a"}, {"a"}}, func(s int) []gguf.KV { return splitKVs(s, 2, 2) }, `tensor "a" is in both`},
		{"tensor count", [][]string{{"a"}, {"b"}}, func(s int) []gguf.KV { return splitKVs(s, 2, 3) }, "says 3 tensors, the 2 shards hold 2"},
		{"split.count 0", [][]string{{"a"}}, func(int) []gguf.KV { return splitKVs(0, 0, 1) }, "not a positive uint16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			n := len(c.shards)
			for s, names := range c.shards {
				if names == nil {
					continue
				}
				writeGGUF(t, split.Path(filepath.Join(dir, "m"), s, n), c.kvs(s), names...)
			}
			out := filepath.Join(dir, "out.gguf")
			m, err := split.PlanMerge(split.Path(filepath.Join(dir, "m"), 0, n), split.MergeOptions{})
			if err == nil {
				err = split.Merge(context.Background(), m, out, split.MergeOptions{})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("output left behind: %v", err)
			}
		})
	}
}

// TestMergeWrongName: the first shard's name must carry the suffix its
// split.count implies (llama_split_prefix).
func TestMergeWrongName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeGGUF(t, p, splitKVs(0, 1, 1), "a")
	if _, err := split.PlanMerge(p, split.MergeOptions{}); !errors.Is(err, split.ErrNotFirstShard) {
		t.Fatalf("err %v, want ErrNotFirstShard", err)
	}
}

// TestEmptyShard: a size limit below the first tensor's size leaves a shard
// without tensors, which llama-gguf-split refuses too.
func TestEmptyShard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeGGUF(t, p, nil, "a", "b")
	in, err := ggufread.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, opts := range []split.Options{{MaxBytes: 100}, {MaxBytes: 100, NoTensorFirstSplit: true}} {
		if _, err := split.Plan(in, filepath.Join(dir, "o"), opts); !errors.Is(err, split.ErrEmptyShard) {
			t.Errorf("%+v: err %v, want ErrEmptyShard", opts, err)
		}
	}
	// One tensor per shard once each fits.
	shards, err := split.Plan(in, filepath.Join(dir, "o"), split.Options{MaxBytes: 256})
	if err != nil || len(shards) != 2 {
		t.Fatalf("%d shards, err %v", len(shards), err)
	}
}

// TestWriteFailureRemovesShards: when a later shard cannot be written, the
// shards published before it are removed.
func TestWriteFailureRemovesShards(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeGGUF(t, p, nil, "a", "b", "c")
	in, err := ggufread.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	shards, err := split.Plan(in, filepath.Join(dir, "o"), split.Options{MaxTensors: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The third shard's name is taken: without overwrite it is refused.
	if err := os.WriteFile(shards[2].Path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := split.Write(context.Background(), in, shards, false); !errors.Is(err, writer.ErrExists) {
		t.Fatalf("err %v, want ErrExists", err)
	}
	for _, s := range shards[:2] {
		if _, err := os.Stat(s.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", s.Path)
		}
	}
}
