package convert

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers/hf"
)

// mlaRefused are the fixtures with DeepSeek's multi-head latent attention,
// whose kv_b_proj the converter splits into per-head transposed k_b: no
// LoRA pair follows (convert_lora_to_gguf.py raises NotImplementedError).
var mlaRefused = map[string]bool{"dsv2lite": true, "dsv3": true, "dsv3fp8": true, "glm47flash": true, "mistral4": true, "kimilinear": true}

// scaledRefused are the fixtures whose converter scales weights by a
// constant (Falcon-H1's μP multipliers, RWKV-6's 2^-(layer / rescale_every)
// on the output and channel-mix value): convert_lora_to_gguf.py follows a
// scale on lora_b; ggufkit's row mapping does not yet, and refuses.
var scaledRefused = map[string]bool{"falconh1": true, "rwkv6": true, "rwkv6f16": true}

// TestLoRAEveryFixture adapts every 2-D weight of every convert fixture
// (rank 2) and converts the adapter: each architecture converts, except
// the MLA ones, refused with an ErrLoRA naming attn_k_b.
func TestLoRAEveryFixture(t *testing.T) {
	mans, _ := filepath.Glob(filepath.Join(fixtures, "*", "manifest.json"))
	for _, manPath := range mans {
		dir := filepath.Dir(manPath)
		m := loadFixture(t, dir)
		if exps, _ := filepath.Glob(filepath.Join(dir, "expected-*.json")); len(exps) == 0 {
			continue // a projector-only fixture: no text model to adapt
		}
		t.Run(m.Fixture, func(t *testing.T) {
			t.Parallel()
			base := assemble(t, dir, m, false)
			model, err := hf.Open(base)
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[string][]int{}
			for _, ti := range model.Source.Tensors() {
				name, ok := strings.CutSuffix(ti.Name, ".weight")
				if !ok || len(ti.Shape) != 2 || strings.Contains(name, "embed") || strings.Contains(name, "norm") || ti.Shape[0]*ti.Shape[1] > 1<<22 {
					continue
				}
				p := "base_model.model." + name + "."
				shapes[p+"lora_A.weight"] = []int{2, int(ti.Shape[1])}
				shapes[p+"lora_B.weight"] = []int{int(ti.Shape[0]), 2}
			}
			model.Close()
			if len(shapes) == 0 {
				t.Skip("no 2-D weights")
			}
			adapter := filepath.Join(t.TempDir(), "adapter")
			writeLoRAAdapter(t, adapter, map[string]any{"lora_alpha": 4}, shapes)
			rep, err := RunLoRA(context.Background(), adapter, LoRAOptions{Base: base, OutFile: filepath.Join(t.TempDir(), "a.gguf"), OutType: "q8_0"})
			switch {
			case mlaRefused[m.Fixture]:
				if !errors.Is(err, ErrLoRA) || !strings.Contains(err.Error(), "attn_k_b") {
					t.Fatalf("error %v, want the refusal of attn_k_b", err)
				}
			case scaledRefused[m.Fixture]:
				if !errors.Is(err, ErrLoRA) || !strings.Contains(err.Error(), "changes values") {
					t.Fatalf("error %v, want the refusal of a scaled tensor", err)
				}
			case err != nil:
				t.Fatal(err)
			case rep.Tensors == 0:
				t.Error("no tensors written")
			}
		})
	}
}
