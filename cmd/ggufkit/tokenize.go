package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
)

func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "tokenize",
		Usage: "tokenize text with a GGUF's vocabulary, exactly as llama.cpp does",
		ArgsUsage: "MODEL.gguf [TEXT]\n\n" +
			"TEXT, or when it is absent all of standard input byte for byte (nothing stripped, no escapes), is\n" +
			"tokenized like llama-tokenize does by default: special tokens added as the vocabulary asks\n" +
			"(add_special = tokenizer.ggml.add_bos_token) and special-token text such as <s> recognised.\n" +
			"The ids are printed space-separated on one line.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-bos", Usage: "add no special tokens and leave special-token text as plain text (add_special = parse_special = false, as llama.cpp's test-tokenizer-0)"},
			&cli.BoolFlag{Name: "json", Usage: `print {"ids": [...], "pieces": [...]}; a piece is the token's text as llama_token_to_piece renders it (bytes that are no valid UTF-8 become U+FFFD)`},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return cli.Exit("tokenize: expected MODEL.gguf [TEXT]", 2)
			}
			path := c.Args().Get(0)
			f, err := ggufread.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			tok, err := tokenizer.Load(f)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			var text string
			if c.NArg() == 2 {
				text = c.Args().Get(1)
			} else {
				b, err := io.ReadAll(c.App.Reader)
				if err != nil {
					return fmt.Errorf("tokenize: reading standard input: %w", err)
				}
				text = string(b)
			}
			addSpecial, parseSpecial := tok.AddBOS(), true
			if c.Bool("no-bos") {
				addSpecial, parseSpecial = false, false
			}
			ids, err := tok.Encode(text, addSpecial, parseSpecial)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			w := bufio.NewWriter(c.App.Writer)
			if c.Bool("json") {
				err = writeTokensJSON(w, tok, ids)
			} else {
				writeIDs(w, ids)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
}

// writeIDs prints the ids space-separated on one line.
func writeIDs(w *bufio.Writer, ids []int) {
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(strconv.Itoa(id))
	}
	w.WriteByte('\n')
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
