package readers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrLFSPointer is returned for a weights or tokenizer file that is a Git
// LFS pointer (the repository was cloned without fetching LFS objects).
var ErrLFSPointer = errors.New("file is a Git LFS pointer, not the real file: run `git lfs pull` in the model's repository")

// lfsPrefix starts every Git LFS pointer file (git-lfs spec, "version" line).
const lfsPrefix = "version https://git-lfs"

// IsLFSPointer reports whether b, the first bytes of a file, are those of
// a Git LFS pointer.
func IsLFSPointer(b []byte) bool { return bytes.HasPrefix(b, []byte(lfsPrefix)) }

// CheckLFSPointer returns an error wrapping ErrLFSPointer, naming path, when
// the file at path is a Git LFS pointer; nil when it is not or cannot be
// read (opening it later reports that error).
func CheckLFSPointer(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var b [len(lfsPrefix)]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return nil
	}
	if IsLFSPointer(b[:]) {
		return fmt.Errorf("%s: %w", path, ErrLFSPointer)
	}
	return nil
}
