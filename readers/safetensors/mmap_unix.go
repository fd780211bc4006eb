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

var pageSize = int64(os.Getpagesize())

// releasePages tells the kernel the process is done with the pages of
// b[from:to] (the first one whole, as reads move forward; the last one only
// if it ends there): they leave the process's resident set but stay in the
// page cache, so streaming a model larger than memory keeps RSS flat. A
// later read of the same bytes faults them back in; correctness never
// depends on this.
func releasePages(b []byte, from, to int64) {
	start := from / pageSize * pageSize
	end := to / pageSize * pageSize
	if end > start {
		_ = unix.Madvise(b[start:end], unix.MADV_DONTNEED)
	}
}
