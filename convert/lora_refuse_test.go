package convert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// writeLoRAAdapter writes an adapter folder: adapter_config.json from cfg
// and adapter_model.safetensors of F32 tensors of the given shapes
// (values small and non-zero).
func writeLoRAAdapter(t *testing.T, dir string, cfg map[string]any, shapes map[string][]int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, loraConfigName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	hdr := map[string]any{}
	var data []byte
	for _, n := range names {
		count := 1
		for _, d := range shapes[n] {
			count *= d
		}
		start := len(data)
		for i := range count {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(i%7+1)/16))
		}
		hdr[n] = map[string]any{"dtype": "F32", "shape": shapes[n], "data_offsets": []int{start, len(data)}}
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	file = append(append(file, js...), data...)
	if err := os.WriteFile(filepath.Join(dir, loraSafetensorsName), file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// qProj is an adapted q_proj of the llama1 fixture (hidden size 64), rank 4.
func qProj(layer string) map[string][]int {
	p := "base_model.model.model.layers." + layer + ".self_attn.q_proj."
	return map[string][]int{p + "lora_A.weight": {4, 64}, p + "lora_B.weight": {64, 4}}
}

func with(m map[string][]int, kv ...any) map[string][]int {
	out := maps(m)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1].([]int)
		}
	}
	return out
}

func maps(m map[string][]int) map[string][]int {
	out := make(map[string][]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestLoRARefusals: what a GGUF LoRA adapter cannot carry is refused with
// the reason, and no output file is left.
func TestLoRARefusals(t *testing.T) {
	base := filepath.Join(fixtures, "llama1")
	cfg := func(kv ...any) map[string]any {
		c := map[string]any{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "use_dora": false, "use_rslora": false,
			"rank_pattern": map[string]any{}, "alpha_pattern": map[string]any{}, "modules_to_save": nil}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}
	q := qProj("0")
	tests := []struct {
		name    string
		cfg     map[string]any
		tensors map[string][]int
		base    string
		want    string
	}{
		{"DoRA", cfg("use_dora", true), q, base, "DoRA (use_dora)"},
		{"DoRA magnitude", cfg(), with(q, "base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector", []int{64}), base,
			"DoRA magnitude vector"},
		{"rsLoRA", cfg("use_rslora", true), q, base, "use_rslora"},
		{"rank pattern", cfg("rank_pattern", map[string]any{"q_proj": 2}), q, base, "rank_pattern"},
		{"alpha pattern", cfg("alpha_pattern", map[string]any{"q_proj": 2}), q, base, "alpha_pattern"},
		{"lora bias", cfg("lora_bias", true), q, base, "lora_bias"},
		{"not LoRA", cfg("peft_type", "IA3"), q, base, `peft_type "IA3"`},
		{"no alpha", cfg("lora_alpha", nil), q, base, "no numeric lora_alpha"},
		{"invocation string", cfg("invocation_string", "<|assistant|>"), q, base, "invocation_string needs the base model's tokenizer"},
		{"modules_to_save", cfg("modules_to_save", []any{"lm_head"}),
			with(q, "base_model.model.lm_head.modules_to_save.default.weight", []int{512, 64}), base, "modules_to_save"},
		{"new embeddings", cfg(), with(q, "base_model.model.model.embed_tokens.weight", []int{520, 64}), base, "whole embeddings"},
		{"embedding LoRA", cfg(), with(q, "base_model.model.model.embed_tokens.lora_embedding_A", []int{4, 512}), base, "lora_embedding_A/B"},
		{"norms", cfg(), with(q, "base_model.model.model.layers.0.input_layernorm.weight", []int{64}), base, "norm weights"},
		{"A only", cfg(), with(q, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", nil), base, "no lora_B"},
		{"ranks differ", cfg(), with(q, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", []int{64, 2}), base,
			"do not share a rank"},
		{"wrong shape for the base", cfg(), with(q, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", []int{60, 4}), base, "q_proj"},
		{"no base", cfg(), q, "", "--base"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "adapter")
			writeLoRAAdapter(t, dir, tc.cfg, tc.tensors)
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := RunLoRA(context.Background(), dir, LoRAOptions{Base: tc.base, OutFile: out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an output file was left")
			}
		})
	}
}

// TestLoRAFolders: a folder that is not an adapter, an adapter without
// weights, and aLoRA invocation tokens, which go after the alpha.
func TestLoRAFolders(t *testing.T) {
	base := filepath.Join(fixtures, "llama1")
	if _, err := RunLoRA(context.Background(), base, LoRAOptions{Base: base}); err == nil || !strings.Contains(err.Error(), "not a PEFT adapter folder") {
		t.Errorf("model folder: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	writeLoRAAdapter(t, dir, map[string]any{"lora_alpha": 8}, qProj("0"))
	if err := os.Remove(filepath.Join(dir, loraSafetensorsName)); err != nil {
		t.Fatal(err)
	}
	if _, err := RunLoRA(context.Background(), dir, LoRAOptions{Base: base}); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("no weights: %v", err)
	}
	writeLoRAAdapter(t, dir, map[string]any{"lora_alpha": 8, "alora_invocation_tokens": []int{5, 7, 11}}, qProj("1"))
	out := filepath.Join(t.TempDir(), "a.gguf")
	if _, err := RunLoRA(context.Background(), dir, LoRAOptions{Base: base, OutFile: out, OutType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	for _, kv := range f.KVs {
		keys = append(keys, kv.Key)
	}
	i := slices.Index(keys, keyAloraInvocationTokens)
	if i < 1 || keys[i-1] != "adapter.lora.alpha" {
		t.Fatalf("keys %v: want %s after adapter.lora.alpha", keys, keyAloraInvocationTokens)
	}
	got, _ := json.Marshal(f.KVs[i].Value.Any())
	if string(got) != "[5,7,11]" {
		t.Errorf("%s = %s", keyAloraInvocationTokens, got)
	}
	var names []string
	for _, ti := range f.Tensors {
		names = append(names, ti.Name+":"+ti.Type.String())
	}
	if want := []string{"blk.1.attn_q.weight.lora_a:BF16", "blk.1.attn_q.weight.lora_b:BF16"}; !slices.Equal(names, want) {
		t.Errorf("tensors %v, want %v", names, want)
	}
}
