package requantize

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
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
	"github.com/ggufkit/ggufkit/writer"
)

const stories = "../testdata/stories260K"

func target(t *testing.T, s string) mix.Target {
	t.Helper()
	tg, err := mix.ParseTarget(s)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestStoriesReferences reproduces three llama-quantize outputs of
// stories260K byte for byte (rows of 64 and 172 exercise the fallbacks).
func TestStoriesReferences(t *testing.T) {
	im, err := imatrix.Load(filepath.Join(stories, "quantized/imatrix.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ref     string
		typ     string
		imatrix bool
	}{
		{"stories260K-Q4_K_M-imat.gguf", "Q4_K_M", true},
		{"stories260K-IQ2_XXS-imat.gguf", "IQ2_XXS", true},
		{"stories260K-Q2_K.gguf", "Q2_K", false},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.gguf")
			opts := Options{Target: target(t, c.typ), Workers: 3}
			if c.imatrix {
				// llama-quantize records the path as given on its command line.
				opts.IMatrix, opts.IMatrixFile = im, "imatrix.gguf"
			}
			if _, err := Run(context.Background(), filepath.Join(stories, "gguf/stories260K-F32.gguf"), out, opts); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, out, filepath.Join(stories, "quantized", c.ref))
		})
	}
}

func sameBytes(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		i := 0
		for i < min(len(g), len(w)) && g[i] == w[i] {
			i++
		}
		t.Fatalf("differs from llama-quantize's output at byte %d (sizes %d / %d)", i, len(g), len(w))
	}
}

// smallModel writes a one-layer llama-shaped F32 GGUF whose rows are 256
// wide, so the very low-bit types apply without fallback.
func smallModel(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "small.gguf")
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKV(gguf.KeyGeneralArchitecture, gguf.String("llama"))
	w.SetKV("llama.block_count", gguf.Uint32(1))
	w.SetKV("llama.attention.head_count", gguf.Uint32(4))
	w.SetKV("llama.attention.head_count_kv", gguf.Uint32(4))
	names := []string{"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight"}
	for _, n := range names {
		w.AddTensor(n, gguf.F32, []uint64{256, 8})
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 256*8*4)
	for i := 0; i < len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(math.Sin(float64(i)))))
	}
	for _, n := range names {
		if err := w.WriteTensor(n, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNeedsImatrix(t *testing.T) {
	in := smallModel(t)
	out := filepath.Join(t.TempDir(), "out.gguf")
	_, err := Run(context.Background(), in, out, Options{Target: target(t, "IQ2_XXS")})
	if !errors.Is(err, ErrNeedImatrix) || !strings.Contains(err.Error(), `"blk.0.attn_q.weight" would be IQ2_XXS`) {
		t.Fatalf("err %v, want ErrNeedImatrix", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("an output file was left behind")
	}
	// A dry run only notes it.
	rep, err := Run(context.Background(), in, out, Options{Target: target(t, "IQ2_XXS"), DryRun: true})
	if err != nil || !rep.NeedsImatrix {
		t.Fatalf("dry run: %v, needs imatrix %v", err, rep != nil && rep.NeedsImatrix)
	}
	// IQ1_M: llama-quantize demands weights, ggml does not; as a plain ggml
	// type it runs without.
	if _, err := Run(context.Background(), in, out, Options{Target: target(t, "IQ1_M")}); !errors.Is(err, ErrNeedImatrix) {
		t.Fatalf("IQ1_M preset: %v", err)
	}
	if _, err := Run(context.Background(), in, out, Options{Target: target(t, "ggml:IQ1_M")}); err != nil {
		t.Fatalf("ggml:IQ1_M: %v", err)
	}
}

// TestMissingWeights: a ggml type that cannot run without importance
// weights, on a tensor the imatrix has no entry for (llama-imatrix never
// collects token_embd or output), is an error naming the tensor and leaves
// no output; llama-quantize lets ggml_quantize_chunk abort there.
func TestMissingWeights(t *testing.T) {
	in := smallModel(t)
	w := make([]float32, 256)
	for i := range w {
		w[i] = 1 + float32(i%7)
	}
	im := &imatrix.Matrix{Weights: map[string][]float32{"blk.0.attn_q.weight": w, "blk.0.ffn_down.weight": w}}
	for _, typ := range []string{"ggml:IQ2_XXS", "ggml:IQ2_XS", "ggml:IQ1_S"} {
		t.Run(typ, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := Run(context.Background(), in, out, Options{Target: target(t, typ), IMatrix: im, IMatrixFile: "im.gguf"})
			if err == nil || !strings.Contains(err.Error(), `"token_embd.weight"`) || !strings.Contains(err.Error(), "importance matrix") {
				t.Fatalf("err %v, want a missing-weights error naming token_embd.weight", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatal("a failed run left an output file")
			}
			// With the weightless tensor given another type, the run succeeds.
			q8 := gguf.Q8_0
			if _, err := Run(context.Background(), in, out, Options{Target: target(t, typ), IMatrix: im, IMatrixFile: "im.gguf",
				TokenEmbdType: &q8}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRequantizeRefused(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "q4.gguf")
	if _, err := Run(context.Background(), filepath.Join(stories, "gguf/stories260K-F32.gguf"), q, Options{Target: target(t, "Q4_0")}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "q8.gguf")
	if _, err := Run(context.Background(), q, out, Options{Target: target(t, "Q8_0")}); !errors.Is(err, ErrRequantize) {
		t.Fatalf("err %v, want ErrRequantize", err)
	}
	// With allow-requantize, F32 dequantizes.
	if _, err := Run(context.Background(), q, out, Options{Target: target(t, "F32"), AllowRequantize: true}); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors {
		if ti.Type != gguf.F32 {
			t.Fatalf("%s is %s after dequantizing to F32", ti.Name, ti.Type)
		}
	}
}

// TestWorkersInvariant: the output does not depend on the worker count.
func TestWorkersInvariant(t *testing.T) {
	dir := t.TempDir()
	var sums []string
	for _, w := range []int{1, 2, 7} {
		out := filepath.Join(dir, "out.gguf")
		if _, err := Run(context.Background(), filepath.Join(stories, "gguf/stories260K-F32.gguf"), out,
			Options{Target: target(t, "Q5_K_M"), Workers: w, Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		h := sha256.Sum256(b)
		sums = append(sums, hex.EncodeToString(h[:]))
	}
	if sums[0] != sums[1] || sums[0] != sums[2] {
		t.Fatalf("outputs differ by worker count: %v", sums)
	}
}

func TestKVOverridesAndPrune(t *testing.T) {
	ov, err := ParseKVOverride("llama.context_length=int:-1024")
	if err != nil {
		t.Fatal(err)
	}
	ov2, _ := ParseKVOverride("general.name=str:pruned")
	out := filepath.Join(t.TempDir(), "out.gguf")
	_, err = Run(context.Background(), filepath.Join(stories, "gguf/stories260K-F32.gguf"), out,
		Options{Target: target(t, "Q8_0"), KVOverrides: []KVOverride{ov, ov2}, PruneLayers: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := len(f.KVs)
	keys := []string{f.KVs[n-3].Key, f.KVs[n-2].Key, f.KVs[n-1].Key}
	if strings.Join(keys, " ") != "llama.context_length general.name llama.block_count" {
		t.Fatalf("last keys %v", keys)
	}
	if v, _ := f.KV("llama.context_length"); v.Any() != uint32(1024) {
		t.Fatalf("context_length %#v, want uint32 1024 (llama-quantize stores |int| as u32)", v)
	}
	if v, _ := f.KV("llama.block_count"); v.Any() != uint32(3) {
		t.Fatalf("block_count %#v after pruning 2 of 5", v)
	}
	var blocks []string
	for _, ti := range f.Tensors {
		if strings.HasSuffix(ti.Name, "attn_q.weight") {
			blocks = append(blocks, ti.Name)
		}
	}
	if strings.Join(blocks, " ") != "blk.0.attn_q.weight blk.1.attn_q.weight blk.2.attn_q.weight" {
		t.Fatalf("blocks after pruning: %v", blocks)
	}
}

func TestParseKVOverride(t *testing.T) {
	for _, bad := range []string{"noequals", "=int:1", "k=int:x", "k=float:", "k=bool:yes", "k=blob:1", "k=str:" + strings.Repeat("x", 128)} {
		if _, err := ParseKVOverride(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	o, err := ParseKVOverride("a.b=float:0.5")
	if err != nil || o.Value.Any() != float32(0.5) {
		t.Fatalf("%v %v", o, err)
	}
}

// TestSharedReferences replays every llama-quantize command of the
// reference models in ../shared (CI sets GGUFKIT_SHARED) and compares the
// sha256 of each output with the MANIFEST's.
func TestSharedReferences(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	cmds, err := refdata.Commands(shared, "quantize-*.cmd")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		args, root, man := c.Args[1:], c.Root, c.SHA256 // args after llama-quantize itself
		t.Run(c.Model+"/"+c.Name, func(t *testing.T) {
			opts, in, out := optionsFromArgs(t, filepath.Join(root, "quantized"), args)
			want, ok := man["quantized/"+out]
			dst := filepath.Join(t.TempDir(), out)
			_, err := Run(context.Background(), in, dst, opts)
			if !ok {
				if err == nil {
					t.Fatal("llama-quantize failed here (no output in MANIFEST), ggufkit succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(dst)
			h := sha256.Sum256(b)
			if got := hex.EncodeToString(h[:]); got != want {
				t.Fatalf("sha256 %s, llama-quantize %s", got, want)
			}
		})
	}
	if len(cmds) < 50 {
		t.Fatalf("only %d commands found", len(cmds))
	}
}

// optionsFromArgs turns llama-quantize's arguments into Options, relative
// to its working directory.
func optionsFromArgs(t *testing.T, cwd string, args []string) (Options, string, string) {
	var opts Options
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--imatrix":
			m, err := imatrix.Load(filepath.Join(cwd, args[i+1]))
			if err != nil {
				t.Fatal(err)
			}
			opts.IMatrix, opts.IMatrixFile = m, args[i+1]
			i++
		case "--pure":
			opts.Pure = true
		case "--leave-output-tensor":
			opts.LeaveOutput = true
		case "--allow-requantize":
			opts.AllowRequantize = true
		case "--output-tensor-type", "--token-embedding-type":
			ty, err := gguf.ParseType(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			if a == "--output-tensor-type" {
				opts.OutputType = &ty
			} else {
				opts.TokenEmbdType = &ty
			}
			i++
		case "--tensor-type":
			o, err := mix.ParseTypeOverride(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			opts.TensorTypes = append(opts.TensorTypes, o)
			i++
		default:
			if strings.HasPrefix(a, "--") {
				t.Fatalf("unhandled option %s", a)
			}
			pos = append(pos, a)
		}
	}
	opts.Target = target(t, pos[2])
	return opts, filepath.Join(cwd, pos[0]), pos[1]
}
