package tokenizer

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// caseSep separates the cases of an .inp file (tests/test-tokenizer-0.cpp).
const caseSep = "\n__ggml_vocab_test__\n"

// splitCases is test-tokenizer-0's read_tests: a piece per separator, the
// rest of the file as a last case only when it does not end with one.
func splitCases(raw string) []string {
	var cases []string
	for pos := 0; pos < len(raw); {
		i := strings.Index(raw[pos:], caseSep)
		if i < 0 {
			cases = append(cases, raw[pos:])
			break
		}
		cases = append(cases, raw[pos:pos+i])
		pos += i + len(caseSep)
	}
	return cases
}

// readLines reads a .out or golden file: one line per case, trimmed like
// test-tokenizer-0's string_strip.
func readLines(tb testing.TB, path string) []string {
	tb.Helper()
	lines := readRawLines(tb, path)
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// readRawLines reads a file's lines without their "\n".
func readRawLines(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// testVocab is a vocabulary the tests tokenize with; name is the base name
// of its golden files in testdata/golden and of its .inp/.out in
// testdata/vocab.
type testVocab struct {
	name string
	file string // relative to the package directory; .bz2 is decompressed
	pre  string // replaces tokenizer.ggml.pre when set
}

// testVocabs cover every encoder and every family of pre-tokenizer code
// (hand-written splitters, the regex engine on collapsed bytes and on
// codepoints); testdata/README.md says where each file comes from.
var testVocabs = []testVocab{
	{name: "llama-spm", file: "../testdata/gguf/ggml-vocab-llama-spm.gguf"},
	{name: "phi-3", file: "testdata/vocab/ggml-vocab-phi-3.gguf.bz2"},
	{name: "torchtune-m", file: "testdata/vocab/ggml-vocab-torchtune-m.gguf"},
	{name: "bert-bge", file: "testdata/vocab/ggml-vocab-bert-bge.gguf.bz2"},
	{name: "t5", file: "testdata/vocab/ggml-vocab-t5.gguf.bz2"},
	{name: "xlmroberta", file: "testdata/vocab/ggml-vocab-xlmroberta.gguf.bz2"},
	{name: "gpt-2", file: "testdata/vocab/ggml-vocab-gpt-2.gguf.bz2"},
	{name: "starcoder", file: "testdata/vocab/ggml-vocab-starcoder.gguf.bz2"},
	{name: "falcon", file: "testdata/vocab/ggml-vocab-falcon.gguf.bz2"},
	{name: "deepseek-coder", file: "testdata/vocab/ggml-vocab-deepseek-coder.gguf.bz2"},
	{name: "deepseek-llm", file: "testdata/vocab/ggml-vocab-deepseek-llm.gguf.bz2"},
	{name: "qwen2", file: "testdata/vocab/ggml-vocab-qwen2.gguf.bz2"},
	// ggml-vocab-qwen35.gguf is ggml-vocab-qwen2.gguf with pre "qwen35"
	// and not one other byte changed.
	{name: "qwen35", file: "testdata/vocab/ggml-vocab-qwen2.gguf.bz2", pre: "qwen35"},
	{name: "llama-bpe", file: "testdata/vocab/ggml-vocab-llama-bpe.gguf.bz2"},
	{name: "gemma-4", file: "testdata/vocab/ggml-vocab-gemma-4.gguf.bz2"},
	{name: "vocab-bpe-gpt4o", file: "../testdata/gguf/vocab-bpe-gpt4o.gguf"},
	{name: "vocab-bpe-llama3", file: "../testdata/gguf/vocab-bpe-llama3.gguf"},
	{name: "vocab-bpe-qwen2", file: "../testdata/gguf/vocab-bpe-qwen2.gguf"},
	{name: "vocab-bpe-qwen35", file: "../testdata/gguf/vocab-bpe-qwen35.gguf"},
	{name: "vocab-bpe-smollm", file: "../testdata/gguf/vocab-bpe-smollm.gguf"},
	{name: "vocab-bpe-spm-gemma4", file: "../testdata/gguf/vocab-bpe-spm-gemma4.gguf"},
	{name: "synthetic-rwkv", file: "testdata/vocab/synthetic-rwkv.gguf"},
	{name: "synthetic-plamo2", file: "testdata/vocab/synthetic-plamo2.gguf"},
	{name: "synthetic-hybriddna", file: "testdata/vocab/synthetic-hybriddna.gguf"},
	{name: "synthetic-whitespace", file: "testdata/vocab/synthetic-whitespace.gguf"},
	{name: "synthetic-test", file: "testdata/vocab/synthetic-test.gguf"},
}

// openGGUF opens a GGUF file, decompressing a .bz2 one into memory.
func openGGUF(tb testing.TB, path string) *ggufread.File {
	tb.Helper()
	if !strings.HasSuffix(path, ".bz2") {
		f, err := ggufread.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { f.Close() })
		return f
	}
	fh, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	data, err := io.ReadAll(bzip2.NewReader(bufio.NewReader(fh)))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	f, err := ggufread.NewFile(bytes.NewReader(data), int64(len(data)), path)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// overrideKV replaces one key of a GGUF's metadata.
type overrideKV struct {
	KVLookup
	key string
	val gguf.Value
}

func (o overrideKV) KV(key string) (gguf.Value, bool) {
	if key == o.key {
		return o.val, true
	}
	return o.KVLookup.KV(key)
}

func loadTestVocab(tb testing.TB, v testVocab) *Tokenizer {
	tb.Helper()
	var kvs KVLookup = openGGUF(tb, v.file)
	if v.pre != "" {
		kvs = overrideKV{kvs, gguf.KeyTokenizerPre, gguf.String(v.pre)}
	}
	tok, err := Load(kvs)
	if err != nil {
		tb.Fatalf("%s: %v", v.file, err)
	}
	return tok
}

func formatIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}

// checkEncode compares one encoding with an expected line: ids separated
// by spaces, or "ERR" where llama.cpp throws.
func checkEncode(t *testing.T, tok *Tokenizer, text string, addSpecial, parseSpecial bool, want string) []int {
	t.Helper()
	ids, err := tok.Encode(text, addSpecial, parseSpecial)
	if want == "ERR" {
		if !errors.Is(err, ErrTokenize) {
			t.Errorf("Encode(%.80q) = %v, %v; llama.cpp fails, want an ErrTokenize", text, ids, err)
		}
		return nil
	}
	if err != nil {
		t.Errorf("Encode(%.80q): %v\nwant %.300s", text, err, want)
		return nil
	}
	for _, id := range ids {
		if id < 0 || id >= tok.NumTokens() {
			t.Errorf("Encode(%.80q): id %d out of range", text, id)
		}
	}
	if got := formatIDs(ids); got != want {
		t.Errorf("Encode(%.80q, %v, %v)\n got %.300s\nwant %.300s", text, addSpecial, parseSpecial, got, want)
	}
	return ids
}

// checkCases runs every case of an .inp-format file against a file of
// expected lines.
func checkCases(t *testing.T, tok *Tokenizer, cases, want []string, addSpecial, parseSpecial bool) {
	t.Helper()
	if len(cases) != len(want) {
		t.Fatalf("%d cases, %d expected lines", len(cases), len(want))
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			checkEncode(t, tok, c, addSpecial, parseSpecial, want[i])
		})
	}
}

// checkPieces compares the pieces of the ids llama-tokenize printed with
// the pieces it printed for them (hex, space-separated).
func checkPieces(t *testing.T, tok *Tokenizer, ids, pieces []string) {
	t.Helper()
	for i := range ids {
		if ids[i] == "ERR" || ids[i] == "" {
			continue
		}
		// Single spaces: an empty piece is an empty field.
		hexes := strings.Split(pieces[i], " ")
		fields := strings.Fields(ids[i])
		if len(hexes) != len(fields) {
			t.Fatalf("case %d: %d ids, %d pieces in the golden files", i, len(fields), len(hexes))
		}
		for k, f := range fields {
			id, _ := strconv.Atoi(f)
			p := tok.Piece(id)
			// llama-tokenize prints pieces with printf("%s"), which stops
			// at a NUL byte.
			if j := strings.IndexByte(p, 0); j >= 0 {
				p = p[:j]
			}
			if got := hex.EncodeToString([]byte(p)); got != hexes[k] {
				t.Errorf("case %d: Piece(%d) = %s, llama.cpp prints %s", i, id, got, hexes[k])
			}
		}
	}
}

// TestTokenize checks every test vocabulary against llama.cpp: its own
// test-tokenizer-0 vectors (.inp/.out) where it has them, our texts
// (testdata/texts.inp) in both modes of llama-tokenize with the pieces it
// prints, and 256 KiB of English prose, as golden files made by llama.cpp
// (testdata/README.md).
func TestTokenize(t *testing.T) {
	raw, err := os.ReadFile("testdata/texts.inp")
	if err != nil {
		t.Fatal(err)
	}
	texts := splitCases(string(raw))
	opticks := readOpticksSums(t)
	for _, v := range testVocabs {
		t.Run(v.name, func(t *testing.T) {
			tok := loadTestVocab(t, v)
			checked := false
			inp := "testdata/vocab/ggml-vocab-" + v.name + ".gguf.inp"
			if b, err := os.ReadFile(inp); err == nil {
				checked = true
				t.Run("inp", func(t *testing.T) {
					checkCases(t, tok, splitCases(string(b)), readLines(t, strings.TrimSuffix(inp, ".inp")+".out"), false, false)
				})
			}
			golden := "testdata/golden/" + v.name
			if _, err := os.Stat(golden + ".plain.out"); err == nil {
				checked = true
				t.Run("plain", func(t *testing.T) {
					checkCases(t, tok, texts, readLines(t, golden+".plain.out"), false, false)
				})
				special := readLines(t, golden+".special.out")
				t.Run("special", func(t *testing.T) {
					checkCases(t, tok, texts, special, tok.AddBOS(), true)
				})
				if _, err := os.Stat(golden + ".pieces"); err == nil {
					t.Run("pieces", func(t *testing.T) {
						checkPieces(t, tok, special, readRawLines(t, golden+".pieces"))
					})
				}
			}
			if sum, ok := opticks[v.name]; ok {
				t.Run("opticks", func(t *testing.T) { checkOpticks(t, tok, sum) })
			}
			if !checked {
				t.Fatal("no .inp/.out and no golden files")
			}
		})
	}
}

// opticksText is the first 256 KiB of Newton's Opticks: the English text
// of $GOROOT/src/testdata that Go's own compression benchmarks use.
func opticksText(tb testing.TB) string {
	tb.Helper()
	return string(readOpticks(tb)[:1<<18])
}

// readOpticks reads $GOROOT/src/testdata/Isaac.Newton-Opticks.txt.
func readOpticks(tb testing.TB) []byte {
	tb.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		tb.Fatalf("the Go distribution's test text: %v", err)
	}
	if len(raw) < 1<<18 {
		tb.Fatalf("the Go distribution's test text has %d bytes", len(raw))
	}
	return raw
}

// readOpticksSums reads testdata/opticks.sha256: per vocabulary, the sha256 of
// llama-tokenize's ids for opticksText (space-separated) and their count.
func readOpticksSums(t *testing.T) map[string][2]string {
	t.Helper()
	m := map[string][2]string{}
	for _, line := range readLines(t, "testdata/opticks.sha256") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("opticks.sha256: bad line %q", line)
		}
		m[f[0]] = [2]string{f[1], f[2]}
	}
	return m
}

// checkOpticks tokenizes opticksText and compares with llama.cpp's sum.
func checkOpticks(t *testing.T, tok *Tokenizer, want [2]string) {
	t.Helper()
	ids, err := tok.Encode(opticksText(t), false, false)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(formatIDs(ids)))
	if got := hex.EncodeToString(sum[:]); got != want[0] || strconv.Itoa(len(ids)) != want[1] {
		t.Fatalf("%d ids, sha256 %s; llama.cpp: %s ids, sha256 %s", len(ids), got, want[1], want[0])
	}
}

// sharedDir is the read-only reference data (../shared) when the
// environment names it; the tests that sweep it are skipped otherwise.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GGUFKIT_SHARED")
	if dir == "" {
		t.Skip("GGUFKIT_SHARED is not set")
	}
	return dir
}

// TestSharedVocabs tokenizes with every vocabulary llama.cpp ships (and the
// synthetic SentencePiece ones of gguf-other-writer): their .inp/.out where
// present, and our texts against the golden files llama.cpp made for them.
func TestSharedVocabs(t *testing.T) {
	dir := sharedDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "data/llamacpp-vocab/*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(dir, "data/gguf-other-writer/gridcore-runner/fixtures/vocab-spm*.gguf"))
	files = append(files, more...)
	if len(files) < 19 {
		t.Fatalf("found %d vocabularies under %s", len(files), dir)
	}
	raw, err := os.ReadFile("testdata/texts.inp")
	if err != nil {
		t.Fatal(err)
	}
	texts := splitCases(string(raw))
	for _, path := range files {
		name := strings.TrimPrefix(strings.TrimSuffix(filepath.Base(path), ".gguf"), "ggml-vocab-")
		t.Run(name, func(t *testing.T) {
			tok := loadTestVocab(t, testVocab{file: path})
			checked := false
			if b, err := os.ReadFile(path + ".inp"); err == nil {
				checked = true
				t.Run("inp", func(t *testing.T) {
					checkCases(t, tok, splitCases(string(b)), readLines(t, path+".out"), false, false)
				})
			}
			golden := "testdata/golden/" + name
			if _, err := os.Stat(golden + ".plain.out"); err == nil {
				checked = true
				t.Run("plain", func(t *testing.T) {
					checkCases(t, tok, texts, readLines(t, golden+".plain.out"), false, false)
				})
				t.Run("special", func(t *testing.T) {
					checkCases(t, tok, texts, readLines(t, golden+".special.out"), tok.AddBOS(), true)
				})
			}
			if !checked {
				t.Fatal("no .inp/.out and no golden files: run testdata/gen/make_golden.py on it")
			}
		})
	}
}

// TestPreTokenizers tokenizes testdata/pre.inp with ggml-vocab-gpt-2.gguf
// under every tokenizer.ggml.pre name llama.cpp knows (preNames), against
// llama-tokenize's output for the same file with that pre written in
// (testdata/gen/make_variants.py).
func TestPreTokenizers(t *testing.T) {
	raw, err := os.ReadFile("testdata/pre.inp")
	if err != nil {
		t.Fatal(err)
	}
	texts := splitCases(string(raw))
	goldens, err := filepath.Glob("testdata/golden/pre/pre-*.plain.out")
	if err != nil {
		t.Fatal(err)
	}
	if len(goldens) != len(preNames) {
		t.Errorf("%d golden files for %d pre names", len(goldens), len(preNames))
	}
	f := openGGUF(t, "testdata/vocab/ggml-vocab-gpt-2.gguf.bz2")
	names := make([]string, 0, len(preNames))
	for n := range preNames {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tok, err := Load(overrideKV{f, gguf.KeyTokenizerPre, gguf.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			golden := "testdata/golden/pre/pre-" + name
			t.Run("plain", func(t *testing.T) {
				checkCases(t, tok, texts, readLines(t, golden+".plain.out"), false, false)
			})
			t.Run("special", func(t *testing.T) {
				checkCases(t, tok, texts, readLines(t, golden+".special.out"), tok.AddBOS(), true)
			})
		})
	}
}
