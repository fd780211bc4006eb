package forward

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// imageFixture is a fixture's mmproj/image.json with its two float32 files:
// the fixed image as the Hugging Face processor prepares it and the
// image features transformers computes from it.
type imageFixture struct {
	Image struct {
		Height, Width int
	} `json:"image"`
	PixelValues struct {
		Shape []int `json:"shape"`
	} `json:"pixel_values"`
	ImageFeatures struct {
		Shape []int `json:"shape"`
	} `json:"image_features"`
	// Pool2 is Gemma 3's features with a pooling kernel of 2
	// (image_features_pool2.f32), nil for the other fixtures.
	Pool2 *struct {
		Shape []int `json:"shape"`
	} `json:"image_features_pool2"`
	pixels, features, pool2 []float32
}

func readF32(t *testing.T, path string, n int) []float32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*n {
		t.Fatalf("%s: %d bytes, want %d float32 values", path, len(raw), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func readImageFixture(t *testing.T, name string) *imageFixture {
	t.Helper()
	dir := filepath.Join(fixtures, name, "mmproj")
	raw, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f imageFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.PixelValues.Shape) != 3 || len(f.ImageFeatures.Shape) != 2 {
		t.Fatalf("%s: shapes %v and %v", name, f.PixelValues.Shape, f.ImageFeatures.Shape)
	}
	f.pixels = readF32(t, filepath.Join(dir, "pixel_values.f32"), 3*f.Image.Height*f.Image.Width)
	f.features = readF32(t, filepath.Join(dir, "image_features.f32"), f.ImageFeatures.Shape[0]*f.ImageFeatures.Shape[1])
	if f.Pool2 != nil && len(f.Pool2.Shape) == 2 {
		f.pool2 = readF32(t, filepath.Join(dir, "image_features_pool2.f32"), f.Pool2.Shape[0]*f.Pool2.Shape[1])
	}
	return &f
}

// convertMMProj converts a fixture's projector to F32.
func convertMMProj(t *testing.T, name string) *ggufread.File {
	t.Helper()
	return convertFixtureWith(t, name, convert.Options{MMProj: true})
}

// loadVision reads a projector file's vision tower, with the keys of md.
func loadVision(t *testing.T, md Metadata, f *ggufread.File) (*VisionConfig, *Vision) {
	t.Helper()
	c, err := ParseVisionConfig(md)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVision(c, GGUFWeights(f))
	if err != nil {
		t.Fatal(err)
	}
	return c, v
}

// TestVisionTransformers runs each vision tower of an F32 projector
// conversion on the fixture's preprocessed image and compares the image
// features with transformers' (float32, eager attention); it also checks
// that NormalizeImage of TestImage is the processor's pixel_values.
func TestVisionTransformers(t *testing.T) {
	for _, name := range []string{"gemma3mm", "qwen2vl", "qwen25vl", "qwen3vl", "mistral3", "pixtral", "smolvlm", "lfm2vl", "internvl", "glm4v", "glm4vmoe", "gemma4", "gemma4moe"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref := readImageFixture(t, name)
			f := convertMMProj(t, name)
			c, v := loadVision(t, f, f)
			w, h := ref.Image.Width, ref.Image.Height
			img, err := NormalizeImage(TestImage(w, h), w, h, c.Mean, c.Std)
			if err != nil {
				t.Fatal(err)
			}
			if e := RelError(img.Pix, ref.pixels); e > 1e-6 {
				t.Errorf("NormalizeImage: relative error %.3g from the processor's pixel_values", e)
			}
			img = &Image{Width: w, Height: h, Pix: ref.pixels}
			compareFeatures(t, v, img, ref.features, ref.ImageFeatures.Shape)
			if ref.pool2 != nil {
				// Gemma 3 with a pooling kernel of 2, as transformers pools
				// for mm_tokens_per_image 1.
				_, v2 := loadVision(t, withKV{f, "clip.vision.projector.scale_factor", gguf.Uint32(2)}, f)
				compareFeatures(t, v2, img, ref.pool2, ref.Pool2.Shape)
			}
		})
	}
}

// compareFeatures runs a tower on img and compares its features with
// transformers' (shape [tokens, width]): cosine at least 0.99999, relative
// error within √(2·1e-5), the encoder limits for float32.
func compareFeatures(t *testing.T, v *Vision, img *Image, want []float32, shape []int) {
	t.Helper()
	got, err := v.Features(context.Background(), img, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != shape[0] || len(got[0]) != shape[1] {
		t.Fatalf("%d×%d features, transformers has %v", len(got), len(got[0]), shape)
	}
	flat := slices.Concat(got...)
	cos, rel := Cosine(flat, want), RelError(flat, want)
	t.Logf("%d tokens × %d: cosine %.9f, relative error %.3g", len(got), len(got[0]), cos, rel)
	if cos < 0.99999 || rel > math.Sqrt(2*1e-5) {
		t.Errorf("image features: cosine %.9f, relative error %.3g from transformers'", cos, rel)
	}
}

// withTensor serves one more tensor beside a file's.
type withTensor struct {
	Weights
	name string
	t    *memTensor
}

func (w withTensor) Tensor(name string) (Tensor, bool) {
	if name == w.name {
		return w.t, true
	}
	return w.Weights.Tensor(name)
}

// TestVisionImgBreak: a Pixtral file with an [IMG_BREAK] embedding gets it
// after each row of image tokens but the last, the image tokens unchanged.
func TestVisionImgBreak(t *testing.T) {
	f := convertMMProj(t, "mistral3")
	c, err := ParseVisionConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	brk := make([]float32, c.ProjDim)
	for i := range brk {
		brk[i] = float32(i) - 7
	}
	side := 3 * c.PatchSize * c.Merge // 3 × 3 merged tokens
	img, err := NormalizeImage(TestImage(side, side), side, side, c.Mean, c.Std)
	if err != nil {
		t.Fatal(err)
	}
	features := func(w Weights) [][]float32 {
		v, err := LoadVision(c, w)
		if err != nil {
			t.Fatal(err)
		}
		out, err := v.Features(context.Background(), img, 1)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	plain := features(GGUFWeights(f))
	withBreak := features(withTensor{GGUFWeights(f), "v.token_embd.img_break", &memTensor{shape: []int64{int64(c.ProjDim)}, data: brk}})
	if len(plain) != 9 || len(withBreak) != 11 {
		t.Fatalf("%d tokens, %d with breaks; want 9 and 11", len(plain), len(withBreak))
	}
	for i, row := range withBreak {
		want, what := plain[i-i/4], "image token"
		if i == 3 || i == 7 {
			want, what = brk, "[IMG_BREAK]"
		}
		if RelError(row, want) != 0 {
			t.Errorf("token %d is not the %s", i, what)
		}
	}
}

// TestVisionErrors: keys a projector file could get wrong are refused with
// ErrMetadata (or ErrUnsupported for a tower without a forward pass), and
// an image the tower cannot take with ErrUnsupported, before anything is
// allocated for them.
func TestVisionErrors(t *testing.T) {
	f := convertMMProj(t, "qwen25vl")
	for _, tc := range []struct {
		name, key string
		v         gguf.Value
		want      error
	}{
		{"unknown projector", "clip.projector_type", gguf.String("mlp"), ErrUnsupported},
		{"huge image", "clip.vision.image_size", gguf.Uint32(1 << 20), ErrMetadata},
		{"huge patch", "clip.vision.patch_size", gguf.Uint32(512), ErrMetadata},
		{"no patch", "clip.vision.patch_size", gguf.Uint32(0), ErrMetadata},
		{"merge of 3", "clip.vision.spatial_merge_size", gguf.Uint32(3), ErrMetadata},
		{"zero std", "clip.vision.image_std", gguf.Array([]float32{0.5, 0, 0.5}), ErrMetadata},
		{"two means", "clip.vision.image_mean", gguf.Array([]float32{0.5, 0.5}), ErrMetadata},
		{"epsilon of the wrong type", "clip.vision.attention.layer_norm_epsilon", gguf.String("1e-6"), ErrMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseVisionConfig(withKV{f, tc.key, tc.v}); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	c, v := loadVision(t, f, f)
	for _, img := range []*Image{{Width: 28, Height: 42, Pix: make([]float32, 3*28*42)}, {Width: 28, Height: 28, Pix: nil}} {
		if _, err := v.Features(context.Background(), img, 1); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%d×%d image of %d values: error %v", img.Width, img.Height, len(img.Pix), err)
		}
	}
	if _, err := NormalizeImage(make([]byte, 5), 2, 1, c.Mean, c.Std); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NormalizeImage of 5 bytes: %v", err)
	}
}

// renamed serves a file's tensors under other names (new name → old).
type renamed struct {
	Weights
	names map[string]string
}

func (w renamed) Tensor(name string) (Tensor, bool) {
	if old, ok := w.names[name]; ok {
		name = old
	}
	return w.Weights.Tensor(name)
}

// TestVisionLegacyFFNNames: a Gemma 3 file whose feed-forward tensors
// carry the older scripts' swapped names (fc1 as ffn_down) gives the same
// features, as clip.cpp swaps them back.
func TestVisionLegacyFFNNames(t *testing.T) {
	f := convertMMProj(t, "gemma3mm")
	c, v := loadVision(t, f, f)
	names := map[string]string{}
	for i := range c.Layers {
		for _, s := range []string{".weight", ".bias"} {
			up, down := fmt.Sprintf("v.blk.%d.ffn_up%s", i, s), fmt.Sprintf("v.blk.%d.ffn_down%s", i, s)
			names[up], names[down] = down, up
		}
	}
	legacy, err := LoadVision(c, renamed{GGUFWeights(f), names})
	if err != nil {
		t.Fatal(err)
	}
	w, h := c.TestImageSize()
	img, err := NormalizeImage(TestImage(w, h), w, h, c.Mean, c.Std)
	if err != nil {
		t.Fatal(err)
	}
	want, err := v.Features(context.Background(), img, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := legacy.Features(context.Background(), img, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e := RelError(slices.Concat(got...), slices.Concat(want...)); e != 0 {
		t.Errorf("relative error %.3g with the legacy names", e)
	}
}

// TestVisionGLM4VGrid: GLM-4.1V's tower runs on images of its position
// table's grid only (clip.cpp resizes the table bicubically for others).
func TestVisionGLM4VGrid(t *testing.T) {
	f := convertMMProj(t, "glm4v")
	c, v := loadVision(t, f, f)
	side := 2 * c.ImageSize
	img, err := NormalizeImage(TestImage(side, side), side, side, c.Mean, c.Std)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Features(context.Background(), img, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("%d×%d image: error %v, want ErrUnsupported", side, side, err)
	}
}
