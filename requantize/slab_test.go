package requantize

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/imatrix"
	"github.com/ggufkit/ggufkit/writer"
)

// TestSlabInvariant: slabs of a row or two give llama-quantize's bytes,
// as whole tensors do (rows of 64 and 172, an imatrix per column).
func TestSlabInvariant(t *testing.T) {
	im, err := imatrix.Load(filepath.Join(stories, "quantized/imatrix.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, slab := range []int{1, 4 * 64 * 2, 4 * 172 * 3} {
		out := filepath.Join(t.TempDir(), "out.gguf")
		opts := Options{Target: target(t, "Q4_K_M"), Workers: 2, SlabBytes: slab, IMatrix: im, IMatrixFile: "imatrix.gguf"}
		if _, err := Run(context.Background(), filepath.Join(stories, "gguf/stories260K-F32.gguf"), out, opts); err != nil {
			t.Fatal(err)
		}
		sameBytes(t, out, filepath.Join(stories, "quantized/stories260K-Q4_K_M-imat.gguf"))
	}
}

// TestValidateLaterSlab: a NaN in a tensor's last slab is reported at its
// block in the whole tensor, as when the tensor is validated whole.
func TestValidateLaterSlab(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nan.gguf")
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetKV(gguf.KeyGeneralArchitecture, gguf.String("llama"))
	w.SetKV("llama.block_count", gguf.Uint32(1))
	w.AddTensor("blk.0.ffn_down.weight", gguf.F16, []uint64{256, 8})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 256*8*2)
	binary.LittleEndian.PutUint16(data[2*(7*256+3):], 0x7E00) // NaN at row 7, column 3
	if err := w.WriteTensor("blk.0.ffn_down.weight", data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, slab := range []int{0, 4 * 256} {
		_, err := Run(context.Background(), path, filepath.Join(t.TempDir(), "out.gguf"), Options{Target: target(t, "Q8_0"), SlabBytes: slab})
		if err == nil {
			t.Fatalf("slab %d: no error for a NaN input", slab)
		}
		msgs = append(msgs, err.Error())
	}
	if want := "found nan value at block 1795"; !strings.Contains(msgs[0], want) || msgs[1] != msgs[0] {
		t.Fatalf("errors %q, want both naming %q", msgs, want)
	}
}
