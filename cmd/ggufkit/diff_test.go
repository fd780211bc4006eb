package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDiffCommand checks diff's exit statuses (0 equal, 1 different, 2
// error), its text and its JSON.
func TestDiffCommand(t *testing.T) {
	const (
		f32  = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
		bf16 = "../../testdata/stories260K/gguf/stories260K-BF16.gguf"
	)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"equal", []string{f32, f32}, 0, "equal: the same metadata and 47 identical tensors\n"},
		{"different", []string{bf16, f32}, 1, "  ~ general.file_type: uint32 32 → uint32 0\n"},
		{"tensor figures", []string{f32, bf16}, 1, "  ~ blk.0.ffn_down.weight: F32 [172 64] → BF16 [172 64]\n      rmse 0.000227232, max abs 0.00190097, relative 0.0018289, cosine 0.999998330\n"},
		{"quiet", []string{"-q", f32, bf16}, 1, ""},
		{"json", []string{"--json", f32, bf16}, 1, `"key":"general.file_type","status":"changed","a_type":"uint32","b_type":"uint32","a":0,"b":32}`},
		{"vocab against a model", []string{"../../testdata/gguf/ggml-vocab-llama-spm.gguf", f32}, 1, "  + token_embd.weight: F32 [64 512]\n"},
		{"missing file", []string{f32, "no-such.gguf"}, 2, ""},
		{"one argument", []string{f32}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runApp(t, append([]string{"diff"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) || tc.want == "" && out != "" {
				t.Fatalf("exit %d, stdout\n%s\nstderr %q; want %d and %q", code, out, errs, tc.code, tc.want)
			}
			if code == 2 && errs == "" || code < 2 && errs != "" {
				t.Errorf("stderr %q", errs)
			}
			if strings.HasPrefix(tc.name, "json") {
				var v map[string]any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
