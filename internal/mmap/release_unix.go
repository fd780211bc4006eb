//go:build unix

package mmap

import "golang.org/x/sys/unix"

// Release tells the kernel the process is done with m[from:to], widened to
// whole folios (FolioSize, aligned in the mapping, which starts on a folio
// boundary of the file since it maps from offset 0): the pages leave the
// resident set but stay in the page cache. Pages of a neighbouring range
// that another reader is using are released too; that reader faults them
// back in from the page cache, so correctness never depends on this.
func Release(m []byte, from, to int64) {
	start := max(0, from/FolioSize*FolioSize)
	end := min(int64(len(m)), (to+FolioSize-1)/FolioSize*FolioSize)
	if end > start {
		_ = unix.Madvise(m[start:end], unix.MADV_DONTNEED)
	}
}
