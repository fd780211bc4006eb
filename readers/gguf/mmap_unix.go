//go:build unix

package ggufread

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapFile(fh *os.File, size int64) ([]byte, error) {
	if size == 0 || int64(int(size)) != size {
		return nil, unix.EINVAL
	}
	return unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error { return unix.Munmap(b) }
