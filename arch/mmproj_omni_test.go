package arch

import (
	"errors"
	"strings"
	"testing"
)

// TestOmniTowers checks that the Omni projectors read their towers from
// thinker_config, and that Qwen3-Omni's, which llama.cpp's converter
// fails on, is refused with the reason.
func TestOmniTowers(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    HParams
		want func(error) bool
	}{
		{"qwen3omni refused", HParams{"architectures": []any{"Qwen3OmniMoeForConditionalGeneration"},
			"thinker_config": map[string]any{"vision_config": map[string]any{}, "audio_config": map[string]any{}}},
			func(err error) bool {
				var u *UnsupportedError
				return errors.As(err, &u) && strings.Contains(err.Error(), "Can not map tensor")
			}},
		{"qwen25omni without thinker towers", HParams{"architectures": []any{"Qwen2_5OmniModel"},
			"vision_config": map[string]any{"depth": 1}, "hidden_size": 8},
			func(err error) bool { return errors.Is(err, ErrNoTower) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMMProj(tc.h, t.TempDir()); !tc.want(err) {
				t.Errorf("NewMMProj: %v", err)
			}
		})
	}
}
