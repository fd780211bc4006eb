package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

const tokenizeVocab = "../../testdata/gguf/ggml-vocab-llama-spm.gguf"

// runTokenize runs "ggufkit tokenize ARGS" with stdin as standard input.
func runTokenize(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := newApp(&out, &errb)
	app.Reader = strings.NewReader(stdin)
	err := app.RunContext(context.Background(), append([]string{"ggufkit", "tokenize"}, args...))
	if err != nil {
		errb.WriteString(err.Error())
		code = 1
		var ce cli.ExitCoder
		if errors.As(err, &ce) {
			code = ce.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// TestTokenizeCommand checks the command's modes against what llama.cpp's
// llama-tokenize prints for the same vocabulary (ggml-vocab-llama-spm.gguf:
// add_bos_token true, so the default mode adds BOS 1).
func TestTokenizeCommand(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"text", "", []string{tokenizeVocab, "Hello world"}, "     1 -> '<s>'\n 15043 -> ' Hello'\n  3186 -> ' world'\n"},
		{"plain", "", []string{"--plain", tokenizeVocab, "Hello world"}, "1 15043 3186\n"},
		{"ids", "", []string{"--ids", "-m", tokenizeVocab, "-p", "Hello world"}, "[1, 15043, 3186]\n"},
		{"stdin byte for byte", "Hello\\t world\n", []string{"--plain", "--no-escape", tokenizeVocab}, "1 15043 29905 29873 3186 13\n"},
		{"stdin escapes", "Hello\\tworld", []string{"--plain", "--stdin", tokenizeVocab}, "1 15043 12 11526\n"},
		{"empty stdin", "", []string{"--plain", tokenizeVocab}, "1\n"},
		{"empty text", "ignored", []string{"--plain", tokenizeVocab, ""}, "1\n"},
		{"no-bos", "", []string{"--plain", "--no-bos", tokenizeVocab, "Hello world"}, "15043 3186\n"},
		{"no-bos empty", "", []string{"--plain", "--no-bos", tokenizeVocab, ""}, "\n"},
		{"special text parsed", "", []string{"--plain", tokenizeVocab, "<s>Hello</s> wörld"}, "1 1 15043 2 29871 281 1340 430\n"},
		{"special text parsed with no-bos", "", []string{"--plain", "--no-bos", tokenizeVocab, "<s>Hello"}, "1 15043\n"},
		{"special text plain", "", []string{"--plain", "--no-bos", "--no-parse-special", tokenizeVocab, "<s>Hello"}, "529 29879 29958 10994\n"},
		{"show-count", "", []string{"--ids", "--show-count", tokenizeVocab, "Hello"}, "[1, 15043]\nTotal number of tokens: 2\n"},
		{"json", "", []string{"--json", tokenizeVocab, "<s>Hello</s> wörld"},
			`{"ids":[1,1,15043,2,29871,281,1340,430],"pieces":["<s>","<s>"," Hello","</s>"," "," w","ör","ld"]}` + "\n"},
		{"json empty", "", []string{"--json", "--no-bos", tokenizeVocab, ""}, `{"ids":[],"pieces":[]}` + "\n"},
		{"json byte pieces", "", []string{"--json", "--no-bos", tokenizeVocab, "\t\U0001F999"},
			`{"ids":[29871,12,243,162,169,156],"pieces":[" ","\t","\ufffd","\ufffd","\ufffd","\ufffd"]}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runTokenize(t, tc.stdin, tc.args...)
			if code != 0 || out != tc.want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, tc.want)
			}
		})
	}
}

// TestTokenizeCommandGolden feeds texts of the tokenizer tests through
// standard input and compares with llama-tokenize's golden output, ids and
// pieces, in both modes.
func TestTokenizeCommandGolden(t *testing.T) {
	const dir = "../../tokenizer/testdata/"
	raw, err := os.ReadFile(dir + "texts.inp")
	if err != nil {
		t.Fatal(err)
	}
	cases := strings.Split(string(raw), "\n__ggml_vocab_test__\n")
	read := func(name string) []string {
		b, err := os.ReadFile(dir + "golden/llama-spm." + name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(b), "\n")
	}
	plain, special, pieces := read("plain.out"), read("special.out"), read("pieces")
	for _, i := range []int{0, 1, 9, 17, 27, 31, 40, 55, 60, 66, 70, 76, 80} {
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			out, errs, code := runTokenize(t, cases[i], "--plain", "--no-bos", "--no-parse-special", "--no-escape", tokenizeVocab)
			if code != 0 || out != plain[i]+"\n" {
				t.Errorf("--no-bos: exit %d, stdout %.200q, stderr %q; llama-tokenize gives %.200q", code, out, errs, plain[i])
			}
			out, errs, code = runTokenize(t, cases[i], "--json", "--no-escape", tokenizeVocab)
			if code != 0 {
				t.Fatalf("--json: exit %d, stderr %q", code, errs)
			}
			var got struct {
				IDs    []int    `json:"ids"`
				Pieces []string `json:"pieces"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(got.IDs))
			for k, id := range got.IDs {
				ids[k] = strconv.Itoa(id)
			}
			if strings.Join(ids, " ") != special[i] {
				t.Errorf("ids %.200v; llama-tokenize gives %.200q", got.IDs, special[i])
			}
			want := strings.Split(pieces[i], " ")
			for k, p := range got.Pieces {
				b, _ := hex.DecodeString(want[k])
				if utf8.Valid(b) && !bytes.Contains(b, []byte{0}) && p != string(b) {
					t.Errorf("piece %d = %q; llama-tokenize prints %q", k, p, b)
				}
			}
		})
	}
}

// TestTokenizeCommandErrors checks usage and file errors.
func TestTokenizeCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no arguments", nil, 2, "expected [-m] MODEL.gguf [TEXT]"},
		{"three arguments", []string{tokenizeVocab, "a", "b"}, 2, "expected [-m] MODEL.gguf [TEXT]"},
		{"two texts", []string{"-p", "a", tokenizeVocab, "b"}, 2, "not both"},
		{"empty -p", []string{"-p", "", tokenizeVocab}, 2, "-p is empty"},
		{"two formats", []string{"--ids", "--json", tokenizeVocab, "b"}, 2, "exclude each other"},
		{"missing text file", []string{"-f", "no-such.txt", tokenizeVocab}, 1, "no-such.txt"},
		{"missing file", []string{"no-such.gguf", "a"}, 1, "no-such.gguf"},
		{"not a GGUF", []string{"tokenize.go", "a"}, 1, "tokenize.go"},
		{"GGUF without a vocabulary", []string{"../../testdata/gguf/kvtypes-le-v3.gguf", "a"}, 1, "tokenizer.ggml.model is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runTokenize(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, tc.code, tc.want)
			}
		})
	}
}
