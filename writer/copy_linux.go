package writer

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// copyFileRange copies with copy_file_range(2) at explicit offsets (so
// concurrent copies into one file are safe). It returns how much it copied
// and no error when the kernel cannot copy between these files (another
// file system on old kernels, a special file): the caller copies the rest.
var copyFileRange = func(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	var done int64
	for done < n {
		roff, woff := srcOff+done, dstOff+done
		k, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(min(n-done, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) ||
				errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EBADF) || errors.Is(err, unix.EPERM) {
				return done, nil
			}
			return done, err
		}
		if k == 0 {
			return done, nil // end of src: the buffered copy reports it
		}
		done += int64(k)
	}
	return done, nil
}

// writebackMin is the smallest range worth starting the writeback of.
const writebackMin = 1 << 20

// startWriteback asks the kernel to start writing a just-written range to
// disk (sync_file_range with SYNC_FILE_RANGE_WRITE, which does not wait for
// it), so that the disk works while the conversion goes on and Close's
// fsync finds little left to do. It is only a hint: errors are ignored and
// Close's fsync is what makes the file durable.
func startWriteback(f *os.File, off, n int64) {
	if n >= writebackMin {
		_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}
}
