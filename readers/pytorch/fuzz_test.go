package pytorch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// fuzzLimits keep every fuzz input's cost small.
var fuzzLimits = Limits{MaxPickleBytes: 1 << 20, MaxStack: 1 << 12, MaxMemo: 1 << 12, MaxDepth: 64}

// maxFuzzRead caps the elements read per input in the fuzz targets.
const maxFuzzRead = 1 << 16

// testdataFiles lists the checkpoint files under testdata smaller than max
// bytes.
func testdataFiles(f *testing.F, max int64) []string {
	f.Helper()
	var out []string
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".py") ||
			strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".safetensors") {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() <= max {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// readSome reads tensors of the list up to maxFuzzRead elements in all, to
// run the contiguous and strided paths on whatever views an input describes.
func readSome(tensors []namedTensor) {
	budget := int64(maxFuzzRead)
	for _, nt := range tensors {
		n, err := readers.NumElements(nt.t.shape)
		if err != nil || n > budget {
			continue
		}
		budget -= n
		buf := make([]byte, n*int64(nt.t.dtype.Size()))
		if nt.t.readElems(context.Background(), buf, 0, n) == nil {
			vals := make([]float32, n)
			_ = readers.ToFloat32(vals, buf, nt.t.dtype)
		}
	}
}

// FuzzUnpickle runs the restricted unpickler on arbitrary bytes, seeded with
// every data.pkl and legacy file in testdata and the hand-made pickles of
// the unit tests: it must never panic, never allocate past its limits, and
// any tensor it accepts must be readable within its storage.
func FuzzUnpickle(f *testing.F) {
	for _, p := range testdataFiles(f, 1<<20) {
		if r, err := openZipForTest(p); err == nil {
			for _, e := range r.File {
				if strings.HasSuffix(e.Name, "/data.pkl") {
					f.Add(zipPickle(f, p))
				}
			}
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(dictPickle(entry("w", pk{}.tensorV2("0", 6, 0, []int32{2, 3}, []int32{1, 2}))))
	f.Add([]byte(pk{}.global("os", "system").str("echo").op(0x85, 'R', '.')))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := unpickle(data, fuzzLimits)
		if err != nil {
			if _, ok := err.(*pickleError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		tensors, err := collectTensors("fuzz", v, fuzzLimits.withDefaults())
		if err != nil {
			return
		}
		readSome(tensors)
	})
}

// FuzzCheckpoint opens arbitrary bytes as a zip or legacy checkpoint,
// seeded with every small checkpoint in testdata, and reads what it finds.
func FuzzCheckpoint(f *testing.F) {
	for _, p := range testdataFiles(f, 64<<10) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := openReader("fuzz", bytes.NewReader(data), int64(len(data)), fuzzLimits.withDefaults())
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		readSome(file.tensors)
	})
}
