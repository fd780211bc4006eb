package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
)

func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "tokenize",
		Usage: "tokenize text with a GGUF's vocabulary, exactly as llama.cpp's llama-tokenize does",
		ArgsUsage: "[MODEL.gguf [TEXT]]\n\n" +
			"Takes llama-tokenize's flags with their meanings and prints what it prints: one `%6d -> '%s'` line\n" +
			"per token (id, piece), or with --ids a Python list. The model is -m/--model or the first argument;\n" +
			"the text is --stdin, else -f/--file, else -p/--prompt or the second argument, else (ours) all of\n" +
			"standard input. Escapes (\\n \\r \\t \\' \\\" \\\\ \\xHH) in the text are processed unless --no-escape.\n" +
			"Special tokens are added as the vocabulary asks (tokenizer.ggml.add_bos_token) and special-token\n" +
			"text such as <s> is recognised, as llama-tokenize does by default.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "the GGUF whose vocabulary tokenizes (or the first argument)"},
			&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "the text (or the second argument)"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the text from FILE, byte for byte (takes precedence over -p)"},
			&cli.BoolFlag{Name: "stdin", Usage: "read the text from standard input (takes precedence over -f and -p)"},
			&cli.BoolFlag{Name: "no-bos", Usage: "add no BOS (nor the EOS/SEP the vocabulary adds with it) even if the vocabulary asks for one; special-token text is still parsed"},
			&cli.BoolFlag{Name: "no-parse-special", Usage: "leave special-token text such as <s> as plain text"},
			&cli.BoolFlag{Name: "ids", Usage: "print only the ids, as a Python list [1, 2, 3]"},
			&cli.BoolFlag{Name: "show-count", Usage: "print the number of tokens at the end"},
			&cli.BoolFlag{Name: "escape", Aliases: []string{"e"}, Value: true, Usage: "process escapes in the text (--no-escape or --escape=false turns it off)"},
			&cli.BoolFlag{Name: "no-escape", Usage: "do not process escapes: the text is tokenized byte for byte"},
			&cli.BoolFlag{Name: "log-disable", Usage: "accepted for llama-tokenize's command lines; ggufkit logs nothing anyway"},
			&cli.BoolFlag{Name: "plain", Usage: "(ours) print the ids space-separated on one line"},
			&cli.BoolFlag{Name: "json", Usage: `(ours) print {"ids": [...], "pieces": [...]}; a piece is the token's text as llama_token_to_piece renders it (bytes that are no valid UTF-8 become U+FFFD)`},
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			model := c.String("model")
			if model == "" && len(args) > 0 {
				model, args = args[0], args[1:]
			}
			if model == "" || len(args) > 1 {
				return cli.Exit("tokenize: expected [-m] MODEL.gguf [TEXT]", 2)
			}
			formats := 0
			for _, name := range []string{"ids", "plain", "json"} {
				if c.Bool(name) {
					formats++
				}
			}
			if formats > 1 {
				return cli.Exit("tokenize: --ids, --plain and --json exclude each other", 2)
			}
			text, err := tokenizeInput(c, args)
			if err != nil {
				return err
			}
			f, err := ggufread.Open(model)
			if err != nil {
				return err
			}
			defer f.Close()
			tok, err := tokenizer.Load(f)
			if err != nil {
				return fmt.Errorf("%s: %w", model, err)
			}
			// llama-tokenize's read order: the file and -p before the model,
			// standard input after it has loaded.
			if text == nil {
				b, err := io.ReadAll(c.App.Reader)
				if err != nil {
					return fmt.Errorf("tokenize: reading standard input: %w", err)
				}
				text = b
			}
			if c.Bool("escape") && !c.Bool("no-escape") {
				text = processEscapes(text)
			}
			// add_bos = the vocabulary's add_bos && !--no-bos; llama.cpp passes it
			// as add_special, which also governs EOS and SEP.
			addSpecial := tok.AddBOS() && !c.Bool("no-bos")
			ids, err := tok.Encode(string(text), addSpecial, !c.Bool("no-parse-special"))
			if err != nil {
				return fmt.Errorf("%s: %w", model, err)
			}
			w := bufio.NewWriter(c.App.Writer)
			switch {
			case c.Bool("json"):
				err = writeTokensJSON(w, tok, ids)
			case c.Bool("plain"):
				writeIDs(w, ids, " ", "", "\n")
			case c.Bool("ids"):
				writeIDs(w, ids, ", ", "[", "]\n")
			default:
				writePieces(w, tok, ids)
			}
			if err != nil {
				return err
			}
			if c.Bool("show-count") {
				fmt.Fprintf(w, "Total number of tokens: %d\n", len(ids))
			}
			return w.Flush()
		},
	}
}

// tokenizeInput returns the text named by --stdin, -f, -p or the argument,
// in llama-tokenize's order of precedence, or nil when it is to be read from
// standard input.
func tokenizeInput(c *cli.Context, args []string) ([]byte, error) {
	switch {
	case c.Bool("stdin"):
		return nil, nil
	case c.IsSet("file"):
		// Verbatim: llama-tokenize rereads the file in binary and, unlike the
		// other tools' -f, keeps a trailing newline (it is a token too).
		b, err := os.ReadFile(c.String("file"))
		if err != nil {
			return nil, fmt.Errorf("tokenize: %w", err)
		}
		return b, nil
	case c.IsSet("prompt"):
		if len(args) > 0 {
			return nil, cli.Exit("tokenize: the text is either -p or the second argument, not both", 2)
		}
		if c.String("prompt") == "" {
			// llama-tokenize takes an empty prompt for none and refuses.
			return nil, cli.Exit("tokenize: -p is empty (as llama-tokenize, ggufkit takes that for no text); an empty text can come from -f or --stdin", 2)
		}
		return []byte(c.String("prompt")), nil
	case len(args) == 1:
		return []byte(args[0]), nil
	}
	return nil, nil
}

// processEscapes rewrites \n \r \t \' \" \\ and \xHH as common's
// string_process_escapes does; any other backslash stays as it is. HH is
// what strtol reads in base 16 from exactly the next two bytes, so a leading
// space or sign is accepted as it is there ("\x-1" is byte 0xff).
func processEscapes(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case '\'', '"', '\\':
			out = append(out, c)
		case 'x':
			if i+2 < len(s) {
				if v, ok := strtolHex2(s[i+1], s[i+2]); ok {
					out = append(out, byte(v))
					i += 2
					break
				}
			}
			out = append(out, '\\', c)
		default:
			out = append(out, '\\', c)
		}
	}
	return out
}

// strtolHex2 is strtol(x, &end, 16) on the two bytes a, b, reporting whether
// end lands after both: two hex digits, or one preceded by white space or a
// sign.
func strtolHex2(a, b byte) (int, bool) {
	d, ok := hexDigit(b)
	if !ok {
		return 0, false
	}
	if h, ok := hexDigit(a); ok {
		return h*16 + d, true
	}
	switch a {
	case ' ', '\t', '\n', '\v', '\f', '\r', '+':
		return d, true
	case '-':
		return -d, true
	}
	return 0, false
}

func hexDigit(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// writePieces prints llama-tokenize's default output, `%6d -> '%s'` per
// token. The piece goes out as printf("%s") writes it: raw bytes, cut at the
// first NUL.
func writePieces(w *bufio.Writer, tok *tokenizer.Tokenizer, ids []int) {
	for _, id := range ids {
		p := tok.Piece(id)
		if i := strings.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		fmt.Fprintf(w, "%6d -> '%s'\n", id, p)
	}
}

// writeIDs prints the ids joined by sep between open and end.
func writeIDs(w *bufio.Writer, ids []int, sep, open, end string) {
	w.WriteString(open)
	for i, id := range ids {
		if i > 0 {
			w.WriteString(sep)
		}
		w.WriteString(strconv.Itoa(id))
	}
	w.WriteString(end)
}

// writeTokensJSON prints {"ids": [...], "pieces": [...]} on one line.
func writeTokensJSON(w io.Writer, tok *tokenizer.Tokenizer, ids []int) error {
	out := struct {
		IDs    []int    `json:"ids"`
		Pieces []string `json:"pieces"`
	}{IDs: ids, Pieces: make([]string, len(ids))}
	if out.IDs == nil {
		out.IDs = []int{}
	}
	for i, id := range ids {
		out.Pieces[i] = tok.Piece(id)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
