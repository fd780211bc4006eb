package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	loraAdapter = "../../testdata/lora/llama1-lora"
	loraBase    = "../../testdata/convert/llama1"
)

// TestConvertLoRACommand: convert --lora end to end — the default outtype
// (f32) and file name (convert_lora_to_gguf.py's, with "LoRA"), the base as
// a config.json, and the usage errors.
func TestConvertLoRACommand(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring
		stderr string // a substring
		file   string
	}{
		{"default name", []string{"convert", "--lora", loraAdapter, "--base", loraBase, "--outfile", dir + "/"}, 0,
			"LoRA adapter, F32, 28 tensors", "", "Llama1-Lora-F32-LoRA.gguf"},
		{"config.json as base", []string{"convert", "--lora", loraAdapter, "--base", filepath.Join(loraBase, "config.json"),
			"--outtype", "q8_0", "--outfile", filepath.Join(dir, "a-{ftype}.gguf")}, 0, "Q8_0", "", "a-q8_0.gguf"},
		{"dry run", []string{"convert", "--dry-run", "--lora", loraAdapter, "--base", loraBase, "--outfile", filepath.Join(dir, "dry.gguf")}, 0,
			"blk.0.attn_q.weight.lora_b", "", ""},
		{"no base", []string{"convert", "--lora", loraAdapter}, 2, "", "go together", ""},
		{"model argument too", []string{"convert", "--lora", loraAdapter, "--base", loraBase, loraBase}, 2, "", "not a MODEL argument", ""},
		{"model flags", []string{"convert", "--lora", loraAdapter, "--base", loraBase, "--vocab-only"}, 2, "", "--vocab-only does not apply", ""},
		{"model outtype", []string{"convert", "--lora", loraAdapter, "--base", loraBase, "--outtype", "Q4_K_M"}, 1, "", "f32, f16, bf16, q8_0 or auto", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
			if tc.file != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "dry.gguf")); err == nil {
		t.Error("the dry run wrote its output")
	}
}
