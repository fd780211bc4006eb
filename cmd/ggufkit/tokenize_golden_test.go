package main

import (
	"bytes"
	"compress/bzip2"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizeGoldenVocabs maps the vocabulary names of
// testdata/tokenize/golden.json to their files: every tokenizer model
// (SPM, BPE, WordPiece, Unigram, RWKV, PLaMo-2, the synthetic ones) and
// every family of pre-tokenizer of tokenizer/testdata.
var tokenizeGoldenVocabs = map[string]string{
	"llama-spm":            "../../testdata/gguf/ggml-vocab-llama-spm.gguf",
	"phi-3":                "../../tokenizer/testdata/vocab/ggml-vocab-phi-3.gguf.bz2",
	"torchtune-m":          "../../tokenizer/testdata/vocab/ggml-vocab-torchtune-m.gguf",
	"bert-bge":             "../../tokenizer/testdata/vocab/ggml-vocab-bert-bge.gguf.bz2",
	"t5":                   "../../tokenizer/testdata/vocab/ggml-vocab-t5.gguf.bz2",
	"gpt-2":                "../../tokenizer/testdata/vocab/ggml-vocab-gpt-2.gguf.bz2",
	"starcoder":            "../../tokenizer/testdata/vocab/ggml-vocab-starcoder.gguf.bz2",
	"falcon":               "../../tokenizer/testdata/vocab/ggml-vocab-falcon.gguf.bz2",
	"deepseek-coder":       "../../tokenizer/testdata/vocab/ggml-vocab-deepseek-coder.gguf.bz2",
	"deepseek-llm":         "../../tokenizer/testdata/vocab/ggml-vocab-deepseek-llm.gguf.bz2",
	"qwen2":                "../../tokenizer/testdata/vocab/ggml-vocab-qwen2.gguf.bz2",
	"llama-bpe":            "../../tokenizer/testdata/vocab/ggml-vocab-llama-bpe.gguf.bz2",
	"gemma-4":              "../../tokenizer/testdata/vocab/ggml-vocab-gemma-4.gguf.bz2",
	"vocab-bpe-gpt4o":      "../../testdata/gguf/vocab-bpe-gpt4o.gguf",
	"vocab-bpe-llama3":     "../../testdata/gguf/vocab-bpe-llama3.gguf",
	"vocab-bpe-qwen2":      "../../testdata/gguf/vocab-bpe-qwen2.gguf",
	"vocab-bpe-qwen35":     "../../testdata/gguf/vocab-bpe-qwen35.gguf",
	"vocab-bpe-smollm":     "../../testdata/gguf/vocab-bpe-smollm.gguf",
	"vocab-bpe-spm-gemma4": "../../testdata/gguf/vocab-bpe-spm-gemma4.gguf",
	"synthetic-rwkv":       "../../tokenizer/testdata/vocab/synthetic-rwkv.gguf",
	"synthetic-plamo2":     "../../tokenizer/testdata/vocab/synthetic-plamo2.gguf",
	"synthetic-hybriddna":  "../../tokenizer/testdata/vocab/synthetic-hybriddna.gguf",
	"synthetic-whitespace": "../../tokenizer/testdata/vocab/synthetic-whitespace.gguf",
	"synthetic-test":       "../../tokenizer/testdata/vocab/synthetic-test.gguf",
}

// tokenizeGolden is one llama-tokenize run of testdata/tokenize/golden.json.
type tokenizeGolden struct {
	Vocab     string   `json:"vocab"`
	Args      []string `json:"args"`
	File      string   `json:"file"`  // hex; the bytes of FILE in Args
	Stdin     string   `json:"stdin"` // hex
	Exit      int      `json:"exit"`
	Stdout    *string  `json:"stdout"`
	StdoutHex string   `json:"stdout_hex"`
}

// TestTokenizeLlamaGolden runs `ggufkit tokenize` with llama-tokenize's
// command lines — every vocabulary of the tokenizer tests, texts holding
// many models' special-token text, default, --no-bos, --no-parse-special,
// --ids and --show-count, and on llama-spm the -p/-f/--stdin precedence and
// escape handling — and compares stdout byte for byte with what
// llama-tokenize printed (testdata/tokenize/README.md).
func TestTokenizeLlamaGolden(t *testing.T) {
	runs := readTokenizeGolden(t, "../../testdata/tokenize/golden.json")
	dir := t.TempDir()
	paths := map[string]string{}
	seen := map[string]bool{}
	for i, g := range runs {
		seen[g.Vocab] = true
		model, ok := paths[g.Vocab]
		if !ok {
			model = vocabFile(t, dir, g.Vocab)
			paths[g.Vocab] = model
		}
		t.Run(g.Vocab+"/"+strings.Join(g.Args[2:], " "), func(t *testing.T) {
			want := g.want(t)
			stdin, err := hex.DecodeString(g.Stdin)
			if err != nil {
				t.Fatal(err)
			}
			args := make([]string, len(g.Args))
			for k, a := range g.Args {
				switch a {
				case "MODEL":
					a = model
				case "FILE":
					b, err := hex.DecodeString(g.File)
					if err != nil {
						t.Fatal(err)
					}
					a = filepath.Join(dir, "text")
					if err := os.WriteFile(a, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				args[k] = a
			}
			out, errs, code := runTokenize(t, string(stdin), args...)
			if (code != 0) != (g.Exit != 0) || code == 0 && out != string(want) {
				t.Errorf("run %d: exit %d, stdout\n%q\nstderr %q\nllama-tokenize: exit %d, stdout\n%q", i, code, out, errs, g.Exit, want)
			}
		})
	}
	for name := range tokenizeGoldenVocabs {
		if !seen[name] {
			t.Errorf("vocabulary %s has no golden run", name)
		}
	}
}

// TestTokenizeLlamaGoldenShared does the same on the vocabularies of the
// reference data that are not copied here (.ci/run sets GGUFKIT_SHARED):
// the rest of llama.cpp's models/ggml-vocab-*.gguf and two synthetic SPM
// vocabularies; a run's vocab is its path under the reference data.
func TestTokenizeLlamaGoldenShared(t *testing.T) {
	shared := os.Getenv("GGUFKIT_SHARED")
	if shared == "" {
		t.Skip("GGUFKIT_SHARED not set (.ci/run sets it to ../shared)")
	}
	for i, g := range readTokenizeGolden(t, "../../testdata/tokenize/golden-shared.json") {
		model := filepath.Join(shared, g.Vocab)
		t.Run(g.Vocab+"/"+strings.Join(g.Args[2:], " "), func(t *testing.T) {
			args := slices.Clone(g.Args)
			args[slices.Index(args, "MODEL")] = model
			want := g.want(t)
			out, errs, code := runTokenize(t, "", args...)
			if (code != 0) != (g.Exit != 0) || code == 0 && out != string(want) {
				t.Errorf("run %d: exit %d, stdout\n%q\nstderr %q\nllama-tokenize: exit %d, stdout\n%q", i, code, out, errs, g.Exit, want)
			}
		})
	}
}

// want is what llama-tokenize printed.
func (g tokenizeGolden) want(t *testing.T) []byte {
	t.Helper()
	if g.Stdout != nil {
		return []byte(*g.Stdout)
	}
	b, err := hex.DecodeString(g.StdoutHex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readTokenizeGolden(t *testing.T, path string) []tokenizeGolden {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var runs []tokenizeGolden
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	return runs
}

// vocabFile returns the path of a vocabulary of tokenizeGoldenVocabs,
// decompressed into dir when it is a .bz2.
func vocabFile(t *testing.T, dir, name string) string {
	t.Helper()
	path, ok := tokenizeGoldenVocabs[name]
	if !ok {
		t.Fatalf("golden run of unknown vocabulary %q", name)
	}
	if !strings.HasSuffix(path, ".bz2") {
		return path
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, bzip2.NewReader(f)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".gguf")
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
