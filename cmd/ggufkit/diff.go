package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/diff"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// The exit statuses of diff, as diff(1) has them.
const (
	diffDifferent = 1
	diffTrouble   = 2
)

var errFilesDiffer = errors.New("diff: the files differ")

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:  "diff",
		Usage: "compare two GGUFs: metadata key by key, tensors by name, type and shape, and the numeric error of each tensor",
		ArgsUsage: "A.gguf B.gguf\n\n" +
			"Lists the keys only in A (-), only in B (+) or with another type or value (~), then the tensors likewise;\n" +
			"a tensor both hold with the same shape but other bytes is decoded to float32 and compared: RMSE, largest\n" +
			"absolute difference, relative error ‖B−A‖/‖A‖ and cosine similarity. Exit status 0 when the files hold\n" +
			"the same metadata and tensors, 1 when they differ, 2 on an error.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing, only set the exit status"},
		},
		Action: func(c *cli.Context) error {
			trouble := func(err error) error { return &exitError{code: diffTrouble, err: err} }
			if c.NArg() != 2 {
				return cli.Exit("diff: expected A.gguf B.gguf", diffTrouble)
			}
			a, err := ggufread.Open(c.Args().Get(0))
			if err != nil {
				return trouble(err)
			}
			defer a.Close()
			b, err := ggufread.Open(c.Args().Get(1))
			if err != nil {
				return trouble(err)
			}
			defer b.Close()
			r, err := diff.Compare(c.Context, a, b)
			if err != nil {
				return trouble(err)
			}
			w := bufio.NewWriter(c.App.Writer)
			switch {
			case c.Bool("quiet"):
			case c.Bool("json"):
				enc := json.NewEncoder(w)
				enc.SetEscapeHTML(false)
				err = enc.Encode(r)
			default:
				writeDiff(w, r)
			}
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				return trouble(err)
			}
			if !r.Equal {
				return &exitError{code: diffDifferent, err: errFilesDiffer, silent: true}
			}
			return nil
		},
	}
}

var diffMarks = map[diff.Status]string{diff.OnlyInA: "-", diff.OnlyInB: "+", diff.Changed: "~"}

// writeDiff prints the report for people.
func writeDiff(w *bufio.Writer, r *diff.Report) {
	if len(r.KVs) > 0 {
		fmt.Fprintln(w, "metadata:")
	}
	for _, d := range r.KVs {
		fmt.Fprintf(w, "  %s %s: %s\n", diffMarks[d.Status], d.Key, sides(side(d.AType, kvText(d.A, d.ALen)), side(d.BType, kvText(d.B, d.BLen))))
		if d.FirstDiff != nil {
			fmt.Fprintf(w, "      first difference at index %d\n", *d.FirstDiff)
		}
	}
	if len(r.Tensors) > 0 {
		fmt.Fprintln(w, "tensors:")
	}
	for _, d := range r.Tensors {
		fmt.Fprintf(w, "  %s %s: %s\n", diffMarks[d.Status], d.Name, sides(side(d.AType, fmt.Sprint(d.AShape)), side(d.BType, fmt.Sprint(d.BShape))))
		switch {
		case d.Error != nil:
			fmt.Fprintf(w, "      rmse %.6g, max abs %.6g, relative %.6g, cosine %.9f\n", d.Error.RMSE, d.Error.MaxAbs, d.Error.Relative, d.Error.Cosine)
		case d.Note != "":
			fmt.Fprintf(w, "      %s\n", d.Note)
		}
	}
	if r.Equal {
		fmt.Fprintf(w, "equal: the same metadata and %d identical tensors\n", r.SameTensors)
		return
	}
	fmt.Fprintf(w, "different: %d keys and %d tensors differ, %d tensors identical\n", len(r.KVs), len(r.Tensors), r.SameTensors)
}

// sides prints "A → B", or the one side a key or tensor is on.
func sides(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " → " + b
}

// side joins a type and a value, or is empty when the type is.
func side(typ, v string) string {
	if typ == "" {
		return ""
	}
	return strings.TrimSpace(typ + " " + v)
}

func kvText(v any, n *int) string {
	switch {
	case n != nil:
		return fmt.Sprintf("(%d items)", *n)
	case v == nil:
		return ""
	}
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		if len(b) > 100 {
			return string(b[:97]) + "…"
		}
		return string(b)
	}
	return fmt.Sprint(v)
}
