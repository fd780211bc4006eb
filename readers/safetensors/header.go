// Package safetensors reads Hugging Face safetensors checkpoints: one file,
// a sharded set named by model.safetensors.index.json, or every
// *.safetensors file of a folder. Files are memory-mapped where the OS
// allows it (read through io.ReaderAt otherwise) and validated the way the
// reference implementation (huggingface/safetensors, tensor.rs) does before
// any tensor is read.
package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ggufkit/ggufkit/readers"
)

// MaxHeaderSize is the largest JSON header accepted, in bytes: the
// reference implementation's MAX_HEADER_SIZE (100 000 000).
const MaxHeaderSize = 100_000_000

// Sentinel errors; every error this package returns for bad input wraps one
// of them inside an *Error.
var (
	// ErrFormat: the file is not a valid safetensors file.
	ErrFormat = errors.New("safetensors: invalid file")
	// ErrHeaderTooLarge: the declared header length exceeds MaxHeaderSize.
	ErrHeaderTooLarge = errors.New("safetensors: header too large")
	// ErrIndex: a sharded set's index and its shards disagree.
	ErrIndex = errors.New("safetensors: index does not match the shards")
	// ErrNoFiles: a folder holds no safetensors file.
	ErrNoFiles = errors.New("safetensors: no .safetensors file")
)

// Error describes a problem in one file, with the tensor and the byte
// offset where it was found when they are known.
type Error struct {
	File   string // path of the file
	Tensor string // tensor name, "" when the problem is not about one tensor
	Offset int64  // byte offset in the file, -1 when not meaningful
	Msg    string
	Err    error // ErrFormat, ErrHeaderTooLarge, ErrIndex or an I/O error
}

// Error formats the error as "safetensors: FILE: tensor \"NAME\": offset N: what".
func (e *Error) Error() string {
	s := "safetensors: " + e.File
	if e.Tensor != "" {
		s += ": tensor " + strconv.Quote(e.Tensor)
	}
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	s += ": " + e.Msg
	if e.Err != nil && !isSentinel(e.Err) {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel or I/O error behind e.
func (e *Error) Unwrap() error { return e.Err }

func isSentinel(err error) bool {
	return err == ErrFormat || err == ErrHeaderTooLarge || err == ErrIndex || err == ErrNoFiles
}

// Header is a parsed and validated safetensors header.
type Header struct {
	// Len is the JSON header's length N in bytes; tensor data starts at
	// byte 8+N of the file.
	Len int64
	// Metadata is the free-form __metadata__ map, nil when absent.
	Metadata map[string]string
	// Tensors in data order (sorted by data offsets).
	Tensors []Entry
}

// DataStart returns the file offset of the first tensor byte.
func (h *Header) DataStart() int64 { return 8 + h.Len }

// Entry is one tensor of a header.
type Entry struct {
	Name  string
	DType readers.DType
	// Shape in PyTorch order, each dimension ≥ 0.
	Shape []int64
	// Begin and End are the data_offsets, relative to DataStart.
	Begin, End int64
}

// ReadHeader reads and validates the header of a safetensors file of the
// given size read through r; name is used in errors. It checks what the
// reference implementation checks — a header length ≤ MaxHeaderSize that
// fits the file, UTF-8 JSON whose top level is an object, known dtypes,
// dtype size × element count = byte length, data offsets that start at 0
// and are contiguous (no gap, no overlap) once sorted, and a file that ends
// exactly where the last tensor does — and also rejects duplicate names
// and trailing non-whitespace after the JSON object. Nothing is allocated
// from a declared length before that length is checked against size.
func ReadHeader(r io.ReaderAt, size int64, name string) (*Header, error) {
	fail := func(off int64, err error, format string, args ...any) error {
		return &Error{File: name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	if size < 8 {
		return nil, fail(0, ErrFormat, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if k, err := r.ReadAt(lenBuf[:], 0); k < len(lenBuf) {
		return nil, fail(0, err, "reading the header length")
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fail(0, ErrHeaderTooLarge, "header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fail(0, ErrFormat, "header length %d runs past the end of the %d-byte file", n, size)
	}
	js := make([]byte, n)
	if k, err := r.ReadAt(js, 8); k < len(js) {
		return nil, fail(8, err, "reading the %d-byte header", n)
	}
	h, err := parseJSON(js, name)
	if err != nil {
		return nil, err
	}
	h.Len = int64(n)
	if err := h.validate(size, name); err != nil {
		return nil, err
	}
	return h, nil
}

// parseJSON decodes the header JSON token by token so that duplicate names
// are seen and every error can name the tensor and its offset.
func parseJSON(js []byte, name string) (*Header, error) {
	fail := func(off int64, tensor, format string, args ...any) error {
		return &Error{File: name, Tensor: tensor, Offset: 8 + off, Msg: fmt.Sprintf(format, args...), Err: ErrFormat}
	}
	if !utf8.Valid(js) {
		off := 0
		for off < len(js) {
			r, sz := utf8.DecodeRune(js[off:])
			if r == utf8.RuneError && sz <= 1 {
				break
			}
			off += sz
		}
		return nil, fail(int64(off), "", "header is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fail(se.Offset, "", "header is not valid JSON: %v", err)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fail(int64(len(js)), "", "header JSON ends early")
		}
		return fail(dec.InputOffset(), "", "header is not valid JSON: %v", err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fail(0, "", "header is not a JSON object")
	}
	h := &Header{}
	seen := make(map[string]bool)
	for dec.More() {
		pos := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fail(pos, "", "header object key is not a string")
		}
		if seen[key] {
			return nil, fail(pos, key, "duplicate name in header")
		}
		seen[key] = true
		if key == "__metadata__" {
			var m map[string]string
			if err := dec.Decode(&m); err != nil {
				return nil, fail(pos, "", "__metadata__ must map strings to strings: %v", err)
			}
			h.Metadata = m
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		e, err := parseEntry(raw)
		if err != nil {
			return nil, fail(pos, key, "%v", err)
		}
		e.Name = key
		h.Tensors = append(h.Tensors, e)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntax(err)
	}
	// The reference parses with serde_json::from_str, which allows only
	// whitespace after the value (writers pad the header with spaces).
	end := dec.InputOffset()
	if i := bytes.IndexFunc(js[end:], func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
		return nil, fail(end+int64(i), "", "trailing bytes after the header JSON")
	}
	return h, nil
}

// parseEntry checks one tensor entry and converts it. Field names match
// exactly (encoding/json would match them case-insensitively) and a
// repeated field is an error, as with the reference's serde structs;
// unknown fields are ignored, as there.
func parseEntry(raw json.RawMessage) (Entry, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return e, errors.New("invalid entry: not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return e, fmt.Errorf("invalid entry: %v", err)
		}
		k, _ := tok.(string)
		if _, dup := fields[k]; dup {
			return e, fmt.Errorf("invalid entry: duplicate field %q", k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return e, fmt.Errorf("invalid entry: %v", err)
		}
		fields[k] = v
	}
	var dtype string
	var shape, offsets []uint64
	for _, f := range []struct {
		name string
		dst  any
	}{{"dtype", &dtype}, {"shape", &shape}, {"data_offsets", &offsets}} {
		v, ok := fields[f.name]
		if !ok || string(v) == "null" {
			return e, fmt.Errorf("missing %q", f.name)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return e, fmt.Errorf("invalid entry: %q: %v", f.name, err)
		}
	}
	dt, err := readers.ParseDType(dtype)
	if err != nil {
		return e, fmt.Errorf("unknown dtype %q", dtype)
	}
	e.DType = dt
	if len(offsets) != 2 {
		return e, fmt.Errorf("data_offsets has %d numbers, want 2", len(offsets))
	}
	begin, end := offsets[0], offsets[1]
	if begin > 1<<62 || end > 1<<62 {
		return e, fmt.Errorf("data_offsets [%d, %d] out of range", begin, end)
	}
	if end < begin {
		return e, fmt.Errorf("data_offsets [%d, %d] end before they begin", begin, end)
	}
	e.Begin, e.End = int64(begin), int64(end)
	e.Shape = make([]int64, len(shape))
	nelem := uint64(1)
	for i, d := range shape {
		// Multiply left to right and fail on any overflow, as the
		// reference's checked_mul fold does.
		hi, lo := bits.Mul64(nelem, d)
		if hi != 0 || lo > 1<<62 {
			return e, fmt.Errorf("element count of shape %v overflows", shape)
		}
		nelem = lo
		e.Shape[i] = int64(d)
	}
	hi, nbytes := bits.Mul64(nelem, uint64(dt.Size()))
	if hi != 0 || nbytes != end-begin {
		return e, fmt.Errorf("dtype %s × shape %v is %d elements of %d bytes but data_offsets [%d, %d] span %d bytes", dt, shape, nelem, dt.Size(), begin, end, end-begin)
	}
	return e, nil
}

// validate sorts the entries by data offsets and checks that they tile the
// data region [0, size-DataStart) exactly.
func (h *Header) validate(size int64, name string) error {
	slices.SortFunc(h.Tensors, func(a, b Entry) int {
		if c := cmp.Compare(a.Begin, b.Begin); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name) // empty tensors share offsets
	})
	dataLen := size - h.DataStart()
	var prev int64
	prevName := ""
	for _, e := range h.Tensors {
		switch {
		case e.Begin < prev:
			return &Error{File: name, Tensor: e.Name, Offset: h.DataStart() + e.Begin, Err: ErrFormat,
				Msg: fmt.Sprintf("data_offsets [%d, %d] overlap tensor %q, which ends at %d", e.Begin, e.End, prevName, prev)}
		case e.Begin > prev:
			return &Error{File: name, Tensor: e.Name, Offset: h.DataStart() + prev, Err: ErrFormat,
				Msg: fmt.Sprintf("data_offsets [%d, %d] leave a %d-byte gap after the previous tensor's end %d", e.Begin, e.End, e.Begin-prev, prev)}
		case e.End > dataLen:
			return &Error{File: name, Tensor: e.Name, Offset: h.DataStart() + e.Begin, Err: ErrFormat,
				Msg: fmt.Sprintf("data_offsets [%d, %d] run past the end of the file (%d data bytes after the header; truncated?)", e.Begin, e.End, dataLen)}
		}
		prev, prevName = e.End, e.Name
	}
	if prev != dataLen {
		return &Error{File: name, Offset: h.DataStart() + prev, Err: ErrFormat,
			Msg: fmt.Sprintf("%d bytes after the last tensor's data (the file must end where the last tensor does)", dataLen-prev)}
	}
	return nil
}
