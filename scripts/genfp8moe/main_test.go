package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
)

// small are the sizes bench-fp8-moe.sh --small uses.
var small = sizes{layers: 2, hidden: 64, heads: 2, qLora: 48, kvLora: 32, nope: 16, rope: 8, vHead: 16,
	ffn: 160, moeFFN: 32, experts: 4, shared: 1, used: 2, dense: 1}

// TestGeneratedConverts: the folder is a DeepSeek-V3 FP8 checkpoint
// ggufkit converts (every FP8 weight has its block scales), one block
// dense and one MoE.
func TestGeneratedConverts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := run(dir, "../../testdata/convert/tokenizers/gpt2", small); err != nil {
		t.Fatal(err)
	}
	rep, err := convert.Run(context.Background(), dir, convert.Options{OutType: "bf16", OutFile: filepath.Join(t.TempDir(), "out.gguf")})
	if err != nil {
		t.Fatal(err)
	}
	// token_embd, output_norm, output; per block attn_norm, ffn_norm,
	// q_a, q_a_norm, q_b, kv_a_mqa, kv_a_norm, k_b, v_b, output; the dense
	// block's gate/up/down, the MoE block's router, bias, 3 stacked
	// experts and 3 shared.
	if want := 3 + 2*10 + 3 + 8; rep.Tensors != want {
		t.Errorf("%d tensors, want %d", rep.Tensors, want)
	}
}

func TestGenerateBadSizes(t *testing.T) {
	bad := small
	bad.used = 9
	if err := run(filepath.Join(t.TempDir(), "m"), "../../testdata/convert/tokenizers/gpt2", bad); err == nil {
		t.Error("9 experts used of 4: no error")
	}
	if err := run("", "", small); err == nil {
		t.Error("no -o: no error")
	}
}
