package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/quantize"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/safetensors"
)

// TestDirectMatchesFloat32: every direct conversion gives the bytes of the
// float32 route (readers.ToFloat32, then quantize.Encode) for every 16-bit
// source pattern, and for float32 edge cases and random patterns; a
// non-finite value is refused by both, at the same index.
func TestDirectMatchesFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for key, d := range directConversions {
		t.Run(fmt.Sprintf("%s-%s", key.from, key.to), func(t *testing.T) {
			var src []byte
			if key.from.Size() == 2 {
				src = make([]byte, 2<<16)
				for v := range 1 << 16 {
					binary.LittleEndian.PutUint16(src[2*v:], uint16(v))
				}
			} else {
				for _, b := range []uint32{0, 0x80000000, 1, 0x807FFFFF, 0x7F7FFFFF, 0x477FF000, 0x477FEFFF, 0x33000001, 0x7F800000, 0x7FC00001, 0xFF800000} {
					src = binary.LittleEndian.AppendUint32(src, b)
				}
				for range 1 << 16 {
					src = binary.LittleEndian.AppendUint32(src, rng.Uint32())
				}
			}
			size := key.from.Size()
			n := len(src) / size
			// Compare value by value: the float32 route refuses a row with a
			// non-finite value, so feed it one value at a time.
			out := make([]byte, n*key.to.TypeSize())
			d.conv(out, src)
			// A length that is not a multiple of the fast paths' 8 bytes
			// gives the same values (the tail loop).
			if key.from.Size() == 2 {
				short := make([]byte, (n-3)*key.to.TypeSize())
				d.conv(short, src[:2*(n-3)])
				if !bytes.Equal(short, out[:len(short)]) {
					t.Fatal("a short buffer converts differently")
				}
			}
			f := make([]float32, 1)
			want := make([]byte, key.to.TypeSize())
			for i := range n {
				one := src[i*size : (i+1)*size]
				if err := readers.ToFloat32(f, one, key.from); err != nil {
					t.Fatal(err)
				}
				err := quantize.Encode(key.to, want, f, 1, nil)
				stored := firstNonFiniteStored(one, key.from) == 0
				if (err != nil) != stored || (err != nil && !errors.Is(err, quantize.ErrNonFinite)) {
					t.Fatalf("value %#x: float32 route error %v, direct check says non-finite %v", one, err, stored)
				}
				if err == nil && !bytes.Equal(out[i*len(want):(i+1)*len(want)], want) {
					t.Fatalf("value %#x: direct %x, float32 route %x", one, out[i*len(want):(i+1)*len(want)], want)
				}
			}
		})
	}
}

// TestFirstNonFiniteStored finds the first NaN or infinity wherever it is
// in a group, for each stored dtype.
func TestFirstNonFiniteStored(t *testing.T) {
	for _, tc := range []struct {
		dt  readers.DType
		bad uint32
	}{{readers.F32, 0x7F800000}, {readers.F32, 0xFFC00000}, {readers.F16, 0x7C00}, {readers.F16, 0xFE01}, {readers.BF16, 0x7F80}, {readers.BF16, 0xFFC1}} {
		for _, at := range []int{-1, 0, 5, 15, 16, 31, 40} {
			t.Run(fmt.Sprintf("%s-%#x-%d", tc.dt, tc.bad, at), func(t *testing.T) {
				const n = 41
				src := make([]byte, n*tc.dt.Size())
				for i := range n {
					v := uint32(math.Float32bits(float32(i) - 20))
					if tc.dt != readers.F32 {
						v = uint32(quantize.FP32ToBF16(float32(i) - 20))
						if tc.dt == readers.F16 {
							v = uint32(quantize.FP32ToFP16(float32(i) - 20))
						}
					}
					if i == at {
						v = tc.bad
					}
					if tc.dt == readers.F32 {
						binary.LittleEndian.PutUint32(src[4*i:], v)
					} else {
						binary.LittleEndian.PutUint16(src[2*i:], uint16(v))
					}
				}
				if got := firstNonFiniteStored(src, tc.dt); got != at {
					t.Errorf("first non-finite at %d, want %d", got, at)
				}
			})
		}
	}
}

// TestDirectRefusesNonFinite: a NaN or infinity in a BF16 checkpoint is
// refused with its tensor, row and column by each route (kernel copy to
// BF16, table to F16, widening to F32, float32 route to Q8_0, one-pass
// Q4_K_M; for a permuted Q projection the stored rows converted in the
// permuted order), and no output or temporary file is left behind. A
// permuted tensor reports the row of the output, as the float32 route does.
func TestDirectRefusesNonFinite(t *testing.T) {
	m := loadFixture(t, filepath.Join(fixtures, "llama3tied"))
	for _, tc := range []struct {
		source, gguf   string
		cols, row, col int64
		wantRow        int64
	}{
		{"model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight", 128, 1, 3, 1},
		// 4 heads of 16 rows: source row 1 (head 0, first half, pair 1) is
		// output row 2 after the rotary interleaving.
		{"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", 64, 1, 3, 2},
	} {
		for _, bad := range []uint16{0x7FC0, 0xFF80} {
			src := assemble(t, filepath.Join(fixtures, "llama3tied"), m, false)
			st := filepath.Join(src, "model.safetensors")
			f, err := safetensors.OpenFile(st)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := f.Entry(tc.source)
			off := f.Header().DataStart() + e.Begin + 2*(tc.row*tc.cols+tc.col)
			f.Close()
			data, err := os.ReadFile(st)
			if err != nil {
				t.Fatal(err)
			}
			binary.LittleEndian.PutUint16(data[off:], bad)
			if err := os.WriteFile(st, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, outtype := range []string{"bf16", "f16", "f32", "q8_0", "Q4_K_M"} {
				t.Run(fmt.Sprintf("%s/%#x/%s", tc.gguf, bad, outtype), func(t *testing.T) {
					dir := t.TempDir()
					_, err := Run(context.Background(), src, Options{OutType: outtype, OutFile: filepath.Join(dir, "out.gguf")})
					at := fmt.Sprintf("row %d, column %d", tc.wantRow, tc.col)
					if !errors.Is(err, quantize.ErrNonFinite) || !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), tc.gguf) {
						t.Fatalf("error %v, want a non-finite value in %s at %s", err, tc.gguf, at)
					}
					if left, _ := os.ReadDir(dir); len(left) != 0 {
						t.Errorf("left behind: %v", left)
					}
				})
			}
		}
	}
}
