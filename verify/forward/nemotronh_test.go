package forward

import (
	"errors"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestNemotronHMoEMetadata: nemotron_h_moe files this package cannot run
// as llama.cpp does are refused with the reason, not run wrongly.
func TestNemotronHMoEMetadata(t *testing.T) {
	f := convertFixture(t, "nemotronhmoe")
	if _, err := ParseConfig(f); err != nil {
		t.Fatalf("the fixture: %v", err)
	}
	for _, tc := range []struct {
		name, key string
		v         gguf.Value
		want      error
	}{
		{"one width for all blocks", "nemotron_h_moe.feed_forward_length", gguf.Uint32(16), ErrMetadata},
		{"widths per block of the wrong length", "nemotron_h_moe.feed_forward_length", gguf.Array([]int32{0, 16}), ErrMetadata},
		{"FFN blocks of two widths", "nemotron_h_moe.feed_forward_length", gguf.Array([]int32{0, 16, 0, 0, 32}), ErrUnsupported},
		{"latent experts", "nemotron_h_moe.moe_latent_size", gguf.Uint32(4), ErrUnsupported},
		{"no shared expert width", "nemotron_h_moe.expert_shared_feed_forward_length", gguf.Uint32(0), ErrMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseConfig(withKV{f, tc.key, tc.v}); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
