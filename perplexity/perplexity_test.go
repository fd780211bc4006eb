package perplexity

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// tableModel returns logits from a function of (position, token).
type tableModel struct {
	vocab int
	logit func(pos int, prev int, v int) float32
	calls int
}

func (m *tableModel) Logits(_ context.Context, tokens []int) ([][]float32, error) {
	m.calls++
	out := make([][]float32, len(tokens))
	for i, t := range tokens {
		out[i] = make([]float32, m.vocab)
		for v := range out[i] {
			out[i][v] = m.logit(i, t, v)
		}
	}
	return out, nil
}

func TestUniformModel(t *testing.T) {
	// Equal logits: every token has probability 1/V, so PPL is V exactly.
	for _, vocab := range []int{2, 7, 512} {
		m := &tableModel{vocab: vocab, logit: func(int, int, int) float32 { return 0.25 }}
		tokens := make([]int, 100)
		res, err := Run(context.Background(), m, tokens, Options{Context: 16, Vocab: vocab}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.PPL-float64(vocab)) > 1e-9*float64(vocab) {
			t.Errorf("vocab %d: PPL %v, want %d", vocab, res.PPL, vocab)
		}
		// 100/16 = 6 chunks of 16, each scoring positions 8..14 (7 tokens).
		if res.Chunks != 6 || res.Count != 42 || m.calls != 6 {
			t.Errorf("vocab %d: %d chunks, %d positions, %d calls; want 6, 42, 6", vocab, res.Chunks, res.Count, m.calls)
		}
	}
}

func TestScoresOnlySecondHalfAgainstNextToken(t *testing.T) {
	// The model puts logit 10 on token (prev+1)%V. Tokens count up, so
	// every scored position predicts right except where the sequence wraps;
	// BOS replacement must not change a scored target.
	const vocab, nctx = 5, 8
	m := &tableModel{vocab: vocab, logit: func(_, prev, v int) float32 {
		if v == (prev+1)%vocab {
			return 10
		}
		return 0
	}}
	tokens := make([]int, 3*nctx)
	for i := range tokens {
		tokens[i] = i % vocab
	}
	res, err := Run(context.Background(), m, tokens, Options{Context: nctx, Vocab: vocab, AddBOS: true, BOS: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	right := -math.Log(1 / (1 + 4*math.Exp(-10)))
	if want := math.Exp(right); math.Abs(res.PPL-want) > 1e-6 {
		t.Errorf("PPL %v, want %v (every scored token predicted)", res.PPL, want)
	}
	if res.Count != 3*(nctx-nctx/2-1) {
		t.Errorf("count %d", res.Count)
	}
}

func TestTooShortAndChunkCap(t *testing.T) {
	m := &tableModel{vocab: 3, logit: func(int, int, int) float32 { return 0 }}
	if _, err := Run(context.Background(), m, make([]int, 31), Options{Context: 16, Vocab: 3}, nil); !errors.Is(err, ErrTooShort) {
		t.Errorf("31 tokens with n_ctx 16: %v, want ErrTooShort", err)
	}
	res, err := Run(context.Background(), m, make([]int, 200), Options{Context: 16, Vocab: 3, Chunks: 2}, nil)
	if err != nil || res.Chunks != 2 {
		t.Errorf("--chunks 2: %v chunks, %v", res, err)
	}
}

func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want int32
	}{{0, 0}, {0.5, 0}, {1.5, 2}, {2.5, 2}, {65535, 65535}, {65534.6, 65535}, {-3.5, -4}, {12.49, 12}} {
		if got := nearestInt(c.in); got != c.want {
			t.Errorf("nearestInt(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// randomModel gives fixed pseudo-random logits per (position, token).
func randomModel(vocab int, seed uint64, noise float32) *tableModel {
	return &tableModel{vocab: vocab, logit: func(pos, prev, v int) float32 {
		r := rand.New(rand.NewPCG(seed, uint64(pos*7919+prev*104729+v)))
		x := float32(r.NormFloat64() * 3)
		if noise != 0 {
			r2 := rand.New(rand.NewPCG(seed+1, uint64(pos*7919+prev*104729+v)))
			x += noise * float32(r2.NormFloat64())
		}
		return x
	}}
}

func TestBaseFileRoundTrip(t *testing.T) {
	const vocab, nctx = 33, 32
	tokens := make([]int, 7*nctx+5)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range tokens {
		tokens[i] = r.IntN(vocab)
	}
	base := randomModel(vocab, 9, 0)
	path := filepath.Join(t.TempDir(), "base.kld")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Run(context.Background(), base, tokens, Options{Context: nctx, Vocab: vocab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := Run(context.Background(), base, tokens, Options{Context: nctx, Vocab: vocab}, NewBaseWriter(f))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Saving computes each position's likelihood in float32: the same
	// perplexity to float32 precision.
	if math.Abs(plain.PPL-saved.PPL) > 1e-5*plain.PPL {
		t.Errorf("PPL %v without a base file, %v with", plain.PPL, saved.PPL)
	}
	st, _ := os.Stat(path)
	scored := nctx - 1 - nctx/2
	if want := int64(20 + 4*7*nctx + 7*scored*2*logProbWidth(vocab)); st.Size() != want {
		t.Fatalf("base file of %d bytes, want %d", st.Size(), want)
	}

	compare := func(m Model) *KLResult {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := OpenBase(f)
		if err != nil {
			t.Fatal(err)
		}
		if b.Context != nctx || b.Vocab != vocab || b.Chunks != 7 || len(b.Tokens) != 7*nctx {
			t.Fatalf("header %d %d %d, %d tokens", b.Context, b.Vocab, b.Chunks, len(b.Tokens))
		}
		res, err := Compare(context.Background(), m, b, Options{Vocab: vocab})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	self := compare(base)
	if self.Count != 7*scored || self.SameTop != self.Count {
		t.Errorf("the base against itself: %d of %d positions agree on the top token", self.SameTop, self.Count)
	}
	if kl := self.SumKLD / float64(self.Count); math.Abs(kl) > 1e-4 {
		t.Errorf("the base against itself: mean KLD %v, want ≈ 0 (16-bit log-probabilities)", kl)
	}
	if p := math.Exp(self.SumNLL / float64(self.Count)); math.Abs(p-plain.PPL) > 1e-5*p {
		t.Errorf("PPL(Q) %v, want the base's %v", p, plain.PPL)
	}
	noisy := compare(randomModel(vocab, 9, 0.5))
	klSelf, klNoisy := self.SumKLD/float64(self.Count), noisy.SumKLD/float64(noisy.Count)
	if !(klNoisy > 0.01 && klNoisy > 100*math.Abs(klSelf)) || noisy.SameTop >= noisy.Count {
		t.Errorf("a perturbed model: mean KLD %v (self %v), %d/%d same top", klNoisy, klSelf, noisy.SameTop, noisy.Count)
	}
	var report bytes.Buffer
	noisy.WriteReport(&report)
	for _, want := range []string{"Mean    KLD:", "Median  KLD:", "99.9%   KLD:", " 0.1%   Δp:", "Same top p:"} {
		if !bytes.Contains(report.Bytes(), []byte(want)) {
			t.Errorf("report lacks %q:\n%s", want, report.String())
		}
	}
	if _, err := Compare(context.Background(), base, mustOpen(t, path), Options{Vocab: vocab + 1}); err == nil {
		t.Error("a model with another vocabulary size compared without error")
	}
}

func mustOpen(t *testing.T, path string) *Base {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	b, err := OpenBase(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHostileBaseFiles(t *testing.T) {
	le := func(vs ...int32) []byte {
		var b []byte
		for _, v := range vs {
			b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		return b
	}
	hdr := func(vs ...int32) []byte { return append([]byte(baseMagic), le(vs...)...) }
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"wrong magic", append([]byte("_logitz_"), le(4, 3, 1)...)},
		{"short header", hdr(4, 3)},
		{"negative n_ctx", hdr(-4, 3, 1)},
		{"zero chunks", hdr(4, 3, 0)},
		{"huge sizes", hdr(1<<30, 1<<30, 1<<30)},
		{"tokens cut", append(hdr(4, 3, 1), le(1, 2)...)},
		{"rows cut", append(hdr(4, 3, 1), le(1, 2, 0, 1)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b")
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := OpenBase(f); err == nil {
				t.Error("accepted")
			}
		})
	}
}
