package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/hf"
)

// ggufMagic is the first four bytes of every GGUF file, whatever its byte
// order (gguf.cpp writes the magic as characters).
const ggufMagic = "GGUF"

// isGGUF reports whether path is a regular file starting with the GGUF
// magic. Anything else — a folder, a short or unreadable file — is left to
// the source readers, whose errors say what is wrong. (Stat first: opening
// a named pipe would block.)
func isGGUF(path string) bool {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [len(ggufMagic)]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == ggufMagic
}

// sourceTensor is one row of inspect's listing of a checkpoint.
type sourceTensor struct {
	readers.TensorInfo
	// SHA256 is readers.Checksum's digest; "" unless --checksum.
	SHA256 string
}

// inspectSource opens path as a checkpoint (hf.Open: a weights file, a
// model folder, a Hugging Face cache entry) and lists its tensors.
func inspectSource(ctx context.Context, w io.Writer, path string, asJSON, checksum bool) error {
	m, err := hf.Open(path)
	if st, serr := os.Stat(path); errors.Is(err, hf.ErrNoWeights) && serr == nil && !st.IsDir() {
		return fmt.Errorf("%s: not a GGUF file (no %q magic) nor a checkpoint: %w", path, ggufMagic, hf.ErrNoWeights)
	}
	if err != nil {
		return err
	}
	defer m.Close()
	infos := m.Source.Tensors()
	tensors := make([]sourceTensor, len(infos))
	for i, t := range infos {
		tensors[i].TensorInfo = t
	}
	if checksum {
		if err := checksumAll(ctx, m.Source, tensors, runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
	}
	if asJSON {
		config, err := configJSON(m.Config)
		if err != nil {
			return err
		}
		return writeSourceJSON(w, m.Source.Format(), tensors, config)
	}
	return writeSourceText(w, path, m, tensors)
}

// checksumAll fills every tensor's SHA256, tensors spread over workers.
// Each worker holds one chunk buffer of readers.Checksum at a time, so
// memory does not grow with the model.
func checksumAll(ctx context.Context, src readers.Source, tensors []sourceTensor, workers int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i := range tensors {
		g.Go(func() error {
			sum, err := readers.Checksum(ctx, src, tensors[i].TensorInfo)
			if err != nil {
				return fmt.Errorf("checksum of tensor %q (%s): %w", tensors[i].Name, tensors[i].File, err)
			}
			tensors[i].SHA256 = sum
			return nil
		})
	}
	return g.Wait()
}

// configJSON returns the configuration file (config.json, or params.json
// for Meta's layout) as compact JSON with its keys in file order, or
// "null" when the model has none. hf.ReadConfig has already checked the
// file is one JSON object of bounded size; it is read again here because
// Config.Raw, a Go map, has lost the key order.
func configJSON(cfg *hf.Config) ([]byte, error) {
	if cfg.File == "" {
		return []byte("null"), nil
	}
	b, err := os.ReadFile(cfg.File)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil || !bytes.HasPrefix(out.Bytes(), []byte("{")) {
		return nil, fmt.Errorf("%s: %w: changed since it was read", cfg.File, hf.ErrConfig)
	}
	return out.Bytes(), nil
}

// writeSourceJSON prints the documented shape:
// {"format": …, "tensors": [{"name", "dtype", "shape", "file"[, "sha256"]}, …], "config": {…} | null}.
func writeSourceJSON(w io.Writer, format string, tensors []sourceTensor, config []byte) error {
	var b bytes.Buffer
	b.WriteString(`{"format": `)
	writeJSONString(&b, format)
	b.WriteString(",\n \"tensors\": [")
	for i, t := range tensors {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.WriteString(`{"name": `)
		writeJSONString(&b, t.Name)
		b.WriteString(`, "dtype": `)
		writeJSONString(&b, string(t.DType))
		b.WriteString(`, "shape": [`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		b.WriteString(`], "file": `)
		writeJSONString(&b, t.File)
		if t.SHA256 != "" {
			fmt.Fprintf(&b, `, "sha256": %q`, t.SHA256)
		}
		b.WriteByte('}')
		if b.Len() > 1<<20 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
		}
	}
	b.WriteString("],\n \"config\": ")
	b.Write(config)
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// tensorBytes is a tensor's stored size (elements × dtype size), 0 for a
// shape the readers would reject.
func tensorBytes(t readers.TensorInfo) uint64 {
	n, err := readers.NumElements(t.Shape)
	if err != nil {
		return 0
	}
	return uint64(n) * uint64(t.DType.Size())
}

func writeSourceText(w io.Writer, path string, m *hf.Model, tensors []sourceTensor) error {
	files := map[string]bool{}
	var total uint64
	for _, t := range tensors {
		files[t.File] = true
		total += tensorBytes(t.TensorInfo)
	}
	fmt.Fprintf(w, "%s: %s, %d tensors in %s, %s of tensor data\n", path, m.Source.Format(), len(tensors), plural(len(files), "file"), humanBytes(total))
	if st, err := os.Stat(path); err == nil && st.IsDir() && filepath.Clean(path) != filepath.Clean(m.Root) {
		fmt.Fprintf(w, "snapshot: %s\n", m.Root)
	}
	if m.Config.File != "" {
		fmt.Fprintf(w, "config: %s", m.Config.File)
		if arch := m.Config.Architecture(); arch != "" {
			fmt.Fprintf(w, " (%s)", arch)
		}
		fmt.Fprintln(w)
	}
	if len(tensors) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	withSum := tensors[0].SHA256 != ""
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "#\tNAME\tDTYPE\tSHAPE\tSIZE\tFILE")
	if withSum {
		fmt.Fprint(tw, "\tSHA256 (float32 LE)")
	}
	fmt.Fprintln(tw)
	for i, t := range tensors {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%s\t%s", i, t.Name, t.DType, t.Shape, humanBytes(tensorBytes(t.TensorInfo)), t.File)
		if withSum {
			fmt.Fprintf(tw, "\t%s", t.SHA256)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
