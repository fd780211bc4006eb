package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func runGGUFKit(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ggufkit"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// TestPerplexityCommand scores the bundled model, saves its log-probabilities
// as a KL-divergence base, compares a Q4_K_M quantization of it with that
// base, and checks the figures hang together: the base against itself has a
// KL divergence of about 0 and the same top token everywhere; the
// quantization has a small positive one.
func TestPerplexityCommand(t *testing.T) {
	const (
		f32  = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
		q4km = "../../testdata/stories260K/quantized/stories260K-Q4_K_M-imat.gguf"
		text = "../../perplexity/testdata/text.txt"
	)
	base := filepath.Join(t.TempDir(), "base.kld")
	out, errs, code := runGGUFKit("perplexity", "-m", f32, "-f", text, "-c", "128", "--kl-divergence-base", base)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(out, "[1]") {
		t.Fatalf("output:\n%s", out)
	}
	if ppl, _ := strconv.ParseFloat(m[1], 64); ppl < 3.65 || ppl > 3.67 {
		t.Errorf("PPL %v, llama.cpp 3.6602", ppl)
	}
	if _, _, code := runGGUFKit("perplexity", "-m", f32, "-f", text, "-c", "128", "--kl-divergence-base", base); code == 0 {
		t.Error("an existing base file was replaced without --force")
	}

	figure := func(out, label string) float64 {
		m := regexp.MustCompile(regexp.QuoteMeta(label) + `\s*:\s*(-?[0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q in:\n%s", label, out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	self, errs, code := runGGUFKit("perplexity", "-m", f32, "--kl-divergence", "--kl-divergence-base", base)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if kl := figure(self, "Mean    KLD"); kl > 1e-4 || figure(self, "Same top p") != 100 {
		t.Errorf("the base against itself:\n%s", self)
	}
	q, errs, code := runGGUFKit("perplexity", "-m", q4km, "--kl-divergence", "--kl-divergence-base", base)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if kl := figure(q, "Mean    KLD"); kl <= 1e-4 || kl > 1 || figure(q, "Same top p") < 50 {
		t.Errorf("Q4_K_M against the F32 base:\n%s", q)
	}
	if !strings.Contains(q, "Mean PPL(base)                :   3.66") {
		t.Errorf("the base's perplexity is not the saved one:\n%s", q)
	}

	for _, c := range []struct {
		name string
		args []string
	}{
		{"no model", []string{"perplexity", "-f", text}},
		{"no text", []string{"perplexity", "-m", f32}},
		{"kl without base", []string{"perplexity", "-m", f32, "--kl-divergence"}},
		{"stride", []string{"perplexity", "-m", f32, "-f", text, "--ppl-stride", "64"}},
		{"text too short", []string{"perplexity", "-m", f32, "-f", text, "-c", "512"}},
		{"not a base file", []string{"perplexity", "-m", f32, "--kl-divergence", "--kl-divergence-base", text}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, errs, code := runGGUFKit(c.args...); code == 0 || errs == "" {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Dir(base)); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
