package refdata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestAndCommandLine(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "MANIFEST.json")
	if err := os.WriteFile(man, []byte(`{"files": [{"file": "gguf/a.gguf", "sha256": "ab"}, {"file": "b", "sha256": "cd", "command": "x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Manifest(man)
	if err != nil || len(m) != 2 || m["gguf/a.gguf"] != "ab" || m["b"] != "cd" {
		t.Fatalf("Manifest = %v, %v", m, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"# cwd: x\npython convert.py a --outtype f16\n", "python convert.py a --outtype f16"},
		{"# one\n\n  tool  -x  y \n# trailing comment\n\n", "tool -x y"},
		{"# only comments\n", ""},
	} {
		p := filepath.Join(dir, "c.cmd")
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := CommandLine(p)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: no error", tc.text)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%q: %q, %v", tc.text, got, err)
		}
	}
	if _, err := Manifest(filepath.Join(dir, "none.json")); err == nil {
		t.Error("a missing manifest reads")
	}
}
