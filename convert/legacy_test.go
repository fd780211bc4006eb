package convert

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/readers"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/readers/hf"
	"github.com/ggufkit/ggufkit/requantize"
)

// meta holds stories260K in Meta's original layout, one and two
// model-parallel shards, with the digests of convert_legacy_llama.py's
// outputs (see its README).
const meta = "../testdata/meta"

var metaLayouts = []string{"single", "split"}

func metaDir(layout string) string { return filepath.Join(meta, layout, "stories260K") }

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// metaFixtures are the folders of testdata/meta, each with the folder
// holding its expected-<outtype>.json.
var metaFixtures = []struct{ name, dir, expected string }{
	{"single", metaDir("single"), meta},
	{"split", metaDir("split"), meta},
	{"moe", filepath.Join(meta, "moe", "mixtral-tiny"), filepath.Join(meta, "moe")},
}

// TestLegacyMeta: every folder converts to convert_legacy_llama.py's bytes
// for each of its output types; one and two shards to the same file.
func TestLegacyMeta(t *testing.T) {
	for _, outtype := range []string{"f32", "f16", "q8_0"} {
		got := map[string]string{}
		for _, fx := range metaFixtures {
			t.Run(outtype+"/"+fx.name, func(t *testing.T) {
				var exp fixtureExpected
				b, err := os.ReadFile(filepath.Join(fx.expected, "expected-"+outtype+".json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &exp); err != nil {
					t.Fatal(err)
				}
				out := convertTo(t, fx.dir, Options{OutType: outtype})
				if got[fx.name] = fileSHA256(t, out); got[fx.name] != exp.File.SHA256 {
					t.Fatalf("sha256 differs from convert_legacy_llama.py's: %s", describeDiff(out, &exp))
				}
			})
		}
		if got["single"] != got["split"] {
			t.Errorf("%s: one shard gives %s, two shards %s", outtype, got["single"], got["split"])
		}
	}
}

// TestLegacyDefault: without --outtype and --outfile the script picks F32
// for BF16 weights and names the file from the metadata (the folder's
// name) and the size label.
func TestLegacyDefault(t *testing.T) {
	var exp map[string]json.RawMessage
	b, err := os.ReadFile(filepath.Join(meta, "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, dir, as string }{
		// A folder name with a size label: the file name takes it,
		// general.size_label the count of the weights.
		{"named", metaDir("split"), "Tiny-Llama-7B-chat"},
	}
	for _, fx := range metaFixtures {
		cases = append(cases, struct{ name, dir, as string }{fx.name, fx.dir, filepath.Base(fx.dir)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want struct{ File, SHA256 string }
			if err := json.Unmarshal(exp[tc.as], &want); err != nil {
				t.Fatal(err)
			}
			// A copy: the default output goes beside the weights.
			dir := copyDir(t, tc.dir, tc.as)
			rep, err := Run(context.Background(), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if w := filepath.Join(dir, want.File); rep.Output != w {
				t.Errorf("output %s, want %s", rep.Output, w)
			}
			if got := fileSHA256(t, rep.Output); got != want.SHA256 {
				t.Errorf("sha256 %s, convert_legacy_llama.py %s", got, want.SHA256)
			}
		})
	}
}

// copyDir copies a folder's files into a new folder of the same name, or
// of the name given.
func copyDir(t *testing.T, src string, name ...string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if len(name) > 0 {
		dst = filepath.Join(filepath.Dir(dst), name[0])
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

// TestLegacyTokenizerFiles: tokenizer.model in the folder above the
// weights (Meta's own layout) gives the same file; a tokenizer_config.json
// beside them adds SpecialVocab's keys; --vocab-only writes the script's
// vocabulary file.
func TestLegacyTokenizerFiles(t *testing.T) {
	var f32 fixtureExpected
	var extras struct {
		TokenizerConfig struct{ SHA256 string } `json:"tokenizer_config"`
		VocabOnly       struct{ SHA256 string } `json:"vocab_only"`
	}
	for path, dst := range map[string]any{filepath.Join(meta, "expected-f32.json"): &f32, filepath.Join(meta, "extras.json"): &extras} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		opts Options
		want string
	}{
		{"above", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "tokenizer.model"), filepath.Join(filepath.Dir(dir), "tokenizer.model")); err != nil {
				t.Fatal(err)
			}
		}, Options{OutType: "f32"}, f32.File.SHA256},
		{"tokenizer_config", func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(stories, "source", "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, "tokenizer_config.json", string(b))
		}, Options{OutType: "f32"}, extras.TokenizerConfig.SHA256},
		{"vocab-only", func(*testing.T, string) {}, Options{VocabOnly: true}, extras.VocabOnly.SHA256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, metaDir("split"))
			tc.edit(t, dir)
			if got := fileSHA256(t, convertTo(t, dir, tc.opts)); got != tc.want {
				t.Errorf("sha256 %s, convert_legacy_llama.py %s", got, tc.want)
			}
		})
	}
}

// TestLegacyParams: params.json variants (LLaMA 1's norm_eps, CodeLlama's
// rope_theta, Llama 3's, a null one, no n_kv_heads) convert as the script
// converts them: its context-length heuristic, rope base and head counts.
func TestLegacyParams(t *testing.T) {
	var extras struct {
		Params []struct{ Params, SHA256 string }
	}
	b, err := os.ReadFile(filepath.Join(meta, "extras.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &extras); err != nil {
		t.Fatal(err)
	}
	if len(extras.Params) == 0 {
		t.Fatal("no params cases in extras.json")
	}
	for i, tc := range extras.Params {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := copyDir(t, metaDir("split"))
			write(t, dir, "params.json", tc.Params)
			if got := fileSHA256(t, convertTo(t, dir, Options{OutType: "f16"})); got != tc.SHA256 {
				t.Errorf("params.json %s: sha256 %s, convert_legacy_llama.py %s", tc.Params, got, tc.SHA256)
			}
		})
	}
}

// TestLegacyShardFile: a shard given as a file converts its whole folder,
// named after the folder (the script names it after the file).
func TestLegacyShardFile(t *testing.T) {
	want := convertTo(t, metaDir("split"), Options{OutType: "f16"})
	for _, name := range []string{"consolidated.00.pth", "consolidated.01.pth"} {
		t.Run(name, func(t *testing.T) {
			sameGGUF(t, convertTo(t, filepath.Join(metaDir("split"), name), Options{OutType: "f16"}), want)
		})
	}
}

// TestLegacyAddedTokens: added_tokens.json's new ids follow the pieces as
// USER_DEFINED tokens of score -1000; ids among the pieces are ignored.
func TestLegacyAddedTokens(t *testing.T) {
	dir := copyDir(t, metaDir("split"))
	write(t, dir, "added_tokens.json", `{"<b>": 513, "<a>": 512, "<s>": 1}`)
	kvs, n, err := legacyVocab(dir, 514)
	if err != nil {
		t.Fatal(err)
	}
	if n != 514 {
		t.Errorf("vocabulary size %d, want 514", n)
	}
	got := map[string]gguf.Value{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value
	}
	tokens, _ := got[gguf.KeyTokenizerTokens].Any().([]string)
	scores, _ := got[gguf.KeyTokenizerScores].Any().([]float32)
	types, _ := got[gguf.KeyTokenizerTokenType].Any().([]int32)
	if len(tokens) != 514 || len(scores) != 514 || len(types) != 514 {
		t.Fatalf("%d tokens, %d scores, %d types; want 514", len(tokens), len(scores), len(types))
	}
	for i, want := range []string{"<a>", "<b>"} {
		if id := 512 + i; tokens[id] != want || scores[id] != -1000 || types[id] != 4 {
			t.Errorf("token %d = %q, %g, type %d; want %q, -1000, 4", id, tokens[id], scores[id], types[id], want)
		}
	}
	if tokens[1] != "<s>" || types[1] != 3 {
		t.Errorf("token 1 = %q type %d, want the piece <s> (CONTROL)", tokens[1], types[1])
	}
}

// TestLegacyQuantized: a llama-quantize type is applied to the legacy F32
// conversion, as ggufkit quantize would apply it to that file.
func TestLegacyQuantized(t *testing.T) {
	got := convertTo(t, metaDir("split"), Options{OutType: "Q4_0"})
	f32 := convertTo(t, metaDir("split"), Options{OutType: "f32"})
	target, err := mix.ParseTarget("Q4_0")
	if err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(t.TempDir(), "two-pass.gguf")
	if _, err := requantize.Run(context.Background(), f32, two, requantize.Options{Target: target}); err != nil {
		t.Fatal(err)
	}
	sameGGUF(t, got, two)
}

// TestLegacyQ8_0: the script's numpy Q8_0 divides by d and rounds half to
// even where ggml multiplies by 1/d and rounds half away from zero.
func TestLegacyQ8_0(t *testing.T) {
	block := func(first ...float32) []float32 {
		x := make([]float32, 32)
		copy(x, first)
		return x
	}
	for _, tc := range []struct {
		name string
		x    []float32
		// q are the first quants the script writes; ggml's differ when
		// ggmlDiffers.
		q           []int8
		ggmlDiffers bool
	}{
		// d = 1: 2.5 and -0.5 are ties.
		{"ties-to-even", block(127, 2.5, -0.5, 3.5), []int8{127, 2, 0, 4}, true},
		{"zeros", block(), []int8{0, 0}, false},
		{"plain", block(-1, 0.25, 0.5), []int8{-127, 32, 64}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, q8Block)
			if err := legacyQ8_0(dst, tc.x, 32); err != nil {
				t.Fatal(err)
			}
			for i, q := range tc.q {
				if got := int8(dst[2+i]); got != q {
					t.Errorf("q[%d] = %d, want %d", i, got, q)
				}
			}
			amax := float32(0)
			for _, v := range tc.x {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			if d := binary.LittleEndian.Uint16(dst); d != quantize.FP32ToFP16(amax/127) {
				t.Errorf("d = %#04x", d)
			}
			ggml := make([]byte, q8Block)
			if err := quantize.Encode(gguf.Q8_0, ggml, tc.x, 32, nil); err != nil {
				t.Fatal(err)
			}
			if differs := string(ggml) != string(dst); differs != tc.ggmlDiffers {
				t.Errorf("ggml's Q8_0 differs: %v, want %v", differs, tc.ggmlDiffers)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		x     []float32
		ncols int
	}{
		{"partial-block", make([]float32, 40), 40},
		{"nan", block(float32(math.NaN())), 32},
		{"inf", block(float32(math.Inf(-1))), 32},
	} {
		t.Run("refuses/"+tc.name, func(t *testing.T) {
			if err := legacyQ8_0(make([]byte, len(tc.x)/32*q8Block), tc.x, tc.ncols); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestLegacyRefuses: what the script cannot convert (or converts into a
// file llama.cpp cannot load) is an error saying what is wrong.
func TestLegacyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, dir string)
		opts   Options
		errHas string
	}{
		{"tiktoken", func(t *testing.T, dir string) {
			write(t, dir, "tokenizer.model", "IQ== 0\nIg== 1\n")
		}, Options{}, "tiktoken BPE file (Llama 3)"},
		{"no-tokenizer", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.model"))
		}, Options{}, "no tokenizer.model here or in the folder above"},
		{"hfft", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.model"))
			write(t, dir, "tokenizer.json", "{}")
		}, Options{}, "--vocab-type hfft"},
		{"bad-tokenizer", func(t *testing.T, dir string) {
			write(t, dir, "tokenizer.model", "\x0a\x05")
		}, Options{}, "tokenizer.model"},
		{"vocab-size", func(t *testing.T, dir string) {
			write(t, dir, "added_tokens.json", `{"<extra>": 512}`)
		}, Options{}, "vocabulary size mismatch: the model has 512 token embeddings"},
		{"added-not-sequential", func(t *testing.T, dir string) {
			write(t, dir, "added_tokens.json", `{"<extra>": 513}`)
		}, Options{}, "not sequential from 512"},
		{"no-dim", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"n_heads": 8, "n_layers": 3, "norm_eps": 1e-05}`)
		}, Options{}, `params.json has no "dim"`},
		{"float-dim", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64.5, "n_heads": 8, "n_layers": 3, "norm_eps": 1e-05}`)
		}, Options{}, "dim = 64.5 is not an integer"},
		{"zero-eps", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64, "n_heads": 8, "n_layers": 3, "norm_eps": 0}`)
		}, Options{}, "norm_eps = 0"},
		{"too-few-layers", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64, "n_heads": 8, "n_layers": 2, "norm_eps": 1e-05}`)
		}, Options{}, `unexpected tensor name "layers.2.attention.wq.weight"`},
		{"huge-n_layers", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64, "n_heads": 8, "n_layers": 1000000000000, "norm_eps": 1e-05}`)
		}, Options{}, "n_layers = 1000000000000, but the checkpoint has only 31 tensors"},
		{"moe-not-object", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64, "n_heads": 8, "n_layers": 3, "norm_eps": 1e-05, "moe": true}`)
		}, Options{}, "moe = true, want an object"},
		{"moe-missing-experts", func(t *testing.T, dir string) {
			write(t, dir, "params.json", `{"dim": 64, "n_heads": 8, "n_layers": 3, "norm_eps": 1e-05, "moe": {"num_experts": 2, "num_experts_per_tok": 1}}`)
		}, Options{}, "layers.0.feed_forward.experts.0.w1.weight"},
		{"bf16", nil, Options{OutType: "bf16"}, "convert_legacy_llama.py writes f32, f16 or q8_0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, metaDir("split"))
			if tc.edit != nil {
				tc.edit(t, dir)
			}
			opts := tc.opts
			opts.OutFile = filepath.Join(t.TempDir(), "out.gguf")
			_, err := Run(context.Background(), dir, opts)
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("error %v, want one containing %q", err, tc.errHas)
			}
		})
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSource lists tensors and reads zeros.
type fakeSource []readers.TensorInfo

func (f fakeSource) Format() string                                                 { return "fake" }
func (f fakeSource) Tensors() []readers.TensorInfo                                  { return f }
func (f fakeSource) Close() error                                                   { return nil }
func (f fakeSource) ReadFloat32(context.Context, string, []float32, int, int) error { return nil }

// TestLegacyTensors: the checks on the weights' names, dtypes and shapes.
func TestLegacyTensors(t *testing.T) {
	base := []readers.TensorInfo{
		{Name: "tok_embeddings.weight", DType: readers.BF16, Shape: []int64{512, 64}},
		{Name: "layers.0.attention.wq.weight", DType: readers.BF16, Shape: []int64{64, 64}},
		{Name: "layers.0.feed_forward.w1.weight", DType: readers.BF16, Shape: []int64{172, 64}},
		{Name: "layers.0.feed_forward.w2.weight", DType: readers.BF16, Shape: []int64{64, 172}},
	}
	raw := map[string]any{"dim": json.Number("64"), "n_layers": json.Number("1"), "n_heads": json.Number("8"), "norm_eps": json.Number("1e-05")}
	with := func(extra ...readers.TensorInfo) fakeSource {
		return append(append([]readers.TensorInfo(nil), base...), extra...)
	}
	f16 := func(src fakeSource) fakeSource {
		src[1].DType = readers.F16
		return src
	}
	for _, tc := range []struct {
		name   string
		src    fakeSource
		ft     gguf.FileType
		errHas string
	}{
		{"hf-names", with(readers.TensorInfo{Name: "model.layers.0.self_attn.q_proj.weight", DType: readers.BF16, Shape: []int64{64, 64}}), gguf.FileTypeF16, "Hugging Face name beside params.json"},
		{"int-weights", with(readers.TensorInfo{Name: "output.weight", DType: readers.I32, Shape: []int64{512, 64}}), gguf.FileTypeF16, "converts F32, F16 and BF16"},
		{"q8_0-partial-rows", with(), gguf.FileTypeQ8_0, `tensor "layers.0.feed_forward.w2.weight": rows of 172 values are not whole Q8_0 blocks`},
		{"f16-partial-rows", with(), gguf.FileTypeF16, ""},
		{"default-f16", f16(with()), gguf.FileTypeGuessed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := func() error {
				p, err := legacyParamsOf(raw, tc.src)
				if err != nil {
					return err
				}
				outs, err := legacyOutputs(tc.src, p)
				if err != nil {
					return err
				}
				ft := tc.ft
				if ft == gguf.FileTypeGuessed {
					if ft, err = legacyPickType(outs); err != nil {
						return err
					}
					if ft != gguf.FileTypeF16 {
						t.Errorf("default type %s for F16 weights, want F16", ft)
					}
				}
				j := &job{ft: ft, model: &hf.Model{Root: t.TempDir(), Source: tc.src}, legacy: &legacyJob{params: p, outputs: outs}}
				tensors, _, _, err := j.legacyPlan()
				if err == nil {
					return errors.New("planned without a tokenizer")
				}
				if tc.errHas == "" && len(tensors) == 0 && strings.Contains(err.Error(), "no tokenizer.model") {
					return nil // the tensors passed; the empty folder has no tokenizer
				}
				return err
			}()
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatal(err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("error %v, want one containing %q", err, tc.errHas)
			}
		})
	}
}

// TestLegacyMatchesHF: the Meta fixture is stories260K with Q/K in Meta's
// order, so its F32 conversion (no permutation) holds the BF16 rounding of
// the values llama.cpp's Hugging Face conversion (which permutes back)
// writes — a check of the fixture and of the layout, independent of the
// legacy script.
func TestLegacyMatchesHF(t *testing.T) {
	hfFile, err := ggufread.Open(filepath.Join(stories, "gguf", "stories260K-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer hfFile.Close()
	legacy, err := ggufread.Open(convertTo(t, metaDir("split"), Options{OutType: "f32"}))
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	hfShape := map[string]string{}
	for _, ti := range hfFile.Tensors {
		hfShape[ti.Name] = fmt.Sprint(ti.Shape)
	}
	compared := 0
	for _, ti := range legacy.Tensors {
		name := ti.Name
		if name == "output.weight" {
			name = "token_embd.weight" // stories260K ties them
		}
		if hfShape[name] != fmt.Sprint(ti.Shape) {
			continue // the cut feed-forward tensors
		}
		got, _ := legacy.TensorData(ti.Name)
		want, _ := hfFile.TensorData(name)
		for i := 0; i < len(want); i += 4 {
			w := quantize.BF16ToFP32(quantize.FP32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(want[i:]))))
			if g := math.Float32frombits(binary.LittleEndian.Uint32(got[i:])); g != w {
				t.Fatalf("%s[%d] = %g, the Hugging Face conversion's %g", ti.Name, i/4, g, w)
			}
		}
		compared++
	}
	if compared != 3*6+3 {
		t.Errorf("compared %d tensors, want 21 (6 per layer, token_embd, output_norm, output)", compared)
	}
}

// FuzzLegacyParams: any params.json is read into Params, tensor names and
// metadata without a panic or an allocation that grows with its numbers.
func FuzzLegacyParams(f *testing.F) {
	for _, p := range []string{filepath.Join(metaDir("split"), "params.json"), filepath.Join(meta, "moe", "mixtral-tiny", "params.json")} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"dim": 64, "n_heads": 8, "n_layers": 9223372036854775807, "norm_eps": 1e-05, "moe": {"num_experts": 9223372036854775807, "num_experts_per_tok": 1}}`))
	src := fakeSource{
		{Name: "tok_embeddings.weight", DType: readers.BF16, Shape: []int64{512, 64}},
		{Name: "layers.0.attention.wq.weight", DType: readers.BF16, Shape: []int64{64, 64}},
		{Name: "layers.0.feed_forward.w1.weight", DType: readers.BF16, Shape: []int64{160, 64}},
		{Name: "layers.0.feed_forward.experts.0.w1.weight", DType: readers.BF16, Shape: []int64{32, 64}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := hf.ParseJSON(data)
		if err != nil {
			return
		}
		p, err := legacyParamsOf(raw, src)
		if err != nil {
			return
		}
		if _, err := legacyOutputs(src, p); err != nil {
			return
		}
		_, _ = p.kvs(gguf.FileTypeF16, true)
	})
}
