package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/safetensors"
)

const (
	stories        = "../../testdata/stories260K/source"
	storiesSharded = "../../testdata/stories260K/source-sharded"
)

// checkStories checks what Open found for a stories260K folder.
func checkStories(t *testing.T, m *Model, root string, shards int) {
	t.Helper()
	if m.Root != root {
		t.Errorf("Root %q, want %q", m.Root, root)
	}
	if m.Source.Format() != "safetensors" || len(m.Source.Tensors()) != 47 {
		t.Errorf("format %q with %d tensors, want safetensors with 47", m.Source.Format(), len(m.Source.Tensors()))
	}
	files := map[string]bool{}
	for _, ti := range m.Source.Tensors() {
		files[ti.File] = true
	}
	if len(files) != shards {
		t.Errorf("tensors from %d files, want %d", len(files), shards)
	}
	var tok []string
	for name := range m.TokenizerFiles {
		tok = append(tok, name)
	}
	slices.Sort(tok)
	if want := []string{"special_tokens_map.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json"}; !slices.Equal(tok, want) {
		t.Errorf("tokenizer files %q, want %q", tok, want)
	}
	c := m.Config
	if filepath.Base(c.File) != ConfigName || c.Generation == nil || c.TokenizerConfig == nil || c.SpecialTokensMap == nil || c.AddedTokens != nil {
		t.Errorf("config files: %q gen %v tok %v special %v added %v", c.File, c.Generation != nil, c.TokenizerConfig != nil, c.SpecialTokensMap != nil, c.AddedTokens != nil)
	}
	ints := func(f func() (int64, bool)) int64 {
		v, ok := f()
		if !ok {
			return -1
		}
		return v
	}
	floats := func(f func() (float64, bool)) float64 {
		v, ok := f()
		if !ok {
			return -1
		}
		return v
	}
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"architecture", c.Architecture(), "LlamaForCausalLM"},
		{"model_type", c.ModelType(), "llama"},
		{"hidden_size", ints(c.HiddenSize), int64(64)},
		{"num_hidden_layers", ints(c.NumHiddenLayers), int64(5)},
		{"num_attention_heads", ints(c.NumAttentionHeads), int64(8)},
		{"num_key_value_heads", ints(c.NumKeyValueHeads), int64(4)},
		{"intermediate_size", ints(c.IntermediateSize), int64(172)},
		{"vocab_size", ints(c.VocabSize), int64(512)},
		{"max_position_embeddings", ints(c.MaxPositionEmbeddings), int64(512)},
		{"rms_norm_eps", floats(c.RMSNormEps), 1e-5},
		{"rope_theta", floats(c.RopeTheta), 10000.0},
		{"rope_scaling", c.RopeScaling() == nil, true},
		{"torch_dtype", c.TorchDType(), "float32"},
		{"bos", ints(c.BOSTokenID), int64(1)},
		{"eos", ints(c.EOSTokenID), int64(2)},
		{"generation bos", c.Generation["bos_token_id"], json.Number("1")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if tie, ok := c.TieWordEmbeddings(); !tie || !ok {
		t.Errorf("tie_word_embeddings = %v, %v", tie, ok)
	}
}

func TestOpenStories(t *testing.T) {
	for _, tc := range []struct {
		name, path, root string
		shards           int
	}{
		{"folder", stories, stories, 1},
		{"weights file", filepath.Join(stories, "model.safetensors"), stories, 1},
		{"sharded folder", storiesSharded, storiesSharded, 3},
		{"index file", filepath.Join(storiesSharded, safetensors.IndexName), storiesSharded, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checkStories(t, m, tc.root, tc.shards)
		})
	}
}

// TestOpenConsolidatedShard: one of Meta's model-parallel shards given as
// a file opens the whole set of its folder, merged as the folder is.
func TestOpenConsolidatedShard(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "meta", "split", "stories260K")
	for _, name := range []string{"consolidated.00.pth", "consolidated.01.pth"} {
		t.Run(name, func(t *testing.T) {
			m, err := Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Root != dir || filepath.Base(m.Config.File) != ParamsName {
				t.Errorf("root %s, config %s", m.Root, m.Config.File)
			}
			for _, ti := range m.Source.Tensors() {
				if ti.Name == "tok_embeddings.weight" && fmt.Sprint(ti.Shape) != "[512 64]" {
					t.Errorf("tok_embeddings.weight has shape %v, want both shards' [512 64]", ti.Shape)
				}
			}
		})
	}
}

// makeCache makes a Hugging Face cache entry for the stories260K folder:
// blobs/ holds the files, snapshots/<commit>/ symlinks to them, refs/main
// names the commit (when refMain is not "-").
func makeCache(t *testing.T, refMain string, commits ...string) string {
	t.Helper()
	entry := filepath.Join(t.TempDir(), "models--karpathy--stories260K")
	ents, err := os.ReadDir(stories)
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range commits {
		snap := filepath.Join(entry, "snapshots", commit)
		if err := os.MkdirAll(snap, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(stories, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			blob := filepath.Join(entry, "blobs", commit+"-"+e.Name())
			if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(blob, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "..", "blobs", commit+"-"+e.Name()), filepath.Join(snap, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if refMain != "-" {
		if err := os.MkdirAll(filepath.Join(entry, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(entry, "refs", "main"), []byte(refMain), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return entry
}

func TestOpenCache(t *testing.T) {
	const a, b = "0123456789abcdef0123456789abcdef01234567", "fedcba9876543210fedcba9876543210fedcba98"
	for _, tc := range []struct {
		name    string
		refMain string
		commits []string
		snap    string // expected snapshot; "" = an error
		msg     string
	}{
		{"refs/main", a, []string{b, a}, a, ""},
		{"refs/main with newline", b + "\n", []string{a, b}, b, ""},
		{"single snapshot, no refs", "-", []string{a}, a, ""},
		{"two snapshots, no refs", "-", []string{a, b}, "", "no refs/main and 2 snapshots"},
		{"refs/main names a missing snapshot", b, []string{a}, "", "which is missing"},
		{"refs/main escapes", "../../x", []string{a}, "", "not a commit hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := makeCache(t, tc.refMain, tc.commits...)
			m, err := Open(entry)
			if tc.snap == "" {
				if !errors.Is(err, ErrCache) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %v, want ErrCache saying %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			snap := filepath.Join(entry, "snapshots", tc.snap)
			checkStories(t, m, snap, 1)
			// The snapshot folder itself opens as a plain folder.
			m2, err := Open(snap)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			checkStories(t, m2, snap, 1)
		})
	}
}

const lfsPointer = "version https://git-lfs.github.com/spec/v1\noid sha256:0000000000000000000000000000000000000000000000000000000000000000\nsize 1044992\n"

func TestLFSPointers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pointer string // file replaced by an LFS pointer
		open    string // relative path opened; "" = the folder
	}{
		{"weights", "model.safetensors", ""},
		{"weights file given", "model.safetensors", "model.safetensors"},
		{"tokenizer.model", "tokenizer.model", ""},
		{"tokenizer.json", "tokenizer.json", ""},
		{"config.json", "config.json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ents, _ := os.ReadDir(stories)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(stories, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if e.Name() == tc.pointer {
					b = []byte(lfsPointer)
				}
				if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Open(filepath.Join(dir, tc.open))
			if !errors.Is(err, readers.ErrLFSPointer) || !strings.Contains(err.Error(), "git lfs pull") || !strings.Contains(err.Error(), tc.pointer) {
				t.Fatalf("error %v, want an LFS-pointer error naming %s", err, tc.pointer)
			}
		})
	}
}

// expectedPT mirrors testdata/expected.json (written by
// testdata/gen/make_fixtures.py with torch).
type expectedPT struct {
	Format           string `json:"format"`
	IntermediateSize int64  `json:"intermediate_size"`
	VocabSize        int64  `json:"vocab_size"`
	Tensors          []struct {
		Name   string  `json:"name"`
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256_f32le"`
	} `json:"tensors"`
}

// TestOpenPyTorch: folders without safetensors fall back to PyTorch
// checkpoints — HF .bin and Meta's consolidated.*.pth with params.json.
func TestOpenPyTorch(t *testing.T) {
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]json.RawMessage
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"tiny-pt", "meta"} {
		t.Run(dir, func(t *testing.T) {
			var want expectedPT
			if err := json.Unmarshal(exp[dir], &want); err != nil {
				t.Fatal(err)
			}
			m, err := Open(filepath.Join("testdata", dir))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Source.Format() != want.Format {
				t.Errorf("format %q, want %q", m.Source.Format(), want.Format)
			}
			got := m.Source.Tensors()
			if len(got) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(got), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				g := got[i]
				if g.Name != w.Name || string(g.DType) != w.DType || !slices.Equal(g.Shape, w.Shape) {
					t.Errorf("tensor %d = %+v, want %+v", i, g, w)
					continue
				}
				sum, err := readers.Checksum(context.Background(), m.Source, g)
				if err != nil || sum != w.SHA256 {
					t.Errorf("%s: sha256 %s (%v), want %s", g.Name, sum, err, w.SHA256)
				}
			}
			if dir != "meta" {
				return
			}
			c := m.Config
			if filepath.Base(c.File) != ParamsName {
				t.Errorf("config from %q", c.File)
			}
			for _, tc := range []struct {
				name string
				f    func() (int64, bool)
				want int64
			}{
				{"hidden_size", c.HiddenSize, 64},
				{"num_hidden_layers", c.NumHiddenLayers, 1},
				{"num_attention_heads", c.NumAttentionHeads, 4},
				{"num_key_value_heads", c.NumKeyValueHeads, 2},
				{"intermediate_size (weights)", c.IntermediateSize, want.IntermediateSize},
				{"vocab_size (weights)", c.VocabSize, want.VocabSize},
			} {
				if got, ok := tc.f(); !ok || got != tc.want {
					t.Errorf("%s = %d, %v; want %d", tc.name, got, ok, tc.want)
				}
			}
			if eps, _ := c.RMSNormEps(); eps != 1e-5 {
				t.Errorf("rms_norm_eps = %g", eps)
			}
			if theta, _ := c.RopeTheta(); theta != 500000 {
				t.Errorf("rope_theta = %g", theta)
			}
			if v, _ := c.Raw["vocab_size"].(json.Number); v != "-1" {
				t.Errorf("Raw vocab_size = %v, want -1 as read", c.Raw["vocab_size"])
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		is   error
	}{
		{"missing path", filepath.Join(empty, "nope"), os.ErrNotExist},
		{"folder without weights", empty, ErrNoWeights},
		{"unknown file kind", filepath.Join(empty, "config.json"), ErrNoWeights},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open(tc.path); !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
		})
	}
}
