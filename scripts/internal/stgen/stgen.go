// Package stgen holds what the benchmark model generators under scripts/
// share: writing a safetensors file whose data they stream, and copying
// tokenizer files.
package stgen

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
)

// Tensor is one entry of a safetensors header.
type Tensor struct {
	Name, DType string
	Shape       []int
}

// Bytes is the tensor's data size.
func (t Tensor) Bytes() int64 {
	n := int64(map[string]int{"F64": 8, "I64": 8, "F32": 4, "I32": 4, "BF16": 2, "F16": 2}[t.DType])
	if n == 0 {
		n = 1 // F8_E4M3, I8, U8 …
	}
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Write writes path: the header of ts (data in their order, the JSON
// padded with spaces to a multiple of 8 as the safetensors library does,
// meta as __metadata__), then the data, which body writes to w — exactly
// the sum of the tensors' sizes.
func Write(path string, meta map[string]string, ts []Tensor, body func(w io.Writer) error) error {
	hdr := map[string]any{"__metadata__": meta}
	var off int64
	for _, t := range ts {
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": []int64{off, off + t.Bytes()}}
		off += t.Bytes()
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	w.Write(js)
	if err := body(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// CopyFile copies src to dst.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
