package verify

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/internal/fixture"
)

const fixtures = "../testdata/convert"

// assembleFixture lays out a testdata/convert fixture as a Hugging Face
// folder (see fixture.Assemble).
func assembleFixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(fixtures, name)
	m, err := fixture.Load(dir)
	if err == nil {
		dir, err = fixture.Assemble(dir, m, t.TempDir(), false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func convertTo(t *testing.T, dir, outType string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+"-"+outType+".gguf")
	if _, err := convert.Run(context.Background(), dir, convert.Options{OutType: outType, OutFile: out, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFixtures verifies ggufkit's own conversions of the convert issue's
// fixtures, on other prompts than stories260K's: each F32 file passes the
// structural checks alone, and its Q8_0 conversion passes against it.
func TestFixtures(t *testing.T) {
	tests := []struct {
		fixture, prompt string
	}{
		{"llama3tied", "The cat sat on the mat."},
		{"qwen2", "Hello, my dog is cute"},
		{"qwen3", "def main():\n    print(42)"},
		{"mistral", "Once upon a time there was"},
		{"gemma2", "One, two, three, four"},
		{"gpt2", "The quick brown fox"},
		{"mixtral", "Two experts of four, chosen per token"},
		{"dsv3", "Latent attention, shared and routed experts"},
		{"glm47flash", "One more block for the next token"},
		{"gptossmxfp4", "Sinks, windows and experts in MXFP4"},
		{"glm4", "Partial rotary, post norms"},
		{"glm4moe", "A dense block, then sigmoid-routed experts"},
		{"cohere2", "Three sliding layers, one global"},
		{"qwen25vl", "Once upon a time there was"},
		{"qwen3vl", "The little dog ran to the park"},
		{"gemma4", "Per-layer embeddings and shared keys"},
		{"gemma4moe", "Experts beside a dense MLP"},
		{"llama4text", "Routed and shared experts, every second block"},
		{"mistral3", "Once upon a time in a small town"},
		// Issue 15's attention + MLP/MoE families (fwd-a).
		{"granitemoeshared", "Scaled embeddings, residuals and logits"},
		{"ernie4_5moe", "A dense block, then biased routing and a shared expert"},
		{"exaone4", "No pre-norms, only post-norms"},
		// Wave 1-2 families (issue 15).
		{"olmo2", "Norms after attention, not before"},
		{"commandr", "Attention and FFN side by side"},
		{"falcon", "Two norms, one parallel block"},
		{"rwfalcon", "One key head for every query head"},
		{"olmo3", "Three sliding layers, then YaRN"},
		{"bloom", "Slopes instead of rotations"},
		{"mpt", "Linear biases, no positions"},
		{"jais2", "Squared rectifiers and biases"},
		// State-space models (issue 16).
		{"mamba", "A selective scan over the prompt"},
		{"falconmamba", "Normalised time steps, B and C"},
		{"mamba2", "Once upon a time there was"},
		{"rwkv7", "Hello world and the quick brown fox"},
		{"rwkv7fla", "The quick brown fox and the world"},
		{"rwkv6", "Hello world, the quick brown fox"},
		{"rwkv6qwen2", "Once upon a time there was"},
		{"arwkv7", "A time mix in a Qwen2 body"},
		{"arwkv7gate", "Six lerps and a gate, no group norm"},
		// Hybrids: attention and recurrent blocks.
		{"lfm2", "Short convolutions between attention blocks"},
		{"lfm2moe", "Convolutions, attention and routed experts"},
		{"qwen3next", "Gated delta nets and gated attention"},
		{"qwen35", "Three linear blocks, then full attention"},
		{"qwen35moe", "Delta nets with routed and shared experts"},
		{"granitehybrid", "Mamba-2 blocks around one attention block"},
		{"bamba", "Partial rotary attention between Mamba-2 blocks"},
		{"jamba", "Mamba blocks, attention without RoPE, experts"},
		{"falconh1", "Attention and Mamba-2 side by side"},
		{"kimilinear", "Kimi delta attention, then latent attention"},
		{"nemotronhmoe", "Mamba-2, attention and experts, one per block"},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			checkFixture(t, tc.fixture, tc.prompt)
		})
	}
}

// checkFixture converts a fixture to F32 and Q8_0: the F32 file passes the
// structural checks and a forward pass alone, the Q8_0 file against it.
func checkFixture(t *testing.T, fixture, prompt string) {
	t.Helper()
	dir := assembleFixture(t, fixture)
	f32 := open(t, convertTo(t, dir, "f32"))
	opts := Options{Prompt: prompt, NPredict: 8}
	alone := run(t, f32, nil, opts)
	if !alone.OK || alone.Forward == nil || len(alone.Forward.GreedyIDs) != 8 {
		t.Fatalf("F32 alone: OK %v, problems %v, forward %+v", alone.OK, alone.Problems, alone.Forward)
	}
	q8 := open(t, convertTo(t, dir, "q8_0"))
	rep := run(t, q8, GGUFReference(f32), opts)
	fw := rep.Forward
	if fw == nil {
		t.Fatalf("no forward pass: %v", rep.Problems)
	}
	t.Logf("%d prompt tokens; Q8_0 vs F32: KL mean %.3g (limit %.3g), top-1 %.3f (decisive %.3f of %d)",
		len(fw.PromptIDs), fw.KLMean, fw.KLLimit, fw.Top1, fw.Top1Decisive, fw.Decisive)
	if !rep.OK {
		t.Errorf("Q8_0 conversion fails against F32: %v", rep.Problems)
	}
}

// TestCheckpointReferenceFusedExperts verifies llama4text's F32 conversion
// against its checkpoint, whose experts are stored fused and transposed:
// mapped through the conversion plan, every tensor comes out bit-identical.
func TestCheckpointReferenceFusedExperts(t *testing.T) {
	dir := assembleFixture(t, "llama4text")
	f32 := open(t, convertTo(t, dir, "f32"))
	ref, err := OpenCheckpoint(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rep := run(t, f32, ref, Options{NPredict: 4})
	if !rep.OK {
		t.Fatalf("fails against its checkpoint: %v", rep.Problems)
	}
	if len(rep.Tensors) == 0 {
		t.Fatal("no tensors compared")
	}
	for _, r := range rep.Tensors {
		if r.RelError != 0 {
			t.Errorf("%s: relative error %.3g, want 0", r.Name, r.RelError)
		}
	}
}
