package writer

import (
	"fmt"
	"io"
	"os"
)

// CopyFrom copies n bytes of src, from srcOff on, into the tensor's data at
// off: in the kernel where the system can (copy_file_range on Linux, which
// may share the blocks or copy them inside the page cache), else through a
// buffer. src is only read at explicit offsets. Like WriteAt it is safe for
// concurrent use and counts towards the tensor's bytes written.
func (tw *TensorWriter) CopyFrom(src *os.File, srcOff, off, n int64) error {
	if off < 0 || n < 0 || srcOff < 0 || uint64(off)+uint64(n) > tw.t.size {
		return fmt.Errorf("writer: tensor %q: copy of %d bytes at %d exceeds its %d bytes", tw.t.info.Name, n, off, tw.t.size)
	}
	if err := tw.w.failed(); err != nil {
		return err
	}
	dst := tw.w.dataOffset + int64(tw.t.info.Offset) + off
	done, err := copyFileRange(tw.w.tmp, dst, src, srcOff, n)
	if err == nil && done < n {
		// No kernel copy here (or it stopped short): the rest through a buffer.
		var k int64
		k, err = copyBuffered(tw.w.tmp, dst+done, src, srcOff+done, n-done)
		done += k
	}
	tw.t.written.Add(uint64(done))
	if err == nil {
		startWriteback(tw.w.tmp, dst, done)
	}
	if err != nil {
		err = fmt.Errorf("writer: %s: tensor %q at offset %d: copying from %s: %w", tw.w.path, tw.t.info.Name, off, src.Name(), err)
		tw.w.abort(err)
	}
	return err
}

// copyBuffered copies n bytes from src at srcOff to dst at dstOff with
// pread/pwrite through a 1 MiB buffer.
func copyBuffered(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (int64, error) {
	buf := make([]byte, min(n, 1<<20))
	var done int64
	for done < n {
		b := buf[:min(int64(len(buf)), n-done)]
		k, err := src.ReadAt(b, srcOff+done)
		if k < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		if _, err := dst.WriteAt(b, dstOff+done); err != nil {
			return done, err
		}
		done += int64(k)
	}
	return done, nil
}
