package verify

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
)

// convertMMProj converts a fixture folder's projector to outType.
func convertMMProj(t *testing.T, dir, outType string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mmproj-"+outType+".gguf")
	if _, err := convert.Run(context.Background(), dir, convert.Options{OutType: outType, OutFile: out, MMProj: true, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVisionForward runs the vision towers verify/forward implements on
// their fixtures' projector conversions: alone, the F32 file's image
// features are finite; against the checkpoint the F32, F16 and Q8_0 files agree
// with it within the encoder limits; and files broken the way a converter
// could break them (a transposed patch kernel, the wrong image mean, a
// wrong norm epsilon) fail with a forward problem that names the image
// features.
func TestVisionForward(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		// eps is a wrong layer-norm epsilon that moves the features past
		// the F32 limit (a slip such as 1e-5 for 1e-6 moves them less than
		// float32 noise: only the metadata comparison sees it).
		eps float32
	}{
		{"gemma3mm", 1e-1},
		{"qwen2vl", 10},
		{"qwen25vl", 10}, // its RMS norms see hidden states of mean square ≈ 50
		{"qwen3vl", 10},
		{"mistral3", 10},
		{"pixtral", 10},
		{"smolvlm", 10},
		{"lfm2vl", 10},
		{"internvl", 1e4}, // its hidden states vary widely: an epsilon of 10 moves the features within the limit
		{"glm4v", 10},
		{"glm4vmoe", 10},
		{"gemma4", 10},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := assembleFixture(t, tc.fixture)
			ref, err := OpenMMProjCheckpoint(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			f32 := convertMMProj(t, dir, "f32")
			alone := run(t, open(t, f32), nil, Options{})
			if !alone.OK || alone.Vision == nil || alone.Vision.Tokens == 0 {
				t.Fatalf("F32 alone: OK %v, problems %v, vision %+v", alone.OK, alone.Problems, alone.Vision)
			}
			pixtral := tc.fixture == "mistral3" || tc.fixture == "pixtral"
			if warned := slices.ContainsFunc(alone.Warnings, func(w string) bool { return strings.Contains(w, "v.token_embd.img_break") }); warned != pixtral {
				t.Errorf("warnings %q: [IMG_BREAK] warning %v, want %v", alone.Warnings, warned, pixtral)
			}
			t.Logf("%d×%d image", alone.Vision.Width, alone.Vision.Height)
			checkTowerForward(t, dir, f32, ref, "image features", func(r *Report) *FeatureAgreement {
				if r.Vision == nil {
					return nil
				}
				return &r.Vision.FeatureAgreement
			}, []towerBreak{
				{"patch kernel transposed", func(t *testing.T, m *model) {
					ts := m.tensor(t, "v.patch_embd.weight")
					p := int(ts.shape[0])
					w := f32s(ts)
					out := make([]float32, len(w))
					for k := 0; k < len(w); k += p * p {
						for y := range p {
							for x := range p {
								out[k+x*p+y] = w[k+y*p+x]
							}
						}
					}
					setF32s(ts, out)
				}},
				{"image mean of another model", func(t *testing.T, m *model) {
					mean := []float32{0.5, 0.5, 0.5} // SigLIP's for CLIP's, or the other way round
					if xs, _ := m.kv(t, "clip.vision.image_mean").Float32s(); xs[0] == 0.5 {
						mean = []float32{0.48145466, 0.4578275, 0.40821073}
					}
					m.setKV("clip.vision.image_mean", gguf.Array(mean))
				}},
				{"wrong norm epsilon", func(t *testing.T, m *model) {
					m.setKV("clip.vision.attention.layer_norm_epsilon", gguf.Float32(tc.eps))
				}},
			})
		})
	}
}
