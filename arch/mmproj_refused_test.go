package arch

import (
	"errors"
	"strings"
	"testing"
)

// TestMMProjRefusals checks NewMMProj's errors before any tensor is read:
// the projectors llama.cpp's converter fails on, refused with its reason;
// an Omni config without thinker towers; a projector ggufkit does not
// convert, named with the tower found.
func TestMMProjRefusals(t *testing.T) {
	towers := map[string]any{"vision_config": map[string]any{}, "audio_config": map[string]any{}}
	unsupported := func(want string) func(error) bool {
		return func(err error) bool {
			var u *UnsupportedError
			return errors.As(err, &u) && strings.Contains(err.Error(), want)
		}
	}
	for _, tc := range []struct {
		name string
		h    HParams
		want func(error) bool
	}{
		{"qwen3omni", HParams{"architectures": []any{"Qwen3OmniMoeForConditionalGeneration"}, "thinker_config": towers},
			unsupported("Can not map tensor 'model.visual.")},
		{"gemma3n", HParams{"architectures": []any{"Gemma3nForConditionalGeneration"},
			"vision_config": map[string]any{"model_type": "gemma3n_vision"}},
			unsupported("subsample_conv_projection.conv_0.norm.weight")},
		{"qwen25omni without thinker towers", HParams{"architectures": []any{"Qwen2_5OmniModel"},
			"vision_config": map[string]any{"depth": 1}, "hidden_size": 8},
			func(err error) bool { return errors.Is(err, ErrNoTower) }},
		{"unconverted", HParams{"architectures": []any{"SomeVLForConditionalGeneration"},
			"vision_config": map[string]any{"model_type": "some_vision"}},
			unsupported(`a vision tower of model_type "some_vision"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMMProj(tc.h, t.TempDir()); !tc.want(err) {
				t.Errorf("NewMMProj: %v", err)
			}
		})
	}
}
