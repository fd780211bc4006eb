package metadata

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// expected is testdata/expected.json: gguf-py's own answers (made by
// testdata/gen/gen_expected.py), the truth these tests compare with.
type expected struct {
	IDs []struct {
		ID         string    `json:"id"`
		Total      int64     `json:"total"`
		Components []*string `json:"components"`
		Title      *string   `json:"title"`
	} `json:"ids"`
	Sizes []struct {
		Args  [4]int64 `json:"args"`
		Label string   `json:"label"`
	} `json:"sizes"`
	Names []struct {
		Args []*string `json:"args"`
		Name string    `json:"name"`
	} `json:"names"`
	Templates []struct {
		Args [2]string `json:"args"`
		Name string    `json:"name"`
	} `json:"templates"`
	Cards []struct {
		Folder    string  `json:"folder"`
		Override  *string `json:"override"`
		ModelName *string `json:"model_name"`
		Total     int64   `json:"total"`
		KVs       []struct {
			Key   string          `json:"key"`
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"kvs"`
	} `json:"cards"`
}

func loadExpected(t *testing.T) *expected {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

func str(p *string) string {
	if p == nil {
		return "<None>"
	}
	return *p
}

func TestModelIDComponents(t *testing.T) {
	for _, c := range loadExpected(t).IDs {
		t.Run(c.ID, func(t *testing.T) {
			id := c.ID
			p := modelIDComponents(&id, c.Total)
			got := []*string{p.fullName, p.org, p.basename, p.finetune, p.version, p.sizeLabel}
			for i, name := range []string{"name", "org", "basename", "finetune", "version", "size_label"} {
				if str(got[i]) != str(c.Components[i]) {
					t.Errorf("%s = %q, gguf-py %q", name, str(got[i]), str(c.Components[i]))
				}
			}
			if c.Title != nil && idToTitle(*p.fullName) != *c.Title {
				t.Errorf("title %q, gguf-py %q", idToTitle(*p.fullName), *c.Title)
			}
		})
	}
}

func TestSizeLabel(t *testing.T) {
	for _, c := range loadExpected(t).Sizes {
		t.Run(fmt.Sprint(c.Args), func(t *testing.T) {
			if got := SizeLabel(c.Args[0], c.Args[1], c.Args[2], c.Args[3]); got != c.Label {
				t.Errorf("%q, gguf-py %q", got, c.Label)
			}
		})
	}
}

func TestNamingConvention(t *testing.T) {
	for _, c := range loadExpected(t).Names {
		t.Run(c.Name, func(t *testing.T) {
			a := make([]string, 7)
			for i, p := range c.Args {
				if p != nil {
					a[i] = *p
				}
			}
			if got := NamingConvention(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); got != c.Name {
				t.Errorf("%q, gguf-py %q", got, c.Name)
			}
		})
	}
	for _, c := range loadExpected(t).Templates {
		t.Run(c.Args[0], func(t *testing.T) {
			if got := FillTemplatedFilename(c.Args[0], c.Args[1]); got != c.Name {
				t.Errorf("%q, gguf-py %q", got, c.Name)
			}
		})
	}
}

// jsonValue is a KV's value as gguf-py's JSON dump has it.
func jsonValue(v gguf.Value) any {
	if s, ok := v.Strings(); ok {
		return s
	}
	if s, ok := v.Str(); ok {
		return s
	}
	if n, ok := v.Int(); ok {
		return float64(n)
	}
	if f, ok := v.Float(); ok {
		return f
	}
	return fmt.Sprint(v)
}

// TestLoad runs Load on each folder of testdata/cards (model card front
// matter, config.json, generation_config.json, override files) and compares
// the general.* pairs — keys, types, values, order — with gguf-py's.
func TestLoad(t *testing.T) {
	for _, c := range loadExpected(t).Cards {
		t.Run(c.Folder+"/"+str(c.ModelName), func(t *testing.T) {
			dir := filepath.Join("testdata", "cards", c.Folder)
			override := ""
			if c.Override != nil {
				override = filepath.Join(dir, *c.Override)
			}
			name := ""
			if c.ModelName != nil {
				name = *c.ModelName
			}
			m, err := Load(override, dir, name, c.Total)
			if err != nil {
				t.Fatal(err)
			}
			if m.Name == "" {
				m.Name = c.Folder
			}
			got := m.KVs()
			for i := range max(len(got), len(c.KVs)) {
				if i >= len(got) || i >= len(c.KVs) {
					t.Fatalf("%d pairs, gguf-py %d", len(got), len(c.KVs))
				}
				w := c.KVs[i]
				var want any
				if err := json.Unmarshal(w.Value, &want); err != nil {
					t.Fatal(err)
				}
				typ := got[i].Value.Type().String()
				if got[i].Value.IsArray() {
					typ = "array"
				}
				gv := jsonValue(got[i].Value)
				if f, ok := want.(float64); ok && typ == "float32" {
					want = float64(float32(f))
				}
				if list, ok := want.([]any); ok {
					s := make([]string, len(list))
					for j, x := range list {
						s[j] = fmt.Sprint(x)
					}
					want = s
				}
				if got[i].Key != w.Key || !strings.EqualFold(typ, w.Type) || fmt.Sprint(gv) != fmt.Sprint(want) {
					t.Errorf("#%d: %s %s %v, gguf-py %s %s %v", i, got[i].Key, typ, gv, w.Key, w.Type, want)
				}
			}
		})
	}
}
