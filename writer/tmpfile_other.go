//go:build !linux

package writer

import (
	"errors"
	"os"
)

// createTemp creates the named temporary file beside the destination.
func createTemp(dir, base string) (f *os.File, name string, err error) {
	return createNamedTemp(dir, base)
}

// linkTemp is never called: every temporary file here has a name.
func linkTemp(*os.File, string) error { return errors.ErrUnsupported }
