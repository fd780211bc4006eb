//go:build unix

package safetensors

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
	"golang.org/x/sys/unix"
)

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU adds the throughput per CPU-second, which a loaded machine
// disturbs less than the wall-clock MB/s.
func reportCPU(b *testing.B, size int64, start int64) {
	cpu := float64(cpuTime(b) - start)
	b.ReportMetric(float64(size)*float64(b.N)/cpu*1e3, "MB/cpu-s")
}

// writeBF16File writes a safetensors file of ntensors BF16 tensors of
// rows × cols (non-trivial bit patterns) and returns its path and size.
func writeBF16File(b *testing.B, ntensors, rows, cols int) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "model.safetensors")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	nbytes := int64(rows * cols * 2)
	hdr := map[string]any{}
	for i := range ntensors {
		hdr[fmt.Sprintf("blk.%03d.weight", i)] = map[string]any{
			"dtype": "BF16", "shape": []int{rows, cols}, "data_offsets": []int64{int64(i) * nbytes, int64(i+1) * nbytes},
		}
	}
	js, _ := json.Marshal(hdr)
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	w.Write(js)
	row := make([]byte, cols*2)
	x := uint32(12345)
	for range ntensors * rows {
		for j := 0; j < len(row); j += 2 {
			x = x*1664525 + 1013904223
			binary.LittleEndian.PutUint16(row[j:], uint16(0x3c00+(x>>20)&0x7ff)|uint16(x>>16)&0x8000)
		}
		w.Write(row)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path, int64(8+len(js)) + int64(ntensors)*nbytes
}

// BenchmarkReadBF16 reads every tensor of a 256 MiB BF16 file as float32
// rows, a few rows per call as a converter streams them, next to a plain
// sequential read of the same file into a 1 MiB buffer. Both run on a warm
// page cache; MB/s counts file bytes, MB/cpu-s the same per CPU-second.
func BenchmarkReadBF16(b *testing.B) {
	const ntensors, rows, cols = 32, 2048, 2048
	path, size := writeBF16File(b, ntensors, rows, cols)
	b.Run("sequential-read", func(b *testing.B) {
		b.SetBytes(size)
		buf := make([]byte, 1<<20)
		start := cpuTime(b)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for {
				k, err := f.Read(buf)
				n += int64(k)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
			if n != size {
				b.Fatalf("read %d of %d bytes", n, size)
			}
		}
		reportCPU(b, size, start)
	})
	for _, chunkRows := range []int{16, 256, rows} {
		// 16 rows = 128 KiB of float32 output (stays in L2), 256 rows = 2 MiB,
		// 2048 = the whole 16 MiB tensor at once.
		b.Run(fmt.Sprintf("ReadFloat32-%drows", chunkRows), func(b *testing.B) {
			b.SetBytes(size)
			dst := make([]float32, chunkRows*cols)
			ctx := context.Background()
			start := cpuTime(b)
			for b.Loop() {
				s, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				for _, t := range s.Tensors() {
					r, _ := readers.Rows(t.Shape)
					for r0 := 0; r0 < int(r); r0 += chunkRows {
						if err := s.ReadFloat32(ctx, t.Name, dst, r0, chunkRows); err != nil {
							b.Fatal(err)
						}
					}
				}
				s.Close()
			}
			reportCPU(b, size, start)
		})
	}
}
