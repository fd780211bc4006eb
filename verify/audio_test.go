package verify

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestAudioForward runs the audio encoders verify/forward implements on
// their fixtures' projector conversions: alone, the F32 file's audio
// features are finite; against the checkpoint the F32, F16 and Q8_0 files agree
// with it within the encoder limits; and files broken the way a converter
// could break them (a convolution kernel's taps reversed, a wrong norm
// epsilon, Gemma 4's two convolution-module norms swapped or its
// per_dim_scale left without softplus) fail with a forward problem that
// names the audio features. Gemma 4's file also runs its vision tower.
func TestAudioForward(t *testing.T) {
	whisper := []towerBreak{
		{"convolution taps reversed", reverseTaps("a.conv1d.1.weight", 3)},
		{"wrong norm epsilon", func(t *testing.T, m *model) {
			m.setKV("clip.audio.attention.layer_norm_epsilon", gguf.Float32(10))
		}},
	}
	for _, tc := range []struct {
		fixture string
		breaks  []towerBreak
	}{
		{"qwen2audio", whisper},
		{"voxtral", whisper},
		{"gemma4", []towerBreak{
			{"subsampling taps reversed", reverseTaps("a.conv1d.0.weight", 3)},
			{"depthwise taps reversed", reverseTaps("a.blk.0.conv_dw.weight", 5)},
			{"convolution-module norms swapped", func(t *testing.T, m *model) {
				a, b := m.tensor(t, "a.blk.0.conv_norm.weight"), m.tensor(t, "a.blk.0.norm_conv.weight")
				wa, wb := f32s(a), f32s(b)
				setF32s(a, wb)
				setF32s(b, wa)
			}},
			{"per_dim_scale without softplus", func(t *testing.T, m *model) {
				ts := m.tensor(t, "a.blk.0.per_dim_scale.weight")
				w := f32s(ts)
				for i, x := range w {
					w[i] = float32(math.Log(math.Expm1(float64(x))))
				}
				setF32s(ts, w)
			}},
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			dir := assembleFixture(t, tc.fixture)
			ref, err := OpenMMProjCheckpoint(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			f32 := convertMMProj(t, dir, "f32")
			alone := run(t, open(t, f32), nil, Options{})
			if !alone.OK || alone.Audio == nil || alone.Audio.Tokens == 0 {
				t.Fatalf("F32 alone: OK %v, problems %v, audio %+v", alone.OK, alone.Problems, alone.Audio)
			}
			if tc.fixture == "gemma4" && (alone.Vision == nil || alone.Vision.Tokens == 0) {
				t.Fatalf("F32 alone: no vision forward pass beside the audio one: %+v", alone.Vision)
			}
			t.Logf("%d bins × %d frames", alone.Audio.Bins, alone.Audio.Frames)
			checkTowerForward(t, dir, f32, ref, "audio features", func(r *Report) *FeatureAgreement {
				if r.Audio == nil {
					return nil
				}
				return &r.Audio.FeatureAgreement
			}, tc.breaks)
		})
	}
}

// reverseTaps breaks a projector file by reversing the order of every run
// of k values of the F32 tensor name (a convolution kernel's taps).
func reverseTaps(name string, k int) func(t *testing.T, m *model) {
	return func(t *testing.T, m *model) {
		ts := m.tensor(t, name)
		w := f32s(ts)
		for i := 0; i+k <= len(w); i += k {
			slices.Reverse(w[i : i+k])
		}
		setF32s(ts, w)
	}
}

// towerBreak is a way to break a projector file.
type towerBreak struct {
	name   string
	break_ func(t *testing.T, m *model)
}

// checkTowerForward verifies a fixture's F32, F16 and Q8_0 projector files
// against the checkpoint (the tower's agreement, from get, within the
// limits), then each of breaks applied to the F32 file, which must fail
// with a forward problem naming what.
func checkTowerForward(t *testing.T, dir, f32 string, ref Reference, what string, get func(*Report) *FeatureAgreement, breaks []towerBreak) {
	t.Helper()
	for _, outType := range []string{"f32", "f16", "q8_0"} {
		path := f32
		if outType != "f32" {
			path = convertMMProj(t, dir, outType)
		}
		rep := run(t, open(t, path), ref, Options{})
		a := get(rep)
		if a == nil {
			t.Fatalf("%s: no forward pass of the tower: %v", outType, rep.Problems)
		}
		t.Logf("%s: %d features of %d: cosine %.9f (tokens ≥ %.9f, limit %.7f), relative error %.3g (limit %.3g), matrix error %.3g",
			outType, a.Tokens, a.Dim, a.Cosine, a.TokenCosine, a.CosineLimit, a.RelError, a.RelLimit, a.MatrixError)
		if !rep.OK {
			t.Errorf("%s against the checkpoint: %v", outType, rep.Problems)
		}
	}
	for _, b := range breaks {
		m := loadModel(t, f32)
		b.break_(t, m)
		rep := run(t, open(t, m.write(t)), ref, Options{})
		var msgs []string
		for _, p := range rep.Problems {
			msgs = append(msgs, p.String())
		}
		if rep.OK || !strings.Contains(strings.Join(msgs, "\n"), "forward: "+what+": ") {
			t.Errorf("%s: OK %v, no forward problem on the %s in %q", b.name, rep.OK, what, msgs)
		}
	}
}
