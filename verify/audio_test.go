package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestAudioForward runs the audio encoders verify/forward implements on
// their fixtures' projector conversions: alone, the F32 file's audio
// features are finite; against the checkpoint the F32, F16 and Q8_0 files agree
// with it within the encoder limits; and files broken the way a converter
// could break them (the convolution kernel's taps reversed, a wrong norm
// epsilon) fail with a forward problem that names the audio features.
func TestAudioForward(t *testing.T) {
	for _, fixture := range []string{"qwen2audio", "voxtral"} {
		t.Run(fixture, func(t *testing.T) {
			dir := assembleFixture(t, fixture)
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
			t.Logf("%d bins × %d frames", alone.Audio.Bins, alone.Audio.Frames)
			checkTowerForward(t, dir, f32, ref, "audio features", func(r *Report) *FeatureAgreement {
				if r.Audio == nil {
					return nil
				}
				return &r.Audio.FeatureAgreement
			}, []towerBreak{
				{"convolution taps reversed", func(t *testing.T, m *model) {
					ts := m.tensor(t, "a.conv1d.1.weight")
					w := f32s(ts)
					out := make([]float32, len(w))
					for k := 0; k < len(w); k += 3 {
						out[k], out[k+1], out[k+2] = w[k+2], w[k+1], w[k]
					}
					setF32s(ts, out)
				}},
				{"wrong norm epsilon", func(t *testing.T, m *model) {
					m.setKV("clip.audio.attention.layer_norm_epsilon", gguf.Float32(10))
				}},
			})
		})
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
