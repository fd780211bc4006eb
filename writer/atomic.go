package writer

import (
	"fmt"
	"os"
	"path/filepath"
)

// AtomicFile is a plain (non-GGUF) output file written under a temporary
// name beside its destination and published only by Commit, so that a
// failure or an interruption never leaves a partial file at the path.
type AtomicFile struct {
	path      string
	overwrite bool
	tmp       *os.File
	done      bool
}

// CreateAtomic starts writing path; an existing path is refused with
// ErrExists unless overwrite.
func CreateAtomic(path string, overwrite bool) (*AtomicFile, error) {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrExists, path)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.partial")
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	return &AtomicFile{path: path, overwrite: overwrite, tmp: tmp}, nil
}

// Write writes to the temporary file.
func (a *AtomicFile) Write(p []byte) (int, error) { return a.tmp.Write(p) }

// Commit syncs the file and moves it to its destination.
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("%w: %s: committed or aborted already", ErrState, a.path)
	}
	a.done = true
	err := a.tmp.Sync()
	if err == nil {
		err = a.tmp.Chmod(0o644)
	}
	if cerr := a.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = publishFile(a.tmp.Name(), a.path, a.overwrite)
	}
	if err != nil {
		os.Remove(a.tmp.Name())
		return fmt.Errorf("writer: %s: %w", a.path, err)
	}
	syncDir(filepath.Dir(a.path))
	return nil
}

// Abort removes the temporary file; after Commit it does nothing.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.tmp.Close()
	os.Remove(a.tmp.Name())
}
