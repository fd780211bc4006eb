package verify

import (
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// TestStoredFinite checks storedFinite against decoding: random blocks (so
// random scales, a few of them Inf or NaN), blocks with one non-finite
// scale among finite ones, and extreme finite scales.
func TestStoredFinite(t *testing.T) {
	types := []gguf.Type{gguf.F32, gguf.BF16}
	for ty := range storedScales {
		types = append(types, ty)
	}
	rng := rand.New(rand.NewPCG(18, 1))
	for _, ty := range types {
		t.Run(ty.String(), func(t *testing.T) {
			const ne0 = 256
			size, err := quantize.RowSize(ty, ne0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				rows := 1 + i%3
				data := make([]byte, rows*size)
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				tame(ty, data, i, rng)
				got, known := storedFinite(ty, data)
				if !known {
					t.Fatal("type not judged")
				}
				vals := make([]float32, rows*ne0)
				if err := quantize.Decode(ty, vals, data, ne0); err != nil {
					t.Fatal(err)
				}
				if want := firstNonFinite(vals) < 0; got != want {
					t.Fatalf("case %d: storedFinite %v, decoded values finite %v", i, got, want)
				}
			}
		})
	}
}

// tame makes the stored floats of data finite for two cases in three
// (extreme ones every sixth case), then puts one non-finite float back for
// one of those cases in two.
func tame(ty gguf.Type, data []byte, i int, rng *rand.Rand) {
	if i%3 == 0 {
		return // random bytes as they come
	}
	fix16 := func(b []byte, exp uint16) {
		h := uint16(b[0]) | uint16(b[1])<<8
		h = h&^0x7C00 | exp<<10
		b[0], b[1] = byte(h), byte(h>>8)
	}
	exp := func() uint16 {
		if i%6 == 1 {
			return 30 // the largest finite fp16 exponent
		}
		return uint16(rng.IntN(31))
	}
	var fields []int // offsets of the stored floats
	width := 2
	switch ty {
	case gguf.F32:
		width = 4
		for o := 0; o < len(data); o += 4 {
			data[o+3] &^= 0x40 // exponent below all-ones
			fields = append(fields, o)
		}
	case gguf.BF16:
		for o := 0; o < len(data); o += 2 {
			data[o+1] &^= 0x40
			fields = append(fields, o)
		}
	default:
		s := storedScales[ty]
		for b := 0; b < len(data); b += s.bytes {
			for _, o := range s.f16 {
				fix16(data[b+o:], exp())
				fields = append(fields, b+o)
			}
		}
	}
	if i%2 == 0 {
		o := fields[rng.IntN(len(fields))]
		switch width {
		case 4:
			data[o+3] |= 0x7F
			data[o+2] |= 0x80
		default:
			if ty == gguf.BF16 {
				data[o+1] |= 0x7F
				data[o] |= 0x80
			} else {
				fix16(data[o:], 31)
			}
		}
	}
}
