package convert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers/safetensors"
	"github.com/ggufkit/ggufkit/requantize"
)

// TestGptOssMXFP4Q4KMRefused: llama-quantize refuses the Q4_K_M of the
// MXFP4 fixture's F16 conversion ("requantizing from type mxfp4 is
// disabled": its experts are MXFP4 already), so there is no
// expected-Q4_K_M.json; the one pass refuses it the same way and leaves
// no file.
func TestGptOssMXFP4Q4KMRefused(t *testing.T) {
	dir := filepath.Join(fixtures, "gptossmxfp4")
	src := assemble(t, dir, loadFixture(t, dir), false)
	out := t.TempDir()
	_, err := Run(context.Background(), src, Options{OutType: "Q4_K_M", OutFile: filepath.Join(out, "out.gguf")})
	if !errors.Is(err, requantize.ErrRequantize) {
		t.Fatalf("Q4_K_M of an MXFP4 checkpoint: %v, want %v", err, requantize.ErrRequantize)
	}
	if ents, _ := os.ReadDir(out); len(ents) > 0 {
		t.Errorf("left %s behind", ents[0].Name())
	}
}

// TestDeepseek4Q4KMRefused: DeepseekV4Model writes the dequantized FP8
// weights as Q8_0 whatever the outtype, so llama-quantize refuses the
// Q4_K_M of the fixture's F16 conversion ("requantizing from type q8_0 is
// disabled") and there is no expected-Q4_K_M.json; the one pass refuses
// it the same way and leaves no file.
func TestDeepseek4Q4KMRefused(t *testing.T) {
	dir := filepath.Join(fixtures, "deepseek4")
	src := assemble(t, dir, loadFixture(t, dir), false)
	out := t.TempDir()
	_, err := Run(context.Background(), src, Options{OutType: "Q4_K_M", OutFile: filepath.Join(out, "out.gguf")})
	if !errors.Is(err, requantize.ErrRequantize) || !strings.Contains(err.Error(), "Q8_0") {
		t.Fatalf("Q4_K_M of a DeepSeek-V4 checkpoint: %v, want %v from Q8_0", err, requantize.ErrRequantize)
	}
	if ents, _ := os.ReadDir(out); len(ents) > 0 {
		t.Errorf("left %s behind", ents[0].Name())
	}
}

// TestDeepseek4MalformedScale: an FP8 weight of the DeepSeek-V4 fixture
// whose E8M0 scale is missing, of the wrong shape or NaN, or an FP4 expert
// without its scale or with one of the wrong shape, is refused with an
// error naming the tensor (the converter would multiply by a broadcast or
// a NaN), and no output file is left behind.
func TestDeepseek4MalformedScale(t *testing.T) {
	const w = "layers.1.attn.wq_b"
	for _, tc := range []struct {
		name, want string
		edit       func(src string)
		modes      []string
	}{
		{"no scale", w + ".scale", func(src string) {
			editSafetensorsHeader(t, src, w+".scale", func(h map[string]map[string]any) { h["x.unused"] = h[w+".scale"]; delete(h, w+".scale") })
		}, nil},
		{"scale shape", w + ".scale", func(src string) {
			editSafetensorsHeader(t, src, w+".scale", func(h map[string]map[string]any) { h[w+".scale"]["shape"] = []int64{4, 1} })
		}, nil},
		{"no expert scale", "layers.2.ffn.experts.3.w2.weight", func(src string) {
			editSafetensorsHeader(t, src, "layers.2.ffn.experts.3.w2.scale", func(h map[string]map[string]any) {
				h["x.unused"] = h["layers.2.ffn.experts.3.w2.scale"]
				delete(h, "layers.2.ffn.experts.3.w2.scale")
			})
		}, nil},
		{"expert scale shape", "layers.0.ffn.experts.1.w1.scale", func(src string) {
			editSafetensorsHeader(t, src, "layers.0.ffn.experts.1.w1.scale", func(h map[string]map[string]any) { h["layers.0.ffn.experts.1.w1.scale"]["shape"] = []int64{1, 32} })
		}, nil},
		{"NaN scale", w + ".scale", func(src string) {
			path := shardOf(t, src, w+".scale")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := binary.LittleEndian.Uint64(b)
			var hdr map[string]json.RawMessage
			if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
				t.Fatal(err)
			}
			var e struct {
				Offsets [2]uint64 `json:"data_offsets"`
			}
			if err := json.Unmarshal(hdr[w+".scale"], &e); err != nil {
				t.Fatal(err)
			}
			b[8+n+e.Offsets[0]] = 0xff // E8M0 NaN
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"plan", "f16", "q8_0 split"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(fixtures, "deepseek4")
			src := assemble(t, dir, loadFixture(t, dir), false)
			tc.edit(src)
			for mode, err := range convertModes(t, src) {
				if tc.modes != nil && !slices.Contains(tc.modes, mode) {
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want one naming %s", mode, err, tc.want)
				}
			}
		})
	}
}

// shardOf returns the path of the safetensors file of the model folder
// src that holds tensor: the shard its index names, or model.safetensors.
func shardOf(t *testing.T, src, tensor string) string {
	t.Helper()
	idx := readIndex(t, src)
	if idx == nil {
		return filepath.Join(src, "model.safetensors")
	}
	shard, ok := idx["weight_map"].(map[string]any)[tensor].(string)
	if !ok {
		t.Fatalf("%s is in no shard of %s", tensor, src)
	}
	return filepath.Join(src, shard)
}

// readIndex returns the decoded safetensors index of the model folder src,
// nil when it has none.
func readIndex(t *testing.T, src string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, safetensors.IndexName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

// editSafetensorsHeader rewrites with edit the header of the safetensors
// file of the model folder src that holds tensor (the data section
// unchanged), and the folder's index, if any, to match: the edited file's
// names are what the index maps to it, so that the converter sees the
// edit and not an index mismatch.
func editSafetensorsHeader(t *testing.T, src, tensor string, edit func(hdr map[string]map[string]any)) {
	t.Helper()
	path := shardOf(t, src, tensor)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]map[string]any{}
	for k, v := range raw {
		var e map[string]any
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		hdr[k] = e
	}
	edit(hdr)
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), b[8+n:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	idx := readIndex(t, src)
	if idx == nil {
		return
	}
	shard, wm := filepath.Base(path), idx["weight_map"].(map[string]any)
	for k, v := range wm {
		if v == shard {
			delete(wm, k)
		}
	}
	for k := range hdr {
		if k != "__metadata__" {
			wm[k] = shard
		}
	}
	js, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, safetensors.IndexName), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGptOssMalformedMXFP4: a *_blocks / *_scales pair that is not one
// (a partner missing, a wrong shape or dtype) is refused by every mode
// with an error naming the tensor, and no output file is left behind.
func TestGptOssMalformedMXFP4(t *testing.T) {
	const p = "model.layers.1.mlp.experts."
	rename := func(from, to string) func(map[string]map[string]any) {
		return func(h map[string]map[string]any) { h[to] = h[from]; delete(h, from) }
	}
	set := func(name, key string, v any) func(map[string]map[string]any) {
		return func(h map[string]map[string]any) { h[name][key] = v }
	}
	for _, tc := range []struct {
		name, want string
		edit       func(map[string]map[string]any)
	}{
		{"no scales", p + "down_proj_blocks", rename(p+"down_proj_scales", p+"down_scales_renamed")},
		{"no blocks", p + "gate_up_proj_scales", rename(p+"gate_up_proj_blocks", p+"gate_up_renamed")},
		{"scales shape", p + "gate_up_proj_scales", set(p+"gate_up_proj_scales", "shape", []int64{4, 32, 2})},
		{"blocks shape", p + "down_proj_blocks", set(p+"down_proj_blocks", "shape", []int64{4, 32, 2, 8})},
		{"blocks dtype", p + "down_proj_blocks", set(p+"down_proj_blocks", "dtype", "I8")},
		{"odd rows", p + "gate_up_proj_blocks", func(h map[string]map[string]any) {
			h[p+"gate_up_proj_blocks"]["shape"] = []int64{4, 1, 64, 16}
			h[p+"gate_up_proj_scales"]["shape"] = []int64{4, 1, 64}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(fixtures, "gptossmxfp4")
			src := assemble(t, dir, loadFixture(t, dir), false)
			editSafetensorsHeader(t, src, tc.want, tc.edit)
			for mode, err := range convertModes(t, src) {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want one naming %s", mode, err, tc.want)
				}
			}
		})
	}
}

// TestGptOssPlannedMXFP4: what a plan reads of the MXFP4 checkpoint (as
// verify --source does) is its repacked experts decoded, which are the
// dequantized checkpoint's values: every tensor of gptossmxfp4's plan
// equals gptoss's.
func TestGptOssPlannedMXFP4(t *testing.T) {
	ctx := context.Background()
	plan := func(name string) *Planned {
		dir := filepath.Join(fixtures, name)
		p, err := Plan(ctx, assemble(t, dir, loadFixture(t, dir), false), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	mx, bf := plan("gptossmxfp4"), plan("gptoss")
	want := map[string][]uint64{}
	for _, pt := range bf.Tensors() {
		want[pt.Name] = pt.Shape
	}
	if len(mx.Tensors()) != len(want) {
		t.Fatalf("%d tensors, gptoss has %d", len(mx.Tensors()), len(want))
	}
	for _, pt := range mx.Tensors() {
		n := uint64(1)
		for _, d := range pt.Shape {
			n *= d
		}
		a, b := make([]float32, n), make([]float32, n)
		if err := mx.ReadFloat32(ctx, pt.Name, a); err != nil {
			t.Fatal(err)
		}
		if err := bf.ReadFloat32(ctx, pt.Name, b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s[%d] = %g, gptoss %g", pt.Name, i, a[i], b[i])
			}
		}
	}
}
