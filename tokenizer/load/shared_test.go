package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// TestShared converts the tokenizer folders of the read-only reference data
// (../shared, named by GGUFKIT_SHARED, which .ci/run sets) as they are, and
// compares them with every GGUF llama.cpp made beside them: the reference
// models' conversions and llama-quantize outputs must hold exactly our
// tokenizer KVs; llama.cpp's vocab GGUFs differ as TestVocabGGUF explains.
func TestShared(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED is not set (.ci/run sets it to ../shared)")
	}
	vocab := filepath.Join(shared, "data/llamacpp-vocab")
	tests := []struct {
		name    string
		files   []string // copied into the folder (a directory: all its files)
		config  string   // copied in as config.json
		routine func(string, load.Options) ([]gguf.KV, error)
		opts    load.Options
		ggufs   []string // globs
		want    []string
	}{
		{"stories260K", []string{"reference/stories260K/source"}, "", load.Llama, load.Options{VocabSize: 512},
			[]string{"reference/stories260K/gguf/*.gguf", "reference/stories260K/quantized/*.gguf"}, nil},
		{"tiny-llama", []string{"reference/tiny-llama/source"}, "", load.Llama, load.Options{VocabSize: 512},
			[]string{"reference/tiny-llama/gguf/*.gguf", "reference/tiny-llama/quantized/*.gguf"}, nil},
		{"t5", []string{"data/tokenizers/t5"}, "../testdata/gen/t5-small.config.json", load.T5, load.Options{VocabSize: 32128},
			[]string{"../testdata/vocab/ggml-vocab-t5.gguf.bz2"}, nil},
		{"llama2", []string{"data/tokenizers/llama2"}, "", load.Llama, load.Options{VocabSize: 32000},
			[]string{filepath.Join(vocab, "ggml-vocab-llama-spm.gguf")}, vocabGGUFWant["llama2"]},
		{"phi-3", []string{"data/tokenizers/phi-3"}, "", load.Phi3, load.Options{VocabSize: 32064},
			[]string{filepath.Join(vocab, "ggml-vocab-phi-3.gguf")}, vocabGGUFWant["phi-3"]},
		{"fake_gpt2", []string{"data/hf-gpt2/fake_gpt2"}, "", load.GPT2, load.Options{VocabSize: 50257},
			[]string{filepath.Join(vocab, "ggml-vocab-gpt-2.gguf")}, vocabGGUFWant["gpt2"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, src := range tt.files {
				copyInto(t, filepath.Join(shared, src), dir)
			}
			if tt.config != "" {
				b, err := os.ReadFile(tt.config)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			kvs, err := tt.routine(dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, g := range tt.ggufs {
				if !filepath.IsAbs(g) && !strings.HasPrefix(g, "..") {
					g = filepath.Join(shared, g)
				}
				m, err := filepath.Glob(g)
				if err != nil || len(m) == 0 {
					t.Fatalf("no GGUF matches %s", g)
				}
				for _, p := range m {
					if !strings.Contains(filepath.Base(p), "imatrix") { // importance matrices, not models
						paths = append(paths, p)
					}
				}
			}
			for _, p := range paths {
				if got := diffKVs(kvs, tokenizerKVs(t, p)); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
					t.Errorf("differences from %s:\n got:\n\t%s\nwant:\n\t%s", p, strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
				}
			}
			t.Logf("%d GGUFs compared", len(paths))
		})
	}
}

// copyInto copies a file, or the regular files of a directory, into dir.
func copyInto(t *testing.T, src, dir string) {
	t.Helper()
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{src}
	if st.IsDir() {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".safetensors") {
				files = append(files, filepath.Join(src, e.Name()))
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
