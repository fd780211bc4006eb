package metadata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzFrontMatter feeds arbitrary model card front matter to the YAML
// subset parser: it must return a mapping or an error, never panic.
func FuzzFrontMatter(f *testing.F) {
	cards, _ := filepath.Glob("testdata/cards/*/README.md")
	for _, c := range cards {
		b, err := os.ReadFile(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("a:\n- b: c\n  d:\n   - |\n     x\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseFrontMatter(strings.Split(s, "\n"))
		if err != nil && m != nil {
			t.Fatalf("both a mapping and an error: %v", err)
		}
	})
}
