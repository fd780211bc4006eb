package forward

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// audioFixture is a fixture's mmproj/audio.json: the fixed log-mel input and
// transformers' audio features of it.
type audioFixture struct {
	InputFeatures struct {
		Shape []int `json:"shape"`
	} `json:"input_features"`
	AudioFeatures struct {
		Shape []int `json:"shape"`
	} `json:"audio_features"`
}

// loadAudio reads a projector file's audio encoder.
func loadAudio(t *testing.T, f *ggufread.File) *Audio {
	t.Helper()
	c, err := ParseAudioConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	a, err := LoadAudio(c, GGUFWeights(f))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAudioTransformers runs each audio encoder of an F32 projector
// conversion on the fixture's log-mel input and compares the audio
// features with transformers' (float32, eager attention), within the
// vision towers' limits; it also checks that TestMel is that input.
func TestAudioTransformers(t *testing.T) {
	for _, name := range []string{"qwen2audio", "voxtral", "gemma4"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(fixtures, name, "mmproj")
			raw, err := os.ReadFile(filepath.Join(dir, "audio.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref audioFixture
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			bins, frames := ref.InputFeatures.Shape[0], ref.InputFeatures.Shape[1]
			mel := readF32(t, filepath.Join(dir, "input_features.f32"), bins*frames)
			want := readF32(t, filepath.Join(dir, "audio_features.f32"), ref.AudioFeatures.Shape[0]*ref.AudioFeatures.Shape[1])
			if e := RelError(TestMel(bins, frames), mel); e > 1e-6 {
				t.Errorf("TestMel: relative error %.3g from the fixture's input", e)
			}
			a := loadAudio(t, convertMMProj(t, name))
			got, err := a.Features(context.Background(), mel, frames, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != ref.AudioFeatures.Shape[0] || len(got[0]) != ref.AudioFeatures.Shape[1] {
				t.Fatalf("%d×%d features, transformers has %v", len(got), len(got[0]), ref.AudioFeatures.Shape)
			}
			flat := slices.Concat(got...)
			cos, rel := Cosine(flat, want), RelError(flat, want)
			t.Logf("%d tokens × %d: cosine %.9f, relative error %.3g", len(got), len(got[0]), cos, rel)
			if cos < 0.99999 || rel > math.Sqrt(2*1e-5) {
				t.Errorf("audio features: cosine %.9f, relative error %.3g from transformers'", cos, rel)
			}
		})
	}
}

// TestAudioErrors: keys an audio projector file could get wrong are
// refused with ErrMetadata (ErrUnsupported for an encoder without a
// forward pass), and an input the encoder cannot take with ErrUnsupported.
func TestAudioErrors(t *testing.T) {
	f := convertMMProj(t, "qwen2audio")
	for _, tc := range []struct {
		name, key string
		v         gguf.Value
		want      error
	}{
		{"unknown projector", "clip.projector_type", gguf.String("ultravox"), ErrUnsupported},
		{"voxtral without a stack factor", "clip.projector_type", gguf.String("voxtral"), ErrMetadata},
		{"no mel bins", "clip.audio.num_mel_bins", gguf.Uint32(0), ErrMetadata},
		{"heads not dividing", "clip.audio.attention.head_count", gguf.Uint32(3), ErrMetadata},
		{"epsilon of the wrong type", "clip.audio.attention.layer_norm_epsilon", gguf.String("1e-5"), ErrMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseAudioConfig(withKV{f, tc.key, tc.v}); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	a := loadAudio(t, f)
	c := a.Config
	for _, frames := range []int{0, 6, a.MaxFrames + 4} {
		if _, err := a.Features(context.Background(), TestMel(c.MelBins, frames), frames, 1); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%d frames: error %v", frames, err)
		}
	}
}

// TestGemma4AudioErrors: a gemma4a file whose weights do not fit together is
// refused with ErrWeights (an input projection whose width is not a
// multiple of the second convolution's channels, a subsampling kernel
// missing), and an input the conformer cannot take with ErrUnsupported.
func TestGemma4AudioErrors(t *testing.T) {
	f := convertMMProj(t, "gemma4")
	c, err := ParseAudioConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Projector != projGemma4A || c.Eps != g4aEps {
		t.Fatalf("projector %q, epsilon %g", c.Projector, c.Eps)
	}
	w := GGUFWeights(f)
	for _, tc := range []struct {
		name string
		w    Weights
		msg  string
	}{
		{"input projection of 9 values", withTensor{w, "a.input_projection.weight",
			&memTensor{shape: []int64{9, int64(c.Embd)}, data: make([]float32, 9*c.Embd)}}, "not a multiple"},
		{"subsampling kernel 3-D", withTensor{w, "a.conv1d.1.weight",
			&memTensor{shape: []int64{3, 3, 8}, data: make([]float32, 72)}}, "a.conv1d.1.weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadAudio(c, tc.w); !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want ErrWeights naming %q", err, tc.msg)
			}
		})
	}
	a, err := LoadAudio(c, w)
	if err != nil {
		t.Fatal(err)
	}
	if a.Bins != 8 || a.MaxFrames != gemma4aFrames {
		t.Fatalf("%d bins, at most %d frames", a.Bins, a.MaxFrames)
	}
	for _, in := range []struct{ bins, frames int }{{8, 0}, {8, 6}, {8, gemma4aFrames + 4}, {c.MelBins, 40}} {
		if _, err := a.Features(context.Background(), TestMel(in.bins, in.frames), in.frames, 1); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%d bins × %d frames: error %v", in.bins, in.frames, err)
		}
	}
}
