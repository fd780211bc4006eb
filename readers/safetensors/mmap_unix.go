//go:build unix

package safetensors

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole file read-only. It fails for an empty file or one
// too large for the address space; callers then read through ReadAt.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, unix.EINVAL
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error { return unix.Munmap(b) }
