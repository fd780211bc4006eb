package writer

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// createTemp creates the temporary file: an unnamed one in dir (O_TMPFILE),
// which nothing can see and the kernel frees if the process dies, else
// (a file system without O_TMPFILE, no /proc to link it through) a named
// one. name is "" for an unnamed file.
func createTemp(dir, base string) (f *os.File, name string, err error) {
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return os.NewFile(uintptr(fd), filepath.Join(dir, "."+base+".(unnamed)")), "", nil
		}
	}
	return createNamedTemp(dir, base)
}

// linkTemp gives the unnamed file f the name path; it fails if path exists.
func linkTemp(f *os.File, path string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}
