package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/quantize/mix"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

const (
	storiesF32     = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
	storiesImatrix = "../../testdata/stories260K/quantized/imatrix.gguf"
	storiesDat     = "../../testdata/stories260K/quantized/imatrix.dat"
)

// roundTripTypes are the ggml types a GGUF can store that ggufkit encodes
// (Q8_1 and Q8_K are ggml's activation formats, never written to a file).
var roundTripTypes = []gguf.Type{
	gguf.F16, gguf.BF16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K,
	gguf.Q5_K, gguf.Q6_K, gguf.IQ2_XXS, gguf.IQ2_XS, gguf.IQ3_XXS, gguf.IQ1_S, gguf.IQ1_M, gguf.IQ4_NL, gguf.IQ3_S,
	gguf.IQ2_S, gguf.IQ4_XS, gguf.TQ1_0, gguf.TQ2_0, gguf.MXFP4, gguf.NVFP4, gguf.Q1_0, gguf.Q2_0,
}

type roundTripModel struct {
	name, f32, imatrix string
}

// roundTripModels are stories260K (rows of 64 and 172: most types fall back)
// and, with GGUFKIT_SHARED, tiny-llama (rows of 256, 512 and 1024: every
// type applies as asked).
func roundTripModels(t *testing.T) []roundTripModel {
	ms := []roundTripModel{{"stories260K", storiesF32, storiesImatrix}}
	if shared := os.Getenv("GGUFKIT_SHARED"); shared != "" {
		root := filepath.Join(shared, "reference", "tiny-llama")
		ms = append(ms, roundTripModel{"tiny-llama", filepath.Join(root, "gguf", "tiny-llama-F32.gguf"),
			filepath.Join(root, "quantized", "imatrix.gguf")})
	}
	return ms
}

// TestQuantizePureRoundTrip runs `ggufkit quantize --pure` from a real F32
// GGUF to every type and back to F32 with --allow-requantize. Every tensor
// llama-quantize would quantize must come out as the type asked for (or its
// row-length fallback), its bytes must be quantize.Encode's of the input
// rows with the imatrix's weights, and the F32 file must hold
// quantize.Decode's values of those bytes, bit for bit; the other tensors
// must be copied unchanged.
func TestQuantizePureRoundTrip(t *testing.T) {
	for _, m := range roundTripModels(t) {
		im, err := imatrix.Load(m.imatrix)
		if err != nil {
			t.Fatal(err)
		}
		in := openGGUF(t, m.f32)
		for _, typ := range roundTripTypes {
			for _, withIM := range []bool{false, true} {
				if !withIM && quantize.RequiresImatrix(typ) {
					continue
				}
				name := m.name + "/" + typ.String()
				if withIM {
					name += "+imatrix"
				}
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					q, back := filepath.Join(dir, "q.gguf"), filepath.Join(dir, "back.gguf")
					args := []string{"quantize", "--pure"}
					var weights map[string][]float32
					if withIM {
						args = append(args, "--imatrix", m.imatrix)
						weights = im.Weights
					}
					fixed := map[string]gguf.Type{}
					if quantize.RequiresImatrix(typ) {
						// llama-imatrix collects no weights for these two
						// (ggml would abort; ggufkit refuses: requantize's TestMissingWeights).
						args = append(args, "--output-tensor-type", "q8_0", "--token-embedding-type", "q8_0")
						fixed["output.weight"], fixed["token_embd.weight"] = gguf.Q8_0, gguf.Q8_0
					}
					args = append(args, m.f32, q, "ggml:"+typ.String(), "2")
					if bad := noFallback(in, typ); bad != "" {
						// llama-quantize throws here too (tensor_type_fallback
						// has no fallback for this type).
						_, errs, code := runCLI(t, args...)
						if code == 0 || !strings.Contains(errs, bad) || !strings.Contains(errs, "no fallback") {
							t.Fatalf("exit %d, stderr %q: want a no-fallback error naming %s", code, errs, bad)
						}
						if _, err := os.Stat(q); !os.IsNotExist(err) {
							t.Fatal("a failed run left an output file")
						}
						return
					}
					mustRun(t, args...)
					mustRun(t, "quantize", "--allow-requantize", q, back, "F32", "3")
					checkRoundTrip(t, in, openGGUF(t, q), openGGUF(t, back), typ, fixed, weights)
				})
			}
		}
	}
}

// noFallback names the first tensor that llama-quantize would quantize whose
// rows do not fit typ when typ has no fallback type ("" if there is none).
func noFallback(in *ggufread.File, typ gguf.Type) string {
	for _, ti := range in.Tensors {
		if mix.AllowsQuantization(in.Architecture(), ti.Name, ti.Shape, &mix.Options{}) {
			if _, _, err := mix.Fallback(typ, ti.Shape[0]); err != nil {
				return ti.Name
			}
		}
	}
	return ""
}

func checkRoundTrip(t *testing.T, in, q, back *ggufread.File, typ gguf.Type, fixed map[string]gguf.Type, weights map[string][]float32) {
	t.Helper()
	if len(q.Tensors) != len(in.Tensors) || len(back.Tensors) != len(in.Tensors) {
		t.Fatalf("tensor counts %d → %d → %d", len(in.Tensors), len(q.Tensors), len(back.Tensors))
	}
	changed := 0
	for _, ti := range in.Tensors {
		qi, ok1 := q.Tensor(ti.Name)
		bi, ok2 := back.Tensor(ti.Name)
		if !ok1 || !ok2 {
			t.Fatalf("%s missing from an output", ti.Name)
		}
		src := tensorData(t, in, ti.Name)
		ncols := int(ti.Shape[0])
		want := ti.Type // not quantized: copied
		if mix.AllowsQuantization(in.Architecture(), ti.Name, ti.Shape, &mix.Options{}) {
			fb, _, err := mix.Fallback(typ, ti.Shape[0])
			if err != nil {
				t.Fatalf("%s: %v", ti.Name, err)
			}
			want = fb
			if f, ok := fixed[ti.Name]; ok {
				want = f
			}
		}
		if qi.Type != want {
			t.Fatalf("%s [%d cols] is %s, want %s", ti.Name, ncols, qi.Type, want)
		}
		if bi.Type != gguf.F32 {
			t.Fatalf("%s is %s after dequantizing to F32", ti.Name, bi.Type)
		}
		got, backData := tensorData(t, q, ti.Name), tensorData(t, back, ti.Name)
		if qi.Type == ti.Type {
			if !bytes.Equal(got, src) || !bytes.Equal(backData, src) {
				t.Fatalf("%s: a copied tensor changed", ti.Name)
			}
			continue
		}
		changed++
		f32 := floats(src)
		enc := make([]byte, len(got))
		if err := quantize.Encode(qi.Type, enc, f32, ncols, weights[ti.Name]); err != nil {
			t.Fatalf("%s: %v", ti.Name, err)
		}
		if !bytes.Equal(enc, got) {
			t.Fatalf("%s: %s bytes differ from quantize.Encode's", ti.Name, qi.Type)
		}
		dec := make([]float32, len(f32))
		if err := quantize.Decode(qi.Type, dec, got, ncols); err != nil {
			t.Fatalf("%s: %v", ti.Name, err)
		}
		if !bytes.Equal(f32le(dec), backData) {
			t.Fatalf("%s: F32 values differ from quantize.Decode's of the %s bytes", ti.Name, qi.Type)
		}
	}
	if changed == 0 {
		t.Fatalf("no tensor was quantized to %s or a fallback", typ)
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("ggufkit %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

func openGGUF(t *testing.T, path string) *ggufread.File {
	t.Helper()
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func tensorData(t *testing.T, f *ggufread.File, name string) []byte {
	t.Helper()
	b, err := f.TensorData(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32le(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// tensorTypes maps each tensor of a GGUF to its type.
func tensorTypes(t *testing.T, path string) map[string]gguf.Type {
	t.Helper()
	f := openGGUF(t, path)
	m := map[string]gguf.Type{}
	for _, ti := range f.Tensors {
		m[ti.Name] = ti.Type
	}
	return m
}

func kvString(t *testing.T, f *ggufread.File, key string) string {
	t.Helper()
	v, ok := f.KV(key)
	if !ok {
		return "<absent>"
	}
	return fmt.Sprint(v.Any())
}
