package gguf

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this module's GGUF code wraps one of
// them, so callers branch with errors.Is.
var (
	// ErrFormat marks input that breaks a rule of the GGUF format.
	ErrFormat = errors.New("gguf: invalid file")
	// ErrTruncated marks input that ends before a declared structure does.
	ErrTruncated = errors.New("gguf: truncated file")
	// ErrTooLarge marks a declared count or length that exceeds the bytes left
	// or a hard limit.
	ErrTooLarge = errors.New("gguf: declared size too large")
	// ErrUnsupported marks valid input this code does not handle (a newer
	// version, a removed tensor type, an unknown name).
	ErrUnsupported = errors.New("gguf: unsupported")
)

// FormatError reports where a GGUF file went wrong: the file, the field (a
// key, a tensor, or a header part) and the byte offset from the start of the
// file. Err is one of the sentinels above.
type FormatError struct {
	File   string
	Field  string
	Offset int64
	Msg    string
	Err    error
}

func (e *FormatError) Error() string {
	s := e.File
	if s == "" {
		s = "gguf"
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return fmt.Sprintf("%s at offset %d: %s", s, e.Offset, e.Msg)
}

// Unwrap returns the sentinel the error wraps.
func (e *FormatError) Unwrap() error { return e.Err }
