package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/quantize/imatrix"
)

// TestIMatrixAgainstLlamaCpp runs ggufkit imatrix as the reference data ran
// llama-imatrix (stories260K F32, its calibration text, -c 128) and compares
// with llama-imatrix's file: the same entries, identical counts, every sum
// within sumTolerance relative. Both formats, and llama-imatrix's file
// combined with ours through --in-file.
func TestIMatrixAgainstLlamaCpp(t *testing.T) {
	const (
		model  = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
		text   = "../../perplexity/testdata/text.txt"
		ref    = "../../testdata/stories260K/quantized/imatrix.gguf"
		refDat = "../../testdata/stories260K/quantized/imatrix.dat"
	)
	dir := t.TempDir()
	out := filepath.Join(dir, "imatrix.gguf")
	stdout, errs, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", out, "-c", "128", "-b", "128", "-t", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "Final estimate: PPL = 3.66"; !strings.Contains(stdout, want) {
		t.Errorf("no %q in:\n%s", want, stdout)
	}
	load := func(path string) *imatrix.Stats {
		s := imatrix.NewStats(128)
		if err := s.Merge(path); err != nil {
			t.Fatal(err)
		}
		return s
	}
	got, want := load(out), load(ref)
	compareStats(t, got, want, 1)
	// llama-imatrix built with AVX2 (testdata/README.md) on the same run:
	// within the 1e-4.
	compareStatsWithin(t, got, load("testdata/stories260K-imatrix-avx2.gguf"), 1, 1e-4)
	if got.LastChunk != 7 {
		t.Errorf("chunk count %d, want 7", got.LastChunk)
	}

	dat := filepath.Join(dir, "imatrix.dat")
	if _, errs, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", dat, "-c", "128", "--output-format", "dat", "--no-ppl"); code != 0 {
		t.Fatalf("dat: exit %d: %s", code, errs)
	}
	compareStats(t, load(dat), load(refDat), 1)

	both := filepath.Join(dir, "both.gguf")
	if _, errs, code := runGGUFKit("imatrix", "--in-file", ref, "--in-file", out, "-o", both, "-c", "128"); code != 0 {
		t.Fatalf("combine: exit %d: %s", code, errs)
	}
	compareStats(t, load(both), want, 2)
	m, err := imatrix.Load(both)
	if err != nil || len(m.Datasets) != 2 || m.ChunkCount != 14 {
		t.Errorf("combined: %v datasets %v, %d chunks", err, m.Datasets, m.ChunkCount)
	}
	if _, _, code := runGGUFKit("imatrix", "-o", filepath.Join(dir, "x.gguf")); code == 0 {
		t.Error("no text and no --in-file accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gguf")); err == nil {
		t.Error("an output was written for a refused command")
	}
}

// sumTolerance bounds the relative difference of a sum from the reference
// data's llama-imatrix file, made by a portable (no SIMD) build of
// llama.cpp: a few attn_output and ffn_down sums differ by up to 4e-4 from
// it, where llama.cpp's own AVX2 build differs from it by 1.7e-4 and from
// ggufkit by less than 1e-4 (docs/compat.md).
const sumTolerance = 5e-4

// compareStats checks got against factor × want entry by entry, each sum
// within sumTolerance.
func compareStats(t *testing.T, got, want *imatrix.Stats, factor float64) {
	t.Helper()
	compareStatsWithin(t, got, want, factor, sumTolerance)
}

// compareStatsWithin is compareStats with another tolerance.
func compareStatsWithin(t *testing.T, got, want *imatrix.Stats, factor, tolerance float64) {
	t.Helper()
	gn, wn := got.Entries(), want.Entries()
	if len(gn) != len(wn) {
		t.Fatalf("%d entries, llama-imatrix %d:\n%v\n%v", len(gn), len(wn), gn, wn)
	}
	worst := 0.0
	for i, name := range wn {
		if gn[i] != name {
			t.Fatalf("entry %d is %q, llama-imatrix's %q", i, gn[i], name)
		}
		g, _ := got.Entry(name)
		w, _ := want.Entry(name)
		if len(g.Counts) != len(w.Counts) || len(g.Sums) != len(w.Sums) {
			t.Fatalf("%s: %d sums / %d counts, llama-imatrix %d / %d", name, len(g.Sums), len(g.Counts), len(w.Sums), len(w.Counts))
		}
		for j := range w.Counts {
			if float64(g.Counts[j]) != factor*float64(w.Counts[j]) {
				t.Errorf("%s: count %d is %d, llama-imatrix %d (×%v)", name, j, g.Counts[j], w.Counts[j], factor)
			}
		}
		for j := range w.Sums {
			ref := factor * float64(w.Sums[j])
			rel := math.Abs(float64(g.Sums[j])-ref) / math.Max(math.Abs(ref), 1e-30)
			worst = max(worst, rel)
			if rel > tolerance {
				t.Errorf("%s: sum %d is %g, llama-imatrix %g (relative difference %.2g)", name, j, g.Sums[j], ref, rel)
				break
			}
		}
	}
	t.Logf("%d entries, counts identical, largest relative difference of a sum %.2g", len(wn), worst)
}

// TestIMatrixQuality quantizes the F32 model to Q4_K_M and IQ2_XXS with
// llama-imatrix's matrix and with ggufkit's (computed in the test, and in
// one convert --imatrix-text run) and compares each quantization with the
// F32 model on the calibration text: the mean KL divergences must be within
// 2 % of each other, the bound.
func TestIMatrixQuality(t *testing.T) {
	const (
		model  = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
		source = "../../testdata/stories260K/source"
		text   = "../../perplexity/testdata/text.txt"
		ref    = "../../testdata/stories260K/quantized/imatrix.gguf"
	)
	dir := t.TempDir()
	ours := filepath.Join(dir, "imatrix.gguf")
	if _, errs, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", ours, "-c", "128", "--no-ppl"); code != 0 {
		t.Fatalf("imatrix: exit %d: %s", code, errs)
	}
	base := filepath.Join(dir, "base.kld")
	if _, errs, code := runGGUFKit("perplexity", "-m", model, "-f", text, "-c", "128", "--kl-divergence-base", base); code != 0 {
		t.Fatalf("perplexity: exit %d: %s", code, errs)
	}
	kld := func(gguf string) float64 {
		out, errs, code := runGGUFKit("perplexity", "-m", gguf, "--kl-divergence", "--kl-divergence-base", base)
		if code != 0 {
			t.Fatalf("kl-divergence %s: exit %d: %s", gguf, code, errs)
		}
		m := regexp.MustCompile(`Mean    KLD:\s+([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no mean KLD in:\n%s", out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	for _, typ := range []string{"Q4_K_M", "IQ2_XXS"} {
		t.Run(typ, func(t *testing.T) {
			quant := func(name, im string) string {
				out := filepath.Join(dir, name+"-"+typ+".gguf")
				if _, errs, code := runGGUFKit("quantize", "--imatrix", im, model, out, typ, "1"); code != 0 {
					t.Fatalf("quantize: exit %d: %s", code, errs)
				}
				return out
			}
			want, got := kld(quant("llama", ref)), kld(quant("ours", ours))
			t.Logf("%s: mean KLD %.6f with llama-imatrix's matrix, %.6f with ggufkit's", typ, want, got)
			if math.Abs(got-want) > 0.02*want {
				t.Errorf("%s: mean KLD %.6f with ggufkit's matrix, %.6f with llama-imatrix's: more than 2 %% apart", typ, got, want)
			}
		})
	}
	t.Run("convert --imatrix-text", func(t *testing.T) {
		out := filepath.Join(dir, "onepass-Q4_K_M.gguf")
		if _, errs, code := runGGUFKit("convert", "--outtype", "Q4_K_M", "--imatrix-text", text, "--imatrix-ctx", "128", "--outfile", out, source); code != 0 {
			t.Fatalf("convert: exit %d: %s", code, errs)
		}
		want := kld(filepath.Join(dir, "llama-Q4_K_M.gguf"))
		got := kld(out)
		t.Logf("one pass: mean KLD %.6f, llama-imatrix's matrix %.6f", got, want)
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("one pass: mean KLD %.6f, with llama-imatrix's matrix %.6f", got, want)
		}
		if _, errs, code := runGGUFKit("convert", "--outtype", "q8_0", "--imatrix-text", text, "--outfile", filepath.Join(dir, "x.gguf"), source); code == 0 {
			t.Errorf("--imatrix-text with a converter outtype accepted: %s", errs)
		}
	})
}

// TestIMatrixMoE runs ggufkit imatrix on the mixtral convert fixture and
// compares with llama-imatrix's file (testdata/README.md): per-expert
// counts identical, sums within 1e-4 relative.
func TestIMatrixMoE(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "mixtral")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	copyAll := func(from string, names ...string) {
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(from, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyAll("../../testdata/convert/mixtral", "config.json", "generation_config.json", "model.safetensors")
	tok, err := os.ReadDir("../../testdata/convert/tokenizers/tok512")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tok {
		copyAll("../../testdata/convert/tokenizers/tok512", e.Name())
	}
	model := filepath.Join(dir, "mixtral-f32.gguf")
	if _, errs, code := runGGUFKit("convert", "--outtype", "f32", "--outfile", model, src); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "imatrix.gguf")
	stdout, errs, code := runGGUFKit("imatrix", "-m", model, "-f", "../../perplexity/testdata/text.txt", "-o", out, "-c", "64")
	if code != 0 {
		t.Fatalf("imatrix: exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "Final estimate: PPL = 821.54") {
		t.Errorf("perplexity differs from llama-imatrix's 821.5438:\n%s", stdout)
	}
	got, want := imatrix.NewStats(64), imatrix.NewStats(64)
	if err := got.Merge(out); err != nil {
		t.Fatal(err)
	}
	if err := want.Merge("testdata/mixtral-imatrix.gguf"); err != nil {
		t.Fatal(err)
	}
	if e, _ := want.Entry("blk.0.ffn_down_exps.weight"); len(e.Counts) != 4 {
		t.Fatalf("the reference has %d expert counts", len(e.Counts))
	}
	compareStatsWithin(t, got, want, 1, 1e-4)
}

// TestIMatrixOptions checks llama-imatrix's periodic and partial options:
// --save-frequency copies, --chunks and --chunk limits, --output-format dat,
// and --process-output on a model with its own output.weight.
func TestIMatrixOptions(t *testing.T) {
	const (
		model = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
		text  = "../../perplexity/testdata/text.txt"
	)
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	if _, errs, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", out, "-c", "128", "--chunks", "5", "--save-frequency", "2", "--output-frequency", "3", "--no-ppl"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{"m.gguf", "m.gguf.at_2", "m.gguf.at_4"} {
		m, err := imatrix.Load(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := map[string]int{"m.gguf": 5, "m.gguf.at_2": 2, "m.gguf.at_4": 4}[f]
		if m.ChunkCount != want {
			t.Errorf("%s: %d chunks, want %d", f, m.ChunkCount, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.gguf.at_6")); err == nil {
		t.Error("a copy beyond --chunks 5")
	}
	skip := filepath.Join(dir, "skip.dat")
	if _, errs, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", skip, "--output-format", "dat", "-c", "128", "--chunk", "3", "--no-ppl"); code != 0 {
		t.Fatalf("--chunk 3: exit %d: %s", code, errs)
	}
	if m, err := imatrix.Load(skip); err != nil || !m.Legacy || m.ChunkCount != 4 {
		t.Errorf("--chunk 3 of 7: %v, %+v", err, m)
	}
	if _, _, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", skip, "-c", "128", "--chunk", "6"); code == 0 {
		t.Error("--chunk leaving fewer than two chunks accepted")
	}
	if _, _, code := runGGUFKit("imatrix", "-m", model, "-f", text, "-o", skip, "--output-format", "xml"); code == 0 {
		t.Error("an unknown --output-format accepted")
	}

	// The mixtral fixture has its own output.weight.
	mx := filepath.Join(dir, "mixtral-f32.gguf")
	src := filepath.Join(dir, "mixtral")
	os.Mkdir(src, 0o755)
	for _, from := range []string{"../../testdata/convert/mixtral", "../../testdata/convert/tokenizers/tok512"} {
		entries, _ := os.ReadDir(from)
		for _, e := range entries {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".json") && strings.HasPrefix(e.Name(), "expected") || e.Name() == "manifest.json" || strings.HasPrefix(e.Name(), "logits") {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(from, e.Name()))
			os.WriteFile(filepath.Join(src, e.Name()), b, 0o644)
		}
	}
	if _, errs, code := runGGUFKit("convert", "--outtype", "f32", "--outfile", mx, src); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	has := func(args ...string) bool {
		o := filepath.Join(dir, "po.gguf")
		if _, errs, code := runGGUFKit(append([]string{"imatrix", "-m", mx, "-f", text, "-o", o, "-c", "64", "--no-ppl"}, args...)...); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		m, err := imatrix.Load(o)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := m.Weights["output.weight"]
		return ok
	}
	if has() || !has("--process-output") {
		t.Error("output.weight collected without --process-output, or not with it")
	}
}
