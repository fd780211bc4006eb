package readers

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// memSource is an in-memory F32 (or F8_E4M3) Source with RowReader.
type memSource struct {
	infos []TensorInfo
	data  map[string][]byte
}

func (m *memSource) add(name string, dt DType, shape []int64, b []byte) {
	m.infos = append(m.infos, TensorInfo{Name: name, DType: dt, Shape: shape, File: "x.safetensors"})
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[name] = b
}

func (m *memSource) info(name string) TensorInfo {
	for _, t := range m.infos {
		if t.Name == name {
			return t
		}
	}
	return TensorInfo{}
}

func (m *memSource) Format() string        { return "mem" }
func (m *memSource) Tensors() []TensorInfo { return m.infos }
func (m *memSource) Close() error          { return nil }

func (m *memSource) ReadFloat32(_ context.Context, name string, dst []float32, row0, nrows int) error {
	t := m.info(name)
	first, count, err := RowSpan(t, len(dst), row0, nrows)
	if err != nil {
		return err
	}
	sz := int64(t.DType.Size())
	return ToFloat32(dst, m.data[name][first*sz:(first+count)*sz], t.DType)
}

func (m *memSource) VisitRows(_ context.Context, name string, row0, nrows int, fn func(int64, []byte) error) error {
	t := m.info(name)
	_, cols := Rows(t.Shape)
	sz := int64(t.DType.Size())
	return fn(0, m.data[name][int64(row0)*cols*sz:int64(row0+nrows)*cols*sz])
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TestScaled: blocks with partial edges, stacked (3-D) weights with a
// scale per matrix, per-tensor and per-row scales without blocks, each
// value float32(w) × float32(scale); VisitRows hands out the same values
// as F32 bytes; the scale tensors and activation scales are not listed.
func TestScaled(t *testing.T) {
	ctx := context.Background()
	// A 3×5 F8 weight: byte k is E4M3 0x38+k (1, 1.125, …).
	w := make([]byte, 15)
	for k := range w {
		w[k] = 0x38 + byte(k)
	}
	wv := make([]float32, 15)
	if err := ToFloat32(wv, w, F8E4M3); err != nil {
		t.Fatal(err)
	}
	w3 := append(slices.Clone(w), w...) // [2, 3, 5]
	for _, tc := range []struct {
		name   string
		block  []int64
		shape  []int64
		wbytes []byte
		sshape []int64
		scales []float32
		scale  func(r, c int64) float32 // r counts rows across matrices
	}{
		{"2x2 blocks", []int64{2, 2}, []int64{3, 5}, w, []int64{2, 3},
			[]float32{1, 2, 3, 4, 5, 6},
			func(r, c int64) float32 { return float32((r/2)*3 + c/2 + 1) }},
		{"stacked", []int64{2, 4}, []int64{2, 3, 5}, w3, []int64{2, 2, 2},
			[]float32{0.5, 0.25, 3, 7, 11, 13, 17, 19},
			func(r, c int64) float32 {
				s := []float32{0.5, 0.25, 3, 7, 11, 13, 17, 19}
				return s[(r/3)*4+((r%3)/2)*2+c/4]
			}},
		{"per tensor", nil, []int64{3, 5}, w, []int64{}, []float32{0.1},
			func(r, c int64) float32 { return 0.1 }},
		{"per row", nil, []int64{3, 5}, w, []int64{3}, []float32{0.1, 0.2, 0.3},
			func(r, c int64) float32 { return []float32{0.1, 0.2, 0.3}[r] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &memSource{}
			m.add("a.weight", F8E4M3, tc.shape, tc.wbytes)
			m.add("a.weight_scale_inv", F32, tc.sshape, f32s(tc.scales...))
			m.add("a.activation_scale", F32, []int64{}, f32s(1))
			m.add("b.weight", F32, []int64{2}, f32s(1, 2))
			src, err := NewScaled(m, tc.block)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ti := range src.Tensors() {
				names = append(names, ti.Name+":"+string(ti.DType))
			}
			if want := []string{"a.weight:F32", "b.weight:F32"}; !slices.Equal(names, want) {
				t.Fatalf("tensors %v, want %v", names, want)
			}
			rows, cols := Rows(tc.shape)
			got := make([]float32, rows*cols)
			if err := src.ReadFloat32(ctx, "a.weight", got, 0, int(rows)); err != nil {
				t.Fatal(err)
			}
			for r := range rows {
				for c := range cols {
					want := wv[(r%3)*5+c] * tc.scale(r, c)
					if math.Float32bits(got[r*cols+c]) != math.Float32bits(want) {
						t.Fatalf("[%d,%d] = %v, want %v", r, c, got[r*cols+c], want)
					}
				}
			}
			// One row at a time, from the middle.
			for r := range rows {
				row := make([]float32, cols)
				if err := src.ReadFloat32(ctx, "a.weight", row, int(r), 1); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(row, got[r*cols:(r+1)*cols]) {
					t.Fatalf("row %d alone = %v, want %v", r, row, got[r*cols:(r+1)*cols])
				}
			}
			var visited []byte
			err = src.(RowReader).VisitRows(ctx, "a.weight", 0, int(rows), func(first int64, b []byte) error {
				if first != int64(len(visited)/4) {
					t.Fatalf("piece at %d, want %d", first, len(visited)/4)
				}
				visited = append(visited, b...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := f32s(got...); !slices.Equal(visited, want) {
				t.Fatal("VisitRows differs from ReadFloat32")
			}
		})
	}
}

func TestScaledRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(m *memSource)
		block []int64
		want  string
	}{
		{"scale too large", func(m *memSource) {
			m.add("a.weight", F8E4M3, []int64{3, 5}, make([]byte, 15))
			m.add("a.weight_scale_inv", F32, []int64{3, 3}, f32s(make([]float32, 9)...))
		}, []int64{2, 2}, `scale tensor "a.weight_scale_inv" has shape [3 3], want [2 3] (blocks of 2×2) for weight "a.weight" of shape [3 5]`},
		{"scale 1-D with blocks", func(m *memSource) {
			m.add("a.weight", F8E4M3, []int64{3, 5}, make([]byte, 15))
			m.add("a.weight_scale_inv", F32, []int64{6}, f32s(make([]float32, 6)...))
		}, []int64{2, 2}, `want as many dimensions as the weight`},
		{"per-column scale", func(m *memSource) {
			m.add("a.weight", F8E4M3, []int64{3, 5}, make([]byte, 15))
			m.add("a.weight_scale_inv", F32, []int64{5}, f32s(make([]float32, 5)...))
		}, nil, `want one value or one per row`},
		{"F8 without scale", func(m *memSource) {
			m.add("a.weight", F8E4M3, []int64{3, 5}, make([]byte, 15))
		}, []int64{2, 2}, `F8_E4M3 tensor "a.weight" has no scale tensor "a.weight_scale_inv"`},
		{"orphan scale", func(m *memSource) {
			m.add("a.weight_scale_inv", F32, []int64{2, 3}, f32s(make([]float32, 6)...))
		}, []int64{2, 2}, `scale tensor "a.weight_scale_inv" has no weight "a.weight"`},
		{"bad block", func(m *memSource) {}, []int64{128}, `weight_block_size [128] is not two positive sizes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &memSource{}
			tc.build(m)
			_, err := NewScaled(m, tc.block)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrScale) {
				t.Errorf("error %v, want ErrScale containing %q", err, tc.want)
			}
		})
	}
}
