package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// fp8Tensor is one tensor of an FP8 test checkpoint: F8_E4M3 bytes, or
// F32 values.
type fp8Tensor struct {
	name  string
	dtype string
	shape []int64
	f8    []byte
	f32   []float32
}

func fp8SafetensorsFile(ts []fp8Tensor) []byte {
	hdr := map[string]any{}
	var data []byte
	for _, t := range ts {
		begin := len(data)
		if t.dtype == "F8_E4M3" {
			data = append(data, t.f8...)
		} else {
			for _, v := range t.f32 {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			}
		}
		for len(data)%4 != 0 && t.dtype != "F8_E4M3" {
			data = append(data, 0)
		}
		hdr[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{begin, len(data)}}
	}
	h, _ := json.Marshal(hdr)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// fp8Block is the test checkpoints' weight_block_size.
const fp8Block = 8

// fp8Model returns the tensors of tinyLlamaConfig's model with every
// projection stored as F8_E4M3 with a weight_scale_inv per 8×8 block
// (edit may change them), and the same model dequantized, all F32.
func fp8Model(edit func([]fp8Tensor) []fp8Tensor) (quant, plain []fp8Tensor) {
	for i, st := range tinyLlamaTensors() {
		n := int64(1)
		for _, d := range st.shape {
			n *= d
		}
		if !strings.Contains(st.name, "_proj.") {
			v := make([]float32, n)
			for k := range v {
				v[k] = float32((int64(i)+int64(k))%7)*0.01 + 0.001
			}
			quant = append(quant, fp8Tensor{name: st.name, dtype: "F32", shape: st.shape, f32: v})
			plain = append(plain, fp8Tensor{name: st.name, dtype: "F32", shape: st.shape, f32: v})
			continue
		}
		rows, cols := st.shape[0], st.shape[1]
		nr, nc := (rows+fp8Block-1)/fp8Block, (cols+fp8Block-1)/fp8Block
		f8 := make([]byte, n)
		for k := range f8 {
			// Any E4M3 value but NaN (0x7f, 0xff).
			f8[k] = byte((k*37 + i*11) % 0x7f)
			if k%3 == 0 {
				f8[k] |= 0x80
			}
		}
		scale := make([]float32, nr*nc)
		for k := range scale {
			scale[k] = float32(k%5+1) * 0.0013
		}
		vals := make([]float32, n)
		if err := readers.ToFloat32(vals, f8, readers.F8E4M3); err != nil {
			panic(err)
		}
		for r := range rows {
			for c := range cols {
				vals[r*cols+c] *= scale[(r/fp8Block)*nc+c/fp8Block]
			}
		}
		quant = append(quant,
			fp8Tensor{name: st.name, dtype: "F8_E4M3", shape: st.shape, f8: f8},
			fp8Tensor{name: st.name + "_scale_inv", dtype: "F32", shape: []int64{nr, nc}, f32: scale})
		plain = append(plain, fp8Tensor{name: st.name, dtype: "F32", shape: st.shape, f32: vals})
	}
	if edit != nil {
		quant = edit(quant)
	}
	return quant, plain
}

var fp8Config = strings.Replace(tinyLlamaConfig, `"tie_word_embeddings":true`,
	`"tie_word_embeddings":true,"quantization_config":{"activation_scheme":"dynamic","fmt":"e4m3","quant_method":"fp8","weight_block_size":[8,8]}`, 1)

func fp8Folder(t *testing.T, config string, ts []fp8Tensor) string {
	t.Helper()
	dir := modelFolder(t, config, nil)
	write(t, dir, "model.safetensors", string(fp8SafetensorsFile(ts)))
	return dir
}

// TestFP8Dequantized: a checkpoint of F8_E4M3 weights with block scales
// converts to the bytes of the same model stored dequantized (each value
// float32(w) × float32(scale of its 8×8 block), the partial blocks at the
// edges included), for every converter type and a one-pass preset.
func TestFP8Dequantized(t *testing.T) {
	quant, plain := fp8Model(nil)
	qdir := fp8Folder(t, fp8Config, quant)
	pdir := fp8Folder(t, tinyLlamaConfig, plain)
	for _, typ := range []string{"f32", "f16", "bf16", "q8_0", "Q4_K_M"} {
		t.Run(typ, func(t *testing.T) {
			got := convertTo(t, qdir, Options{OutType: typ})
			want := convertTo(t, pdir, Options{OutType: typ})
			a, _ := os.ReadFile(got)
			b, _ := os.ReadFile(want)
			if !bytes.Equal(a, b) {
				t.Errorf("FP8 checkpoint differs from its dequantized copy: %s", firstDifference(t, got, want))
			}
		})
	}
}

// TestFP8HostileScales: a scale tensor of the wrong shape, a weight
// without its scale (or a scale without its weight), and a scale that is
// not finite are refused with an error naming the tensor, by every mode,
// leaving no output file (convertModes checks).
func TestFP8HostileScales(t *testing.T) {
	find := func(ts []fp8Tensor, name string) int {
		for i, x := range ts {
			if x.name == name {
				return i
			}
		}
		panic(name)
	}
	const q = "model.layers.0.self_attn.q_proj.weight"
	const down = "model.layers.0.mlp.down_proj.weight"
	for _, tc := range []struct {
		name   string
		config string
		edit   func([]fp8Tensor) []fp8Tensor
		want   string
		atRead bool
	}{
		{"wrong shape", fp8Config, func(ts []fp8Tensor) []fp8Tensor {
			i := find(ts, down+"_scale_inv")
			ts[i].shape = []int64{2, 2}
			ts[i].f32 = ts[i].f32[:4]
			return ts
		}, `scale tensor "` + down + `_scale_inv" has shape [2 2], want [2 4] (blocks of 8×8) for weight "` + down + `"`, false},
		{"missing scale", fp8Config, func(ts []fp8Tensor) []fp8Tensor {
			i := find(ts, q+"_scale_inv")
			return append(ts[:i], ts[i+1:]...)
		}, `F8_E4M3 tensor "` + q + `" has no scale tensor "` + q + `_scale_inv"`, false},
		{"scale without weight", fp8Config, func(ts []fp8Tensor) []fp8Tensor {
			i := find(ts, q)
			return append(ts[:i], ts[i+1:]...)
		}, `scale tensor "` + q + `_scale_inv" has no weight "` + q + `"`, false},
		{"NaN scale", fp8Config, func(ts []fp8Tensor) []fp8Tensor {
			i := find(ts, down+"_scale_inv")
			ts[i].f32[5] = float32(math.NaN())
			return ts
		}, `scale tensor "` + down + `_scale_inv": block [1, 1] is NaN`, true},
		{"infinite scale", fp8Config, func(ts []fp8Tensor) []fp8Tensor {
			i := find(ts, q+"_scale_inv")
			ts[i].f32[0] = float32(math.Inf(-1))
			return ts
		}, `scale tensor "` + q + `_scale_inv": block [0, 0] is -Inf`, true},
		{"other quant method", strings.Replace(fp8Config, `"fp8"`, `"gptq"`, 1), nil,
			`quantization_config: quant_method "gptq" is not supported`, false},
		{"bad block size", strings.Replace(fp8Config, `[8,8]`, `[8,0]`, 1), nil,
			`weight_block_size [8 0] is not two positive sizes`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quant, _ := fp8Model(tc.edit)
			dir := fp8Folder(t, tc.config, quant)
			for mode, err := range convertModes(t, dir) {
				if tc.atRead && mode == "dry" {
					// A dry run reads no values.
					continue
				}
				// Planned.ReadFloat32 names the tensor, not the model.
				named := mode == "plan" && tc.atRead || err != nil && strings.Contains(err.Error(), dir)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !named {
					t.Errorf("%s: error %v, want one naming %s and containing %q", mode, err, dir, tc.want)
					continue
				}
				if strings.Contains(tc.name, "scale") && !errors.Is(err, readers.ErrScale) {
					t.Errorf("%s: error %v does not wrap readers.ErrScale", mode, err)
				}
			}
		})
	}
}

// TestFP8Plan: the scale tensors are not listed, a dequantized weight is
// listed as F32 and reads as its dequantized values through Plan.
func TestFP8Plan(t *testing.T) {
	quant, plain := fp8Model(nil)
	dir := fp8Folder(t, fp8Config, quant)
	ctx := context.Background()
	p, err := Plan(ctx, dir, Options{OutType: "f32"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := map[string][]float32{}
	for _, x := range plain {
		want[x.name] = x.f32
	}
	n := 0
	for _, pt := range p.Tensors() {
		if strings.HasSuffix(pt.Name, "_scale_inv") {
			t.Errorf("scale tensor %s planned", pt.Name)
		}
		if pt.Name != "blk.0.ffn_down.weight" {
			continue
		}
		n++
		v := make([]float32, pt.Shape[0]*pt.Shape[1])
		if err := p.ReadFloat32(ctx, pt.Name, v); err != nil {
			t.Fatal(err)
		}
		w := want["model.layers.0.mlp.down_proj.weight"]
		for i := range v {
			if math.Float32bits(v[i]) != math.Float32bits(w[i]) {
				t.Fatalf("value %d = %v, want %v", i, v[i], w[i])
			}
		}
	}
	if n != 1 {
		t.Fatalf("blk.0.ffn_down.weight planned %d times", n)
	}
}
