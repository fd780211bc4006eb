//go:build unix

package writer

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockTemp takes an exclusive lock on a temporary file being written, so
// that another run does not take it for a stale one. The lock goes with the
// file's descriptor.
func lockTemp(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }

// tempInUse reports whether a live writer holds the lock on path.
func tempInUse(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
}
