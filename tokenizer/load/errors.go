package load

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error this package returns wraps one of them, so
// callers branch with errors.Is.
var (
	// ErrFormat marks a tokenizer file that is malformed: bad JSON, a bad
	// protobuf, a wrong value type, an id out of range.
	ErrFormat = errors.New("load: malformed tokenizer file")
	// ErrNotFound marks a tokenizer file a vocabulary style needs but the
	// folder lacks. The converter's set_vocab falls back to another style on
	// it (FileNotFoundError in convert_hf_to_gguf).
	ErrNotFound = errors.New("load: tokenizer file not found")
	// ErrUnsupported marks a valid tokenizer this package does not handle
	// (an unknown vocabulary style, model type or decoder).
	ErrUnsupported = errors.New("load: unsupported tokenizer")
	// ErrTooLarge marks a file over Options.MaxFileSize.
	ErrTooLarge = errors.New("load: tokenizer file too large")
	// ErrUnknownPre marks a BPE or WordPiece tokenizer whose pre-tokenizer
	// matches no entry of the identification table. It is always wrapped in
	// an *UnknownPreError.
	ErrUnknownPre = errors.New("load: unknown pre-tokenizer")
)

// FileError reports where a tokenizer file went wrong: the file, the field
// (a JSON key path, a protobuf field, a line) and, for binary files, the
// byte offset (-1 when it does not apply). Err is one of the sentinels.
type FileError struct {
	File   string
	Field  string
	Offset int64
	Msg    string
	Err    error
}

// Error formats the file, the field, the offset and the message.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the sentinel the error wraps.
func (e *FileError) Unwrap() error { return e.Err }

// errorf builds a *FileError without a byte offset.
func errorf(sentinel error, file, field, format string, args ...any) error {
	return &FileError{File: file, Field: field, Offset: -1, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// notFound is the error for a folder that lacks the file(s) a routine
// looks for, naming each.
func notFound(f *folder, names ...string) error {
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = f.path(n)
	}
	return fmt.Errorf("%w: looked for %s", ErrNotFound, strings.Join(paths, ", "))
}

// isNotFound reports whether err is ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// UnknownPreError reports a tokenizer whose pre-tokenizer could not be
// identified. Signature is the canonical description of its normalizer,
// pre-tokenizer and model that the identification table is matched
// against; Candidates are the names whose structure matched but whose
// vocabulary check failed (empty when no structure matched). Pass a name
// with Options.Pre (the CLI's --tokenizer-pre) to convert anyway.
type UnknownPreError struct {
	Signature  string
	Candidates []string
	// Hashes are the converter's pre-tokenizer hashes computed for the
	// tokenizer (one per pre-tokenizer its structure calls for), none of
	// them in llama.cpp's table.
	Hashes []string
}

// Error names the signature seen, the candidates and the hashes, and
// says how to convert anyway.
func (e *UnknownPreError) Error() string {
	msg := "load: unknown pre-tokenizer " + e.Signature
	if len(e.Candidates) > 0 {
		msg += " (its structure is that of " + strings.Join(e.Candidates, ", ") + " but the vocabulary differs)"
	}
	if len(e.Hashes) > 0 {
		msg += "; its llama.cpp pre-tokenizer hash " + strings.Join(e.Hashes, ", ") + " is in no table"
	}
	return msg + "; name it with --tokenizer-pre"
}

// Unwrap returns ErrUnknownPre.
func (e *UnknownPreError) Unwrap() error { return ErrUnknownPre }
