package forward

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/fixture"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

const fixtures = "../../testdata/convert"

// assembleFixture lays out a testdata/convert fixture as a Hugging Face
// folder in dir (see fixture.Assemble) and returns its path.
func assembleFixture(t *testing.T, name, dir string) string {
	t.Helper()
	src := filepath.Join(fixtures, name)
	m, err := fixture.Load(src)
	if err == nil {
		dir, err = fixture.Assemble(src, m, dir, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// transformersLogits is a fixture's logits.json and logits.f32:
// transformers' float32 forward pass of its prompt.
type transformersLogits struct {
	PromptIDs []int  `json:"prompt_ids"`
	Positions []int  `json:"positions"`
	Shape     [2]int `json:"shape"`
	logits    [][]float32
}

func readTransformersLogits(t *testing.T, name string) *transformersLogits {
	t.Helper()
	var l transformersLogits
	raw, err := os.ReadFile(filepath.Join(fixtures, name, "logits.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(fixtures, name, "logits.f32"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*l.Shape[0]*l.Shape[1] || len(l.Positions) != l.Shape[0] {
		t.Fatalf("%s: %d bytes of logits for shape %v", name, len(raw), l.Shape)
	}
	l.logits = rows(l.Shape[0], l.Shape[1])
	for i := range l.logits {
		for j := range l.logits[i] {
			l.logits[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*l.Shape[1]+j):]))
		}
	}
	return &l
}

// convertFixture converts a fixture to an F32 GGUF with the converter.
func convertFixture(t *testing.T, name string) *ggufread.File {
	t.Helper()
	return convertFixtureWith(t, name, convert.Options{})
}

// convertFixtureWith converts a fixture to F32 with more options (MMProj).
func convertFixtureWith(t *testing.T, name string, opts convert.Options) *ggufread.File {
	t.Helper()
	dir := assembleFixture(t, name, t.TempDir())
	out := filepath.Join(t.TempDir(), name+".gguf")
	opts.OutType, opts.OutFile, opts.Threads = "f32", out, 2
	if _, err := convert.Run(context.Background(), dir, opts); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// withKV adds a key to a file's metadata.
type withKV struct {
	Metadata
	key string
	v   gguf.Value
}

func (m withKV) KV(key string) (gguf.Value, bool) {
	if key == m.key {
		return m.v, true
	}
	return m.Metadata.KV(key)
}

// logitsOf is the fixture whose logits stand for fixture's: the MXFP4
// checkpoint holds gptoss's weights (its experts dequantize to gptoss's
// BF16 values exactly).
func logitsOf(fixture string) string {
	if fixture == "gptossmxfp4" {
		return "gptoss"
	}
	return fixture
}

func untruncatedYarn(c *Config) { c.yarnUntruncated = true }

// exaone4Hybrid is llama_model_exaone4's 64-block layout: three
// sliding-window blocks of four, with RoPE on those only.
func exaone4Hybrid(c *Config) {
	c.SlidingWindow = 4096
	c.setSWAPattern(4)
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	c.ropeSWAOnly()
}

// TestFamilies runs every architecture of this package on a fixture of the
// convert issue (a tiny random checkpoint of the real layout), converted by
// ggufkit, and compares its logits with transformers'. Where llama.cpp
// computes differently from transformers, the bound says by how much and
// why (while writing this test, with transformers' GELU formulas swapped in,
// gemma, gemma2, gemma3, gpt2 and gptneox agreed to within 2.7e-7 too).
func TestFamilies(t *testing.T) {
	tests := []struct {
		fixture string
		arch    string
		maxRel  float64
		md      func(Metadata) Metadata
		cfg     func(*Config)
	}{
		{"llama3tied", "llama", 1e-6, nil, nil},
		{"mistral", "llama", 1e-6, nil, nil},
		{"qwen2", "qwen2", 1e-6, nil, nil},
		{"qwen3", "qwen3", 1e-6, nil, nil},
		{"phi3", "phi3", 1e-6, nil, nil},
		// Mixtures of experts: top-2 of 4 experts, renormalised (mixtral,
		// qwen3moe) or not and with a shared expert (qwen2moe).
		{"mixtral", "llama", 1e-6, nil, nil},
		{"qwen2moe", "qwen2moe", 1e-6, nil, nil},
		{"qwen3moe", "qwen3moe", 1e-6, nil, nil},
		// Phi-3.5-MoE under phi3's graph; its logits are transformers' with
		// llama.cpp's RMS norms, soft-max routing and LongRoPE attention
		// factor swapped in (testdata/gen/fixtures/phimoe.py).
		{"phimoe", "phimoe", 1e-6, nil, nil},
		// DBRX: fused QKV clamped, weight-only LayerNorms, experts stored as
		// one tensor per projection.
		{"dbrx", "dbrx", 1e-6, nil, nil},
		// Trinity: attention output gate, SWA on 3 blocks of 4 (RoPE there
		// only), MuP embedding scale, sigmoid routing after a dense block.
		{"afmoe", "afmoe", 1e-6, nil, nil},
		// Cohere2 MoE: cohere2's parallel block, a leading dense block with
		// RoPE, sigmoid routing and an averaged shared expert.
		{"cohere2moe", "cohere2moe", 1e-6, nil, nil},
		// Snowflake Arctic (remote code; its logits from our float64 pass of
		// llama.cpp's graph): dense residual MLP beside the experts.
		{"arctic", "arctic", 1e-6, nil, nil},
		// Ling 2.0 (remote code; its logits from our float64 pass of
		// llama.cpp's graph): fused QKV, partial NeoX RoPE, sigmoid routing
		// with a selection bias and a shared expert after a dense block.
		{"bailingmoe2", "bailingmoe2", 1e-6, nil, nil},
		// Grok-1 (remote code; its logits from our float64 pass of
		// llama.cpp's graph with exact GELU, which ggml takes from an fp16
		// table): soft-capped scores, output norms, GELU experts, scales.
		{"grok", "grok", 1e-5, nil, nil},
		// The Qwen vision-language text towers on text positions (M-RoPE
		// reduces to NEOX RoPE there).
		{"qwen25vl", "qwen2vl", 1e-6, nil, nil},
		{"qwen3vl", "qwen3vl", 1e-6, nil, nil},
		{"qwen3vlmoe", "qwen3vlmoe", 1e-6, nil, nil},
		// Llama 4 (Maverick's text model): MoE every second block with
		// sigmoid routing applied to the input and an ungated shared
		// expert, dense blocks between, a NoPE block (with temperature
		// tuning) every fourth, L2-normalised Q/K, chunked attention.
		{"llama4text", "llama4", 1e-6, nil, nil},
		// Mistral Small 3.1's text tower: llama's graph.
		{"mistral3", "mistral3", 1e-6, nil, nil},
		// Apertus: xIELU from the xielu.* metadata the converter reads off
		// the tensors, per-head Q/K norms before NEOX RoPE, llama3 factors.
		{"apertus", "apertus", 1e-6, nil, nil},
		// ggml evaluates GELU through an fp16 table (GGML_GELU_FP16): about 1e-5
		// of the largest logit for gemma's GeGLU, more for the others (measured:
		// gemma 1.3e-5, gemma2 6.1e-5, gemma3 1.7e-5, starcoder2 1.6e-4, gpt2
		// 2.3e-4); GPT-NeoX's exact-erf GELU also becomes ggml's tanh form (4.1e-4).
		{"gemma", "gemma", 5e-5, nil, nil},
		{"gemma2", "gemma2", 2e-4, nil, nil},
		// llama.cpp's converter does not record gemma3's sliding_window_pattern
		// and llama.cpp then assumes 6 (every layer of this 2-layer fixture
		// SWA, rope base 10000); the fixture's config says 2. Given the
		// pattern, the logits agree.
		{"gemma3", "gemma3", 5e-5, func(md Metadata) Metadata {
			return withKV{md, "gemma3.attention.sliding_window_pattern", gguf.Uint32(2)}
		}, nil},
		// deepseek2's multi-head latent attention (absorbed, as llama.cpp runs
		// it), YaRN with mscale_all_dim, routed and shared experts after a
		// dense block: soft-max routing (V2-Lite), sigmoid with a selection
		// bias and expert groups (V3, GLM-4.7-Flash).
		{"dsv2lite", "deepseek2", 1e-6, nil, nil},
		{"dsv3", "deepseek2", 1e-6, nil, nil},
		// GLM-4.7-Flash's config has no scoring_func, so the converter writes
		// no gating function and llama.cpp picks sigmoid by the real model's
		// layer count and vocabulary, which this fixture does not have.
		// Given sigmoid, the logits agree to 1.9e-6 (measured; the others
		// here to 2.3e-7; the cause of the larger rounding difference is
		// not pinned down).
		{"glm47flash", "deepseek2", 5e-6, func(md Metadata) Metadata {
			return withKV{md, "deepseek2.expert_gating_func", gguf.Uint32(2)}
		}, nil},
		// Mistral Small 4: deepseek2's graph under mistral4, the experts
		// fused as ffn_gate_up_exps, soft-max routing, YaRN.
		{"mistral4", "mistral4", 1e-6, nil, nil},
		{"starcoder2", "starcoder2", 5e-4, nil, nil},
		{"gpt2", "gpt2", 5e-4, nil, nil},
		{"gptneox", "gptneox", 1e-3, nil, nil},
		// gpt-oss (sinks, sliding window on every other layer, YaRN, biased
		// router with soft-max over the chosen experts, clamped SwiGLU): its
		// rope config says "truncate": false, which transformers honours and
		// llama.cpp does not (it rounds YaRN's correction range to whole
		// dimensions), 3.3e-4 here. With transformers' range the logits agree
		// to 3.3e-7 (the second run of each); the MXFP4 checkpoint holds the
		// same weights.
		{"gptoss", "gpt-oss", 5e-4, nil, nil},
		{"gptoss", "gpt-oss", 1e-6, nil, untruncatedYarn},
		{"gptossmxfp4", "gpt-oss", 5e-4, nil, nil},
		{"gptossmxfp4", "gpt-oss", 1e-6, nil, untruncatedYarn},
		{"glm4", "glm4", 1e-6, nil, nil},
		{"cohere2", "cohere2", 1e-6, nil, nil},
		// Sigmoid routing with a selection bias, a leading dense block,
		// shared experts; the NextN block is loaded and not run.
		{"glm4moe", "glm4moe", 1e-6, nil, nil},
		// The text towers of GLM-4.1V and GLM-4.5V: M-RoPE over text
		// positions (Q/K reordered to NeoX order by the converter for glm4).
		{"glm4v", "glm4", 1e-6, nil, nil},
		{"glm4vmoe", "glm4moe", 1e-6, nil, nil},
		// Per-layer head widths and FFN widths, proportional rope through
		// rope_freqs, KV-shared layers, per-layer embeddings; GELU twice
		// per layer through ggml's fp16 table: 7.4e-5 (3.3e-7 with
		// transformers' GELU swapped in).
		{"gemma4", "gemma4", 2e-4, nil, nil},
		// Routed experts beside the dense MLP, keys as values on full
		// layers: 5.8e-5 (2.6e-7 with transformers' GELU).
		{"gemma4moe", "gemma4", 2e-4, nil, nil},
		// Issue 15's attention + MLP/MoE families (fwd-a).
		{"olmoe", "olmoe", 1e-6, nil, nil},
		{"granite", "granite", 1e-6, nil, nil},
		{"granitemoe", "granitemoe", 1e-6, nil, nil},
		{"granitemoeshared", "granitemoe", 1e-6, nil, nil},
		{"ernie4_5", "ernie4_5", 1e-6, nil, nil},
		{"ernie4_5moe", "ernie4_5-moe", 1e-6, nil, nil},
		{"minimaxm2", "minimax-m2", 1e-6, nil, nil},
		{"dots1", "dots1", 1e-6, func(md Metadata) Metadata {
			return withKV{md, "dots1.expert_gating_func", gguf.Uint32(2)}
		}, nil},
		{"hunyuandense", "hunyuan-dense", 1e-6, nil, nil},
		{"arcee", "arcee", 1e-6, nil, nil},
		// llama.cpp gives EXAONE 4.0 sliding-window blocks, and RoPE on
		// those only, by the 32B's block count (64); transformers by
		// sliding_window and layer_types, which this 4-block fixture has
		// (3 of 4 sliding): 0.052 apart. Given the 32B's layout, they agree.
		{"exaone4", "exaone4", 1e-6, nil, exaone4Hybrid},
		{"smollm3", "smollm3", 1e-6, nil, nil},
		{"seedoss", "seed_oss", 1e-6, nil, nil},
		// Wave 1-2 families (issue 15).
		{"olmo", "olmo", 1e-6, nil, nil},
		{"olmo2", "olmo2", 1e-6, nil, nil},
		{"commandr", "command-r", 1e-6, nil, nil},
		// Phi2Model writes feed_forward_length = 4·n_embd (16 here), not the
		// checkpoint's intermediate_size (32; Phi-2's own is 4·n_embd), so
		// llama.cpp refuses this fixture's ffn_up; given 32, the logits agree.
		{"phi2", "phi2", 5e-4, func(md Metadata) Metadata {
			return withKV{md, "phi2.feed_forward_length", gguf.Uint32(32)}
		}, nil},
		{"stablelm", "stablelm", 1e-6, nil, nil},
		{"falcon", "falcon", 5e-4, nil, nil},
		{"starcoder", "starcoder", 5e-4, nil, nil},
		// ALiBi (fixed maximum bias 8), the embedding LayerNorm; GELU
		// through ggml's fp16 table: 1.4e-4.
		{"bloom", "bloom", 5e-4, nil, nil},
		// ALiBi from attention.max_alibi_bias, no biases, GELU through
		// ggml's fp16 table.
		{"mpt", "mpt", 5e-4, nil, nil},
		{"jais2", "jais2", 1e-6, nil, nil},
		// Older class names of converted families (archa).
		{"rwfalcon", "falcon", 5e-4, nil, nil},
		{"stablelmepoch", "stablelm", 1e-6, nil, nil},
		{"olmocaps", "olmo", 1e-6, nil, nil},
		{"olmo3", "olmo2", 1e-6, nil, nil},
		// Remote-code class names on converted families (archd).
		{"iquestcoder", "llama", 1e-6, nil, nil},
		{"kormo", "qwen2", 1e-6, nil, nil},
		{"nanbeige", "nanbeige", 1e-6, nil, nil},
		// Against our float64 reference of llama.cpp's graph.
		{"maincoder", "maincoder", 1e-6, nil, nil},
		// llama.cpp rotates Mellum's sliding-window layers with the global
		// rope base (500000), transformers with the sliding one (10000),
		// 2.2e-4 apart on this fixture: given that base, the logits agree.
		{"mellum", "mellum", 1e-6, nil, func(c *Config) { c.RopeBaseSWA = 10000 }},
		// Attention sinks and a 2-token window on 3 blocks of 4.
		{"graniteswa", "granite_swa", 1e-6, nil, nil},
		{"granitemoeswa", "granite_swa", 1e-6, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			var weights func(Weights) Weights
			if tc.fixture == "gptossmxfp4" {
				// The limits above are for decoding MXFP4: products in
				// float32. ggml's (the default) quantize the activations
				// to Q8_0, which TestFamilyMXFP4Blocks bounds.
				weights = decodedWeights
			}
			checkFamily(t, tc.fixture, tc.arch, tc.maxRel, tc.md, tc.cfg, weights)
		})
	}
}

// TestFamilyMXFP4Blocks runs the MXFP4 gpt-oss fixture with the products on
// the blocks, as ggml: the experts' inputs quantized to Q8_0 move the
// logits by 4.5e-3 relative from transformers' (3.8e-3 with its YaRN
// range), where float32 products agree to 3.3e-7.
func TestFamilyMXFP4Blocks(t *testing.T) {
	checkFamily(t, "gptossmxfp4", "gpt-oss", 1e-2, nil, nil, nil)
}

// decodedWeights hides the stored blocks of w's tensors, so the products
// run on float32 rows (mulDecoded).
func decodedWeights(w Weights) Weights { return decoded{w} }

type decoded struct{ Weights }

func (d decoded) Tensor(name string) (Tensor, bool) {
	t, ok := d.Weights.Tensor(name)
	if !ok {
		return nil, false
	}
	return struct{ Tensor }{t}, true
}

// checkFamily converts a fixture, runs it (its metadata, configuration
// and weights changed by md, cfg and weights where not nil) and compares
// its logits with transformers'.
func checkFamily(t *testing.T, fixture, arch string, maxRel float64, mdHook func(Metadata) Metadata, cfgHook func(*Config), weights func(Weights) Weights) {
	t.Helper()
	want := readTransformersLogits(t, logitsOf(fixture))
	f := convertFixture(t, fixture)
	var md Metadata = f
	if mdHook != nil {
		md = mdHook(md)
	}
	cfg, err := ParseConfig(md)
	if err != nil {
		t.Fatal(err)
	}
	if cfgHook != nil {
		cfgHook(cfg)
	}
	if cfg.Arch != arch {
		t.Fatalf("architecture %s, want %s", cfg.Arch, arch)
	}
	w := GGUFWeights(f)
	if weights != nil {
		w = weights(w)
	}
	m, err := Load(cfg, w, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(len(want.PromptIDs))
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.Eval(context.Background(), want.PromptIDs, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]float32, len(want.Positions))
	for i, p := range want.Positions {
		got[i] = logits[p]
	}
	rel := relDiff(want.logits, got)
	t.Logf("max relative difference from transformers %.3g", rel)
	if rel > maxRel {
		t.Errorf("logits differ from transformers' by %.3g relative (limit %.3g)", rel, maxRel)
	}
	for i := range got {
		if Argmax(got[i]) != Argmax(want.logits[i]) {
			t.Errorf("position %d: argmax %d, transformers %d", want.Positions[i], Argmax(got[i]), Argmax(want.logits[i]))
		}
	}
}
