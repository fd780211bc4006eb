package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const convertSource = "../../testdata/stories260K/source"

// TestConvertCommand: the converter's flags end to end — output naming,
// the summary line, refusing to overwrite (with the flag to use), --force,
// --dry-run writing nothing, --list-architectures, split shards, and the
// exit status of bad arguments.
func TestConvertCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m-{ftype}.gguf")
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string // a substring
		stderr    string // a substring
		files     []string
		wantFiles bool
	}{
		{"converts", []string{"convert", "--quiet", "--outtype", "q8_0", "--outfile", out, convertSource}, 0,
			"wrote " + filepath.Join(dir, "m-q8_0.gguf") + ": Q8_0, 47 tensors", "", []string{"m-q8_0.gguf"}, true},
		{"refuses to overwrite", []string{"convert", "-q", "--outtype", "q8_0", "--outfile", out, convertSource}, 1,
			"", "add --force to replace it", nil, false},
		{"force", []string{"convert", "-q", "-f", "--outtype", "q8_0", "--outfile", out, convertSource}, 0, "wrote", "", nil, false},
		{"folder and naming convention", []string{"convert", "-q", "--outtype", "Q4_K_M", "--outfile", filepath.Join(dir, "sub") + "/", convertSource}, 0,
			"Source-260K-Q4_K_M.gguf", "", []string{"sub/Source-260K-Q4_K_M.gguf"}, true},
		{"dry run", []string{"convert", "--dry-run", "--outtype", "f16", "--outfile", filepath.Join(dir, "dry.gguf"), convertSource}, 0,
			"would write", "", []string{"dry.gguf"}, false},
		{"split", []string{"convert", "-q", "--outtype", "f16", "--split-max-tensors", "20", "--outfile", filepath.Join(dir, "s.gguf"), convertSource}, 0,
			"s-00003-of-00003.gguf", "", []string{"s-00001-of-00003.gguf", "s-00002-of-00003.gguf", "s-00003-of-00003.gguf"}, true},
		{"list architectures", []string{"convert", "--list-architectures"}, 0, "LlamaForCausalLM\n", "", nil, false},
		{"no model", []string{"convert"}, 2, "", "expected one MODEL", nil, false},
		{"bad split size", []string{"convert", "--split-max-size", "12X", convertSource}, 2, "", "--split-max-size", nil, false},
		{"a GGUF", []string{"convert", "-q", "../../testdata/gguf/stories260K-Q8_0.gguf"}, 1, "", "use ggufkit quantize", nil, false},
		{"unknown type", []string{"convert", "-q", "--outtype", "Q9_X", "--outfile", filepath.Join(dir, "x.gguf"), convertSource}, 1, "", `"Q9_X"`, []string{"x.gguf"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
			for _, f := range tc.files {
				_, err := os.Stat(filepath.Join(dir, f))
				if exists := err == nil; exists != tc.wantFiles {
					t.Errorf("%s exists: %v, want %v", f, exists, tc.wantFiles)
				}
			}
		})
	}
}
