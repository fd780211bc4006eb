package forward

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const storiesF32 = "../../testdata/stories260K/gguf/stories260K-F32.gguf"

// llamaKVs is a minimal valid llama configuration.
func llamaKVs() []gguf.KV {
	return []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "llama.context_length", Value: gguf.Uint32(128)},
		{Key: "llama.embedding_length", Value: gguf.Uint32(16)},
		{Key: "llama.block_count", Value: gguf.Uint32(1)},
		{Key: "llama.feed_forward_length", Value: gguf.Uint32(32)},
		{Key: "llama.attention.head_count", Value: gguf.Uint32(4)},
		{Key: "llama.attention.head_count_kv", Value: gguf.Uint32(2)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-5)},
		{Key: "llama.vocab_size", Value: gguf.Uint32(10)},
	}
}

func with(kvs []gguf.KV, key string, v gguf.Value) []gguf.KV {
	out := slices.Clone(kvs)
	for i := range out {
		if out[i].Key == key {
			if !v.Valid() {
				return slices.Delete(out, i, i+1)
			}
			out[i].Value = v
			return out
		}
	}
	return append(out, gguf.KV{Key: key, Value: v})
}

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig(KVMap(llamaKVs()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HeadDimK != 4 || cfg.Rot != 4 || cfg.RopeBase != 10000 || cfg.Vocab != 10 || cfg.group() != 2 {
		t.Errorf("derived config %+v", cfg)
	}
	tests := []struct {
		name string
		key  string
		v    gguf.Value // invalid Value: delete the key
		want error
		msg  string
	}{
		{"no architecture", "general.architecture", gguf.Value{}, ErrMetadata, "key not found in model: general.architecture"},
		{"unknown architecture", "general.architecture", gguf.String("baichuan"), ErrUnsupported, `architecture "baichuan"`},
		{"missing epsilon", "llama.attention.layer_norm_rms_epsilon", gguf.Value{}, ErrMetadata, "key not found in model: llama.attention.layer_norm_rms_epsilon"},
		{"epsilon as float64", "llama.attention.layer_norm_rms_epsilon", gguf.Float64(1e-5), ErrMetadata, "has wrong type"},
		{"block count as uint64", "llama.block_count", gguf.Uint64(1), ErrMetadata, "key llama.block_count has wrong type"},
		{"no layers", "llama.block_count", gguf.Uint32(0), ErrMetadata, "must be 1..512"},
		{"heads not a multiple of kv heads", "llama.attention.head_count_kv", gguf.Uint32(3), ErrMetadata, "4 heads and 3 key/value heads"},
		{"llama n_rot", "llama.rope.dimension_count", gguf.Uint32(2), ErrMetadata, "invalid n_rot: 2, expected 4"},
		{"unknown rope scaling", "llama.rope.scaling.type", gguf.String("ntk"), ErrMetadata, `unknown RoPE scaling type "ntk"`},
		{"experts without a used count", "llama.expert_count", gguf.Uint32(8), ErrMetadata, "0 of 8 experts used"},
		{"too many experts", "llama.expert_count", gguf.Uint32(2000), ErrMetadata, "at most 1024"},
		{"huge embedding", "llama.embedding_length", gguf.Uint32(1 << 30), ErrMetadata, "must be 1..16777216"},
		{"per-layer heads of wrong length", "llama.attention.head_count", gguf.Array([]uint32{4, 4}), ErrMetadata, "wrong array length"},
		{"no vocabulary size", "llama.vocab_size", gguf.Value{}, ErrMetadata, "neither tokenizer.ggml.tokens nor llama.vocab_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(KVMap(with(llamaKVs(), tc.key, tc.v)))
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

// memWeights is a Weights of float32 tensors in memory.
type memWeights map[string]*memTensor

type memTensor struct {
	shape []int64
	data  []float32
}

func (w memWeights) Tensor(name string) (Tensor, bool) {
	t, ok := w[name]
	return t, ok
}

func (t *memTensor) Shape() []int64 { return t.shape }

func (t *memTensor) ReadRows(r0, n int, dst []float32) error {
	ne0 := int(t.shape[0])
	copy(dst, t.data[r0*ne0:(r0+n)*ne0])
	return nil
}

// randomWeights fills every tensor cfg expects with seeded values.
func randomWeights(cfg *Config, seed uint64) memWeights {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := memWeights{}
	for _, s := range cfg.ExpectedTensors(func(string) bool { return false }) {
		if s.Optional {
			continue
		}
		n := int64(1)
		for _, d := range s.Shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(rng.NormFloat64()) / float32(math.Sqrt(float64(s.Shape[0])))
			if len(s.Shape) == 1 {
				data[i] += 1
			}
		}
		w[s.Name] = &memTensor{shape: s.Shape, data: data}
	}
	return w
}

func TestLoadErrors(t *testing.T) {
	cfg, err := ParseConfig(KVMap(llamaKVs()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		break_ func(w memWeights)
		msg    string
	}{
		{"missing tensor", func(w memWeights) { delete(w, "blk.0.ffn_up.weight") }, "missing tensor blk.0.ffn_up.weight"},
		{"wrong shape", func(w memWeights) { w["blk.0.attn_k.weight"].shape = []int64{16, 16} }, "blk.0.attn_k.weight has shape [16 16], expected [16 8]"},
		{"NaN in a norm", func(w memWeights) { w["output_norm.weight"].data[2] = float32(math.NaN()) }, "output_norm.weight has a non-finite value at 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := randomWeights(cfg, 1)
			tc.break_(w)
			_, err := Load(cfg, w, Options{Threads: 1})
			if !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want ErrWeights containing %q", err, tc.msg)
			}
		})
	}
}

// TestIncremental: a prompt evaluated at once and token by token through
// the KV cache gives the same logits, and so do 1 and 3 threads.
func TestIncremental(t *testing.T) {
	ctx := context.Background()
	tokens := []int{1, 403, 407, 261, 378, 432, 383}
	batch := openModel(t, storiesF32, 1)
	s, err := batch.NewSession(len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Eval(ctx, tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		m := openModel(t, storiesF32, threads)
		s, err := m.NewSession(len(tokens))
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range tokens {
			got, err := s.Eval(ctx, []int{id}, false)
			if err != nil {
				t.Fatal(err)
			}
			if d := relDiff(want[i:i+1], got); d > 1e-6 {
				t.Errorf("%d threads, position %d: relative difference %.3g from the batch", threads, i, d)
			}
		}
		if _, err := s.Eval(ctx, []int{1}, false); err == nil {
			t.Error("Eval past the session's capacity succeeded")
		}
		// Truncate and re-evaluate the last token: same logits again.
		s.Truncate(len(tokens) - 1)
		got, err := s.Eval(ctx, tokens[len(tokens)-1:], false)
		if err != nil {
			t.Fatal(err)
		}
		if d := relDiff(want[len(tokens)-1:], got); d > 1e-6 {
			t.Errorf("after Truncate: relative difference %.3g", d)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	m := openModel(t, storiesF32, 1)
	s, err := m.NewSession(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Eval(context.Background(), []int{512}, false); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("token 512: err = %v", err)
	}
	if _, err := m.NewSession(0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewSession(0): err = %v", err)
	}
	if _, err := m.NewSession(1 << 40); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewSession(1<<40): err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Eval(ctx, []int{1}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

// TestRopeModes: NEOX rotation of x equals NORM rotation of x with its two
// halves interleaved — the relation convert_hf_to_gguf's Q/K permutation
// relies on for llama.
func TestRopeModes(t *testing.T) {
	cfg, _ := ParseConfig(KVMap(llamaKVs()))
	const n = 8
	cache := make([]float32, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, pos := range []int{0, 1, 7, 100} {
		ropeCache(cache, pos, n, 10000, 1, nil, cfg)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		inter := make([]float32, n)
		for i := 0; i < n/2; i++ {
			inter[2*i], inter[2*i+1] = x[i], x[i+n/2]
		}
		rope(x, cache, n, ropeNeox)
		rope(inter, cache, n, ropeNorm)
		for i := 0; i < n/2; i++ {
			if x[i] != inter[2*i] || x[i+n/2] != inter[2*i+1] {
				t.Fatalf("pos %d pair %d: NEOX (%v, %v), NORM (%v, %v)", pos, i, x[i], x[i+n/2], inter[2*i], inter[2*i+1])
			}
		}
		// theta of pair i is pos·base^(−2i/n), built by repeated products.
		for i := 0; i < n/2; i++ {
			theta := float64(pos) * math.Pow(10000, -2*float64(i)/n)
			if math.Abs(float64(cache[2*i])-math.Cos(theta)) > 1e-4 || math.Abs(float64(cache[2*i+1])-math.Sin(theta)) > 1e-4 {
				t.Errorf("pos %d pair %d: cos/sin %v %v, want %v %v", pos, i, cache[2*i], cache[2*i+1], math.Cos(theta), math.Sin(theta))
			}
		}
	}
}

func TestOps(t *testing.T) {
	x := []float32{1, -2, 3, -4}
	w := []float32{1, 1, 2, 0.5}
	dst := make([]float32, 4)
	rmsNorm(dst, x, w, 0)
	rms := math.Sqrt((1 + 4 + 9 + 16) / 4.0)
	for i := range x {
		if want := float64(x[i]*w[i]) / rms; math.Abs(float64(dst[i])-want) > 1e-6 {
			t.Errorf("rmsNorm[%d] = %v, want %v", i, dst[i], want)
		}
	}
	layerNorm(dst, x, []float32{1, 1, 1, 1}, []float32{0, 0, 0, 1}, 0)
	var mean, v float64
	for _, d := range dst[:3] {
		mean += float64(d)
	}
	mean += float64(dst[3] - 1)
	for i, d := range dst {
		if i == 3 {
			d--
		}
		v += float64(d) * float64(d)
	}
	if math.Abs(mean) > 1e-6 || math.Abs(v/4-1) > 1e-5 {
		t.Errorf("layerNorm: mean %v, variance %v", mean/4, v/4)
	}
	p := []float32{1, 2, 3, 1000}
	softmax(p, 0.001)
	var sum float64
	for _, q := range p {
		sum += float64(q)
	}
	if math.Abs(sum-1) > 1e-6 || !(p[3] > p[2] && p[2] > p[1]) {
		t.Errorf("softmax = %v", p)
	}
	for _, tc := range []struct{ x, want float32 }{{0, 0}, {1, 0.8413}, {-1, -0.1587}, {-11, 0}, {12, 12}} {
		if g := gelu(tc.x); math.Abs(float64(g-tc.want)) > 2e-3 {
			t.Errorf("gelu(%v) = %v, want about %v", tc.x, g, tc.want)
		}
	}
	if s := silu(2); math.Abs(float64(s)-2/(1+math.Exp(-2))) > 1e-6 {
		t.Errorf("silu(2) = %v", s)
	}
	if Argmax([]float32{1, 3, 3, 2}) != 1 {
		t.Error("Argmax does not keep the first maximum")
	}
}

// TestDot: the unrolled products agree with a float64 sum.
func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 9, 64, 172, 1000} {
		v := func() []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			return x
		}
		w, a, b, c, d := v(), v(), v(), v(), v()
		ref := func(x []float32) float64 {
			var s float64
			for i := range w {
				s += float64(w[i]) * float64(x[i])
			}
			return s
		}
		g0, g1, g2, g3 := dot4(w, a, b, c, d)
		for i, p := range []struct {
			got float32
			x   []float32
		}{{dot(w, a), a}, {g0, a}, {g1, b}, {g2, c}, {g3, d}} {
			if math.Abs(float64(p.got)-ref(p.x)) > 1e-4*math.Sqrt(float64(n)) {
				t.Errorf("n=%d product %d: %v, want %v", n, i, p.got, ref(p.x))
			}
		}
	}
}
