//go:build !unix

package safetensors

import (
	"errors"
	"os"
)

// mapFile is unavailable on this OS: files are read through ReadAt.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }
