//go:build unix

package requantize

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapShard maps a whole input file read-only, so that tensor bytes are
// slices of the map and their pages can be released once converted; nil
// when the file cannot be mapped (the reader's TensorData is used then).
func mapShard(path string) (data []byte, unmap func() error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil || st.Size() <= 0 || int64(int(st.Size())) != st.Size() {
		return nil, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return m, func() error { return unix.Munmap(m) }
}
