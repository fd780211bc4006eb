package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/verify"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "show a GGUF file's metadata and tensors, or a checkpoint's tensors and config",
		ArgsUsage: "PATH\n\n" +
			"PATH is a GGUF file (recognised by its magic, whatever its name), or a checkpoint: a .safetensors,\n" +
			".bin, .pth or .pt file, a *.index.json, a model folder (safetensors, PyTorch shards, Meta's\n" +
			"consolidated.NN.pth + params.json) or a Hugging Face cache entry (models--org--name).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON (GGUF: complete arrays, metadata in file order; checkpoint: format, tensors, config)"},
			&cli.BoolFlag{Name: "checksum", Usage: "checkpoint only: add each tensor's sha256 of its values as float32 little-endian, row-major"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("inspect: expected one PATH", 2)
			}
			path := c.Args().First()
			w := bufio.NewWriterSize(c.App.Writer, 1<<16)
			var err error
			if isGGUF(path) {
				if c.Bool("checksum") {
					return cli.Exit("inspect: --checksum reads checkpoints; "+path+" is a GGUF file", 2)
				}
				err = inspectGGUF(w, path, c.Bool("json"))
			} else {
				err = inspectSource(c.Context, w, path, c.Bool("json"), c.Bool("checksum"))
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
}

func inspectGGUF(w io.Writer, path string, asJSON bool) error {
	f, err := ggufread.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if asJSON {
		return writeInspectJSON(w, f)
	}
	return writeInspectText(w, f)
}

func byteOrderName(f *ggufread.File) string {
	if f.ByteOrder.String() == "BigEndian" {
		return "big"
	}
	return "little"
}

// writeInspectJSON prints the header in the documented shape:
// {"version", "byte_order", "alignment", "data_offset", "metadata": [...], "tensors": [...]}.
func writeInspectJSON(w io.Writer, f *ggufread.File) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"version": %d, "byte_order": %q, "alignment": %d, "data_offset": %d,`+"\n", f.Version, byteOrderName(f), f.Alignment, f.DataOffset)
	b.WriteString(` "metadata": [`)
	for i, kv := range f.KVs {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.WriteString(`{"key": `)
		writeJSONString(&b, kv.Key)
		v := kv.Value
		if v.IsArray() {
			fmt.Fprintf(&b, `, "type": "array", "element_type": %q, "value": `, v.ElemType().String())
		} else {
			fmt.Fprintf(&b, `, "type": %q, "value": `, v.Type().String())
		}
		writeJSONValue(&b, v.Any())
		b.WriteByte('}')
		if b.Len() > 1<<20 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
		}
	}
	b.WriteString("],\n \"tensors\": [")
	for i, ti := range f.Tensors {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.WriteString(`{"name": `)
		writeJSONString(&b, ti.Name)
		fmt.Fprintf(&b, `, "type": %q, "shape": [`, ti.Type.String())
		for j, d := range ti.Shape {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatUint(d, 10))
		}
		fmt.Fprintf(&b, `], "offset": %d, "size": %d}`, ti.Offset, f.TensorSize(i))
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeJSONString writes s as a JSON string without HTML escaping (tokens
// such as "<s>" stay readable); invalid UTF-8 becomes U+FFFD, as JSON
// requires valid text.
func writeJSONString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

// writeJSONValue writes a scalar or an array; non-finite floats become the
// strings "NaN", "+Inf", "-Inf" (JSON has no such numbers).
func writeJSONValue(b *bytes.Buffer, x any) {
	switch v := x.(type) {
	case string:
		writeJSONString(b, v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float32:
		writeFloat(b, float64(v), 32)
	case float64:
		writeFloat(b, v, 64)
	case uint8, int8, uint16, int16, uint32, int32, uint64, int64:
		fmt.Fprint(b, v)
	default:
		writeJSONArray(b, x)
	}
}

func writeFloat(b *bytes.Buffer, f float64, bits int) {
	switch {
	case math.IsNaN(f):
		b.WriteString(`"NaN"`)
	case math.IsInf(f, 1):
		b.WriteString(`"+Inf"`)
	case math.IsInf(f, -1):
		b.WriteString(`"-Inf"`)
	default:
		s := strconv.FormatFloat(f, 'g', -1, bits)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		b.WriteString(s)
	}
}

func writeJSONArray(b *bytes.Buffer, x any) {
	b.WriteByte('[')
	n := 0
	each(x, func(e any) {
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		writeJSONValue(b, e)
	})
	b.WriteByte(']')
}

// each calls fn on every element of an array value.
func each(x any, fn func(any)) {
	switch v := x.(type) {
	case []uint8:
		eachOf(v, fn)
	case []int8:
		eachOf(v, fn)
	case []uint16:
		eachOf(v, fn)
	case []int16:
		eachOf(v, fn)
	case []uint32:
		eachOf(v, fn)
	case []int32:
		eachOf(v, fn)
	case []float32:
		eachOf(v, fn)
	case []bool:
		eachOf(v, fn)
	case []string:
		eachOf(v, fn)
	case []uint64:
		eachOf(v, fn)
	case []int64:
		eachOf(v, fn)
	case []float64:
		eachOf(v, fn)
	}
}

func eachOf[T any](xs []T, fn func(any)) {
	for _, x := range xs {
		fn(x)
	}
}

// inspectArrayPreview is how many elements of a long array the text view shows.
const inspectArrayPreview = 8

func writeInspectText(w io.Writer, f *ggufread.File) error {
	fmt.Fprintf(w, "%s: GGUF v%d, %s-endian, alignment %d, %d metadata pairs, %d tensors, data at offset %d\n\n",
		f.Name, f.Version, byteOrderName(f), f.Alignment, len(f.KVs), len(f.Tensors), f.DataOffset)
	if vf := verify.FromGGUF(f); vf.Architecture() == "clip" {
		info, _ := verify.ReadMMProj(vf)
		fmt.Fprintln(w, info.Describe())
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tVALUE")
	for _, kv := range f.KVs {
		v := kv.Value
		typ := v.Type().String()
		if v.IsArray() {
			typ = fmt.Sprintf("[%s × %d]", v.ElemType(), v.Len())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", kv.Key, typ, previewValue(v))
	}
	tw.Flush()
	if len(f.Tensors) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tNAME\tTYPE\tSHAPE\tSIZE\tOFFSET\t")
	var total uint64
	for i, ti := range f.Tensors {
		total += f.TensorSize(i)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%s\t%d\t\n", i, ti.Name, ti.Type, ti.Shape, humanBytes(f.TensorSize(i)), ti.Offset)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d tensors, %s of tensor data\n", len(f.Tensors), humanBytes(total))
	return nil
}

// previewValue renders a value on one line, long arrays and strings cut short.
func previewValue(v gguf.Value) string {
	var b bytes.Buffer
	if !v.IsArray() {
		writeJSONValue(&b, v.Any())
		return clip(b.String(), 120)
	}
	b.WriteByte('[')
	n := 0
	each(v.Any(), func(e any) {
		if n < inspectArrayPreview {
			if n > 0 {
				b.WriteString(", ")
			}
			var eb bytes.Buffer
			writeJSONValue(&eb, e)
			b.WriteString(clip(eb.String(), 40))
		}
		n++
	})
	if n > inspectArrayPreview {
		fmt.Fprintf(&b, ", … %d more", n-inspectArrayPreview)
	}
	b.WriteByte(']')
	return b.String()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
