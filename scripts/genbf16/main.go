// Command genbf16 writes a large BF16 safetensors file shaped like a model's
// weights, for the reader benchmarks (scripts/bench-readers.sh):
//
//	go run ./scripts/genbf16 -o /tmp/model.safetensors -mib 2048
//
// The file holds ⌈mib / tensor size⌉ tensors of rows × cols BF16 values
// ("model.layers.N.weight"), deterministic pseudo-random values of normal
// magnitude (|x| in [2^-7, 2^9), both signs), so the float32 conversion
// does real work and the digests are reproducible.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
)

// maxMiB caps -mib: the benchmark needs a few GiB, not the whole disk.
const maxMiB = 64 << 10

func main() {
	out := flag.String("o", "", "output `FILE` (required)")
	mib := flag.Int("mib", 1024, "approximate size in MiB (whole tensors)")
	rows := flag.Int("rows", 4096, "rows per tensor")
	cols := flag.Int("cols", 4096, "values per row")
	flag.Parse()
	if err := run(*out, *mib, *rows, *cols); err != nil {
		fmt.Fprintln(os.Stderr, "genbf16:", err)
		os.Exit(1)
	}
}

func run(path string, mib, rows, cols int) error {
	switch {
	case path == "":
		return errors.New("-o FILE is required")
	case mib <= 0 || mib > maxMiB:
		return fmt.Errorf("-mib %d: want 1…%d", mib, maxMiB)
	case rows <= 0 || cols <= 0 || cols%4 != 0 || rows > 1<<20 || cols > 1<<20:
		return fmt.Errorf("-rows %d -cols %d: want 1…2^20 rows and a multiple of 4 up to 2^20 columns", rows, cols)
	}
	tensorBytes := int64(rows) * int64(cols) * 2
	n := int((int64(mib)<<20 + tensorBytes - 1) / tensorBytes)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, n, rows, cols); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// write writes the header (8-byte length, JSON padded with spaces to a
// multiple of 8 as the safetensors library does) and n tensors' data.
func write(f *os.File, n, rows, cols int) error {
	tensorBytes := int64(rows) * int64(cols) * 2
	hdr := make(map[string]any, n+1)
	hdr["__metadata__"] = map[string]string{"format": "pt", "generator": "ggufkit scripts/genbf16"}
	for i := range n {
		hdr[fmt.Sprintf("model.layers.%d.weight", i)] = map[string]any{
			"dtype":        "BF16",
			"shape":        []int{rows, cols},
			"data_offsets": []int64{int64(i) * tensorBytes, int64(i+1) * tensorBytes},
		}
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	w := bufio.NewWriterSize(f, 4<<20)
	w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	w.Write(js)
	row := make([]byte, 2*cols)
	x := uint64(0x9E3779B97F4A7C15)
	for range n * rows {
		for j := 0; j < len(row); j += 8 {
			// xorshift64: four values per step.
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := range 4 {
				binary.LittleEndian.PutUint16(row[j+2*k:], bf16(uint16(x>>(16*k))))
			}
		}
		if _, err := w.Write(row); err != nil {
			return err
		}
	}
	return w.Flush()
}

// bf16 makes a BF16 value from 16 random bits: their sign and 7 mantissa
// bits, and a biased exponent of 120…135 (|x| in [2^-7, 2^9)).
func bf16(r uint16) uint16 {
	return r&0x8000 | (120+(r>>7)&15)<<7 | r&0x7F
}
