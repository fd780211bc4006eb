package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/refdata"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/quantize/mix"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/requantize"
)

const stories = "../testdata/stories260K"

// convertTo converts src with opts into a temporary file and returns it.
func convertTo(t *testing.T, src string, opts Options) string {
	t.Helper()
	if opts.OutFile == "" {
		opts.OutFile = filepath.Join(t.TempDir(), "out.gguf")
	}
	rep, err := Run(context.Background(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Output
}

// sameGGUF fails with the first difference (metadata pair, tensor info or
// tensor data) between two GGUF files that are not byte-identical.
func sameGGUF(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		return
	}
	t.Errorf("%s differs from %s (%d vs %d bytes): %s", filepath.Base(got), filepath.Base(want), len(a), len(b), firstDifference(t, got, want))
}

func firstDifference(t *testing.T, got, want string) string {
	fa, err := ggufread.Open(got)
	if err != nil {
		return err.Error()
	}
	defer fa.Close()
	fb, err := ggufread.Open(want)
	if err != nil {
		return err.Error()
	}
	defer fb.Close()
	for i := 0; i < max(len(fa.KVs), len(fb.KVs)); i++ {
		if i >= len(fa.KVs) || i >= len(fb.KVs) {
			return fmt.Sprintf("metadata count %d vs %d", len(fa.KVs), len(fb.KVs))
		}
		ka, kb := fa.KVs[i], fb.KVs[i]
		if ka.Key != kb.Key || !ka.Value.Equal(kb.Value) || ka.Value.Type() != kb.Value.Type() {
			return fmt.Sprintf("metadata #%d: %s = %#v, want %s = %#v", i, ka.Key, ka.Value, kb.Key, kb.Value)
		}
	}
	for i := 0; i < max(len(fa.Tensors), len(fb.Tensors)); i++ {
		if i >= len(fa.Tensors) || i >= len(fb.Tensors) {
			return fmt.Sprintf("tensor count %d vs %d", len(fa.Tensors), len(fb.Tensors))
		}
		ta, tb := fa.Tensors[i], fb.Tensors[i]
		if ta.Name != tb.Name || ta.Type != tb.Type || fmt.Sprint(ta.Shape) != fmt.Sprint(tb.Shape) {
			return fmt.Sprintf("tensor #%d: %s %s %v, want %s %s %v", i, ta.Name, ta.Type, ta.Shape, tb.Name, tb.Type, tb.Shape)
		}
		da, _ := fa.TensorData(ta.Name)
		db, _ := fb.TensorData(tb.Name)
		if !bytes.Equal(da, db) {
			for j := range min(len(da), len(db)) {
				if da[j] != db[j] {
					return fmt.Sprintf("tensor %s: data differs at byte %d of %d", ta.Name, j, len(da))
				}
			}
			return fmt.Sprintf("tensor %s: %d vs %d bytes", ta.Name, len(da), len(db))
		}
	}
	return "headers and tensors equal; padding or alignment differs"
}

// TestStories260K converts the bundled model, single file and sharded, to
// each converter type and compares with llama.cpp's files byte for byte.
func TestStories260K(t *testing.T) {
	for _, src := range []string{"source", "source-sharded"} {
		for _, tc := range []struct{ outtype, want string }{
			{"f32", stories + "/gguf/stories260K-F32.gguf"},
			{"f16", stories + "/gguf/stories260K-F16.gguf"},
			{"bf16", stories + "/gguf/stories260K-BF16.gguf"},
			{"q8_0", "../testdata/gguf/stories260K-Q8_0.gguf"},
		} {
			t.Run(src+"/"+tc.outtype, func(t *testing.T) {
				got := convertTo(t, filepath.Join(stories, src), Options{OutType: tc.outtype, ModelName: "stories260K"})
				if src == "source-sharded" {
					// A sharded source lists its tensors shard by shard: same
					// tensors, another order. Compare through the other
					// source's conversion instead.
					return
				}
				sameGGUF(t, got, tc.want)
			})
		}
	}
}

// TestOnePass: --outtype Q4_K_M from the checkpoint equals ggufkit
// quantize of the F32 conversion, and, here, llama-quantize's own file.
func TestOnePass(t *testing.T) {
	im, err := imatrix.Load(filepath.Join(stories, "quantized/imatrix.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, outtype string
		im            *imatrix.Matrix
		want          string
	}{
		{"Q4_K_M-imat", "Q4_K_M", im, stories + "/quantized/stories260K-Q4_K_M-imat.gguf"},
		{"Q2_K", "Q2_K", nil, stories + "/quantized/stories260K-Q2_K.gguf"},
		{"IQ2_XXS-imat", "IQ2_XXS", im, stories + "/quantized/stories260K-IQ2_XXS-imat.gguf"},
		{"ggml-Q5_K", "ggml:Q5_K", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{OutType: tc.outtype, ModelName: "stories260K"}
			opts.Quantize.IMatrix = tc.im
			if tc.im != nil {
				opts.Quantize.IMatrixFile = "imatrix.gguf" // as llama-quantize recorded it
			}
			got := convertTo(t, filepath.Join(stories, "source"), opts)
			f32 := convertTo(t, filepath.Join(stories, "source"), Options{OutType: "f32", ModelName: "stories260K"})
			target, err := mix.ParseTarget(tc.outtype)
			if err != nil {
				t.Fatal(err)
			}
			two := filepath.Join(t.TempDir(), "two-pass.gguf")
			ropts := requantize.Options{Target: target, IMatrix: opts.Quantize.IMatrix, IMatrixFile: opts.Quantize.IMatrixFile}
			if _, err := requantize.Run(context.Background(), f32, two, ropts); err != nil {
				t.Fatal(err)
			}
			sameGGUF(t, got, two)
			if tc.want != "" {
				sameGGUF(t, got, tc.want)
			}
		})
	}
}

// TestShardedSameTensors: the sharded source converts to the same metadata
// and tensor bytes as the single file (the order follows the shards).
func TestShardedSameTensors(t *testing.T) {
	a := convertTo(t, filepath.Join(stories, "source"), Options{OutType: "f32", ModelName: "stories260K"})
	b := convertTo(t, filepath.Join(stories, "source-sharded"), Options{OutType: "f32", ModelName: "stories260K"})
	fa, err := ggufread.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := ggufread.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if len(fa.KVs) != len(fb.KVs) || len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%d/%d KVs, %d/%d tensors", len(fa.KVs), len(fb.KVs), len(fa.Tensors), len(fb.Tensors))
	}
	for i := range fa.KVs {
		if fa.KVs[i].Key != fb.KVs[i].Key || !fa.KVs[i].Value.Equal(fb.KVs[i].Value) {
			t.Errorf("metadata %s differs", fa.KVs[i].Key)
		}
	}
	for _, ti := range fa.Tensors {
		da, _ := fa.TensorData(ti.Name)
		db, err := fb.TensorData(ti.Name)
		if err != nil || !bytes.Equal(da, db) {
			t.Errorf("tensor %s differs (%v)", ti.Name, err)
		}
	}
}

// TestSharedReferences replays every convert_hf_to_gguf.py command of the
// reference models in ../shared (CI sets GGUFKIT_SHARED) and compares each
// output's sha256 with the MANIFEST's.
func TestSharedReferences(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	cmds, err := refdata.Commands(shared, "convert-*.cmd")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		args, model, root, man := c.Args, c.Model, c.Root, c.SHA256
		t.Run(model+"/"+c.Name, func(t *testing.T) {
			var opts Options
			var src, outRel string
			for i := 0; i < len(args); i++ {
				switch a := args[i]; a {
				case "--outtype":
					i++
					opts.OutType = args[i]
				case "--model-name":
					i++
					opts.ModelName = args[i]
				case "--outfile":
					i++
					outRel = strings.TrimPrefix(args[i], "reference/"+model+"/")
				default:
					if strings.HasPrefix(a, "reference/") {
						src = filepath.Join(shared, a)
					}
				}
			}
			want, ok := man[outRel]
			if !ok {
				t.Skipf("%s not in the MANIFEST", outRel)
			}
			opts.OutFile = filepath.Join(t.TempDir(), filepath.Base(outRel))
			if opts.ModelName == "" {
				// The default name comes from the source folder's name.
				dir := filepath.Join(t.TempDir(), filepath.Base(src))
				if err := os.Symlink(src, dir); err != nil {
					t.Fatal(err)
				}
				src = dir
			}
			got := convertTo(t, src, opts)
			b, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(b)
			if s := hex.EncodeToString(h[:]); s != want {
				ref := filepath.Join(root, outRel)
				if _, err := os.Stat(ref); err == nil {
					t.Fatalf("sha256 %s, llama.cpp %s: %s", s, want, firstDifference(t, got, ref))
				}
				t.Fatalf("sha256 %s, llama.cpp %s", s, want)
			}
		})
	}
	if len(cmds) < 10 {
		t.Fatalf("only %d commands found", len(cmds))
	}
}

// TestSplit: a split output (gguf-py's rule and shard layout) holds the
// unsplit file's metadata in its first shard, split.* in every shard, and
// the same tensors in the same order, for the converter's types and for a
// one-pass llama-quantize type.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       Options
		wantShards int
	}{
		{"f16-max-tensors", Options{OutType: "f16", SplitMaxTensors: 20}, 3},
		{"f16-max-size", Options{OutType: "f16", SplitMaxSize: 100_000}, 6},
		{"f16-small-first", Options{OutType: "f16", SplitMaxTensors: 30, NoTensorFirstSplit: true}, 3},
		{"Q4_K_M-max-tensors", Options{OutType: "Q4_K_M", SplitMaxTensors: 16}, 3},
		{"f32-limit-not-reached", Options{OutType: "f32", SplitMaxTensors: 1000}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			whole := tc.opts
			whole.SplitMaxTensors, whole.SplitMaxSize, whole.NoTensorFirstSplit = 0, 0, false
			whole.ModelName, whole.OutFile = "stories260K", filepath.Join(dir, "whole.gguf")
			ref := convertTo(t, filepath.Join(stories, "source"), whole)
			opts := tc.opts
			opts.ModelName, opts.OutFile = "stories260K", filepath.Join(dir, "split.gguf")
			rep, err := Run(context.Background(), filepath.Join(stories, "source"), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Outputs) != tc.wantShards {
				t.Fatalf("%d shards %v, want %d", len(rep.Outputs), rep.Outputs, tc.wantShards)
			}
			if tc.wantShards == 1 {
				sameGGUF(t, rep.Output, ref)
				return
			}
			fr, err := ggufread.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			var got []string
			for s, path := range rep.Outputs {
				if want := filepath.Join(dir, fmt.Sprintf("split-%05d-of-%05d.gguf", s+1, tc.wantShards)); path != want {
					t.Errorf("shard %d is %s, want %s", s, path, want)
				}
				f, err := ggufread.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var keys []string
				for _, kv := range f.KVs {
					keys = append(keys, kv.Key)
				}
				wantKeys := []string{"split.no", "split.count", "split.tensors.count"}
				if s == 0 {
					var all []string
					for _, kv := range fr.KVs {
						all = append(all, kv.Key)
					}
					wantKeys = append(all, wantKeys...)
				}
				if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
					t.Errorf("shard %d keys %v, want %v", s, keys, wantKeys)
				}
				if no, _ := f.KV("split.no"); !no.Equal(gguf.Uint16(uint16(s))) {
					t.Errorf("shard %d: split.no = %v", s, no)
				}
				if n := len(f.Tensors); (opts.SplitMaxTensors > 0 && n > opts.SplitMaxTensors) || (s == 0 && opts.NoTensorFirstSplit && n != 0) {
					t.Errorf("shard %d holds %d tensors", s, n)
				}
				var held uint64
				for _, ti := range f.Tensors {
					got = append(got, ti.Name)
					da, _ := f.TensorData(ti.Name)
					db, err := fr.TensorData(ti.Name)
					if err != nil || !bytes.Equal(da, db) {
						t.Errorf("tensor %s differs from the unsplit file's", ti.Name)
					}
					held += uint64(len(da))
				}
				if opts.SplitMaxSize > 0 && len(f.Tensors) > 1 && held > uint64(opts.SplitMaxSize) {
					t.Errorf("shard %d holds %d bytes of tensors, limit %d", s, held, opts.SplitMaxSize)
				}
			}
			var want []string
			for _, ti := range fr.Tensors {
				want = append(want, ti.Name)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("tensor order %v, want %v", got, want)
			}
		})
	}
}

// TestLlamaCppExtras reruns the llama.cpp conversions of
// testdata/convert/stories260K-llamacpp.json (split outputs, vocabulary-only
// files, default names) and compares every file's sha256 with llama.cpp's.
func TestLlamaCppExtras(t *testing.T) {
	b, err := os.ReadFile("../testdata/convert/stories260K-llamacpp.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name  string   `json:"name"`
			Args  []string `json:"args"`
			Files []struct {
				File   string `json:"file"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "stories260K-src")
			if err := os.CopyFS(src, os.DirFS(filepath.Join(stories, "source"))); err != nil {
				t.Fatal(err)
			}
			var opts Options
			for i := 0; i < len(c.Args); i++ {
				a := c.Args[i]
				next := func() string { i++; return c.Args[i] }
				switch a {
				case "--outtype":
					opts.OutType = next()
				case "--model-name":
					opts.ModelName = next()
				case "--outfile":
					opts.OutFile = filepath.Join(dir, next())
				case "--split-max-tensors":
					fmt.Sscan(next(), &opts.SplitMaxTensors)
				case "--split-max-size":
					s := next()
					fmt.Sscan(strings.TrimSuffix(s, "K"), &opts.SplitMaxSize)
					if strings.HasSuffix(s, "K") {
						opts.SplitMaxSize *= 1000
					}
				case "--no-tensor-first-split":
					opts.NoTensorFirstSplit = true
				case "--vocab-only":
					opts.VocabOnly = true
				default:
					t.Fatalf("argument %q not handled", a)
				}
			}
			rep, err := Run(context.Background(), src, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Outputs) != len(c.Files) {
				t.Fatalf("wrote %v, llama.cpp %d files", rep.Outputs, len(c.Files))
			}
			for i, f := range c.Files {
				if filepath.Base(rep.Outputs[i]) != f.File {
					t.Errorf("file %d is %s, llama.cpp %s", i, filepath.Base(rep.Outputs[i]), f.File)
				}
				data, err := os.ReadFile(rep.Outputs[i])
				if err != nil {
					t.Fatal(err)
				}
				if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != f.SHA256 {
					t.Errorf("%s: sha256 differs from llama.cpp's", f.File)
				}
			}
		})
	}
}

// TestPlanned: a planned conversion gives the F32 conversion's metadata,
// tensor list and values, computed on demand (permuted Q/K, generated
// rope_freqs, tied embeddings included).
func TestPlanned(t *testing.T) {
	for _, src := range []string{filepath.Join(stories, "source"), filepath.Join(fixtures, "llama3tied"), metaDir("split")} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			opts := Options{ModelName: "m"}
			if filepath.Base(src) == "llama3tied" {
				// The fixture's folder lacks its tokenizer: assemble it.
				src = assemble(t, src, loadFixture(t, src), false)
			}
			want := convertTo(t, src, Options{OutType: "f32", ModelName: "m"})
			p, err := Plan(context.Background(), src, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			f, err := ggufread.Open(want)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(p.KVs()) != len(f.KVs) {
				t.Fatalf("%d KVs, the F32 file %d", len(p.KVs()), len(f.KVs))
			}
			for i, kv := range p.KVs() {
				if kv.Key != f.KVs[i].Key || !kv.Value.Equal(f.KVs[i].Value) {
					t.Errorf("KV #%d %s differs", i, kv.Key)
				}
			}
			pts := p.Tensors()
			if len(pts) != len(f.Tensors) {
				t.Fatalf("%d tensors, the F32 file %d", len(pts), len(f.Tensors))
			}
			for i, pt := range pts {
				ti := f.Tensors[i]
				if pt.Name != ti.Name || fmt.Sprint(pt.Shape) != fmt.Sprint(ti.Shape) {
					t.Fatalf("tensor #%d %s %v, the F32 file %s %v", i, pt.Name, pt.Shape, ti.Name, ti.Shape)
				}
				n := uint64(1)
				for _, d := range pt.Shape {
					n *= d
				}
				dst := make([]float32, n)
				if err := p.ReadFloat32(context.Background(), pt.Name, dst); err != nil {
					t.Fatal(err)
				}
				raw, _ := f.TensorData(ti.Name)
				for j, v := range dst {
					if math.Float32bits(v) != binary.LittleEndian.Uint32(raw[4*j:]) {
						t.Fatalf("%s[%d] = %g, the F32 file %g", pt.Name, j, v, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
					}
				}
			}
			if err := p.ReadFloat32(context.Background(), "no.such.tensor", nil); err == nil {
				t.Error("an unknown tensor reads")
			}
		})
	}
}

// TestGGUFInputRefused: a GGUF given to convert gets a pointer to quantize.
func TestGGUFInputRefused(t *testing.T) {
	_, err := Run(context.Background(), stories+"/gguf/stories260K-F32.gguf", Options{OutFile: filepath.Join(t.TempDir(), "o.gguf")})
	if err == nil || !strings.Contains(err.Error(), "already a GGUF file") || !strings.Contains(err.Error(), "quantize") {
		t.Fatalf("error %v", err)
	}
}
