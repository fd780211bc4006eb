package forward

import (
	"errors"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestGemma4Metadata: the per-layer keys are read as llama.cpp reads them,
// and what it refuses or asserts on is an error, not a panic.
func TestGemma4Metadata(t *testing.T) {
	base := func(shared uint32) []gguf.KV {
		return []gguf.KV{
			{Key: "general.architecture", Value: gguf.String("gemma4")},
			{Key: "gemma4.context_length", Value: gguf.Uint32(64)},
			{Key: "gemma4.embedding_length", Value: gguf.Uint32(8)},
			{Key: "gemma4.block_count", Value: gguf.Uint32(3)},
			{Key: "gemma4.vocab_size", Value: gguf.Uint32(16)},
			{Key: "gemma4.feed_forward_length", Value: gguf.Array([]int32{8, 8, 16})},
			{Key: "gemma4.attention.head_count", Value: gguf.Uint32(2)},
			{Key: "gemma4.attention.head_count_kv", Value: gguf.Uint32(1)},
			{Key: "gemma4.attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-6)},
			{Key: "gemma4.attention.key_length", Value: gguf.Uint32(8)},
			{Key: "gemma4.attention.value_length", Value: gguf.Uint32(8)},
			{Key: "gemma4.attention.key_length_swa", Value: gguf.Uint32(4)},
			{Key: "gemma4.attention.value_length_swa", Value: gguf.Uint32(4)},
			{Key: "gemma4.attention.sliding_window", Value: gguf.Uint32(16)},
			{Key: "gemma4.attention.sliding_window_pattern", Value: gguf.Array([]bool{true, false, false})},
			{Key: "gemma4.attention.shared_kv_layers", Value: gguf.Uint32(shared)},
			{Key: "gemma4.embedding_length_per_layer_input", Value: gguf.Uint32(2)},
		}
	}
	c, err := ParseConfig(KVMap(base(1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.g4.headDim[0] != 4 || c.g4.headDim[1] != 8 || c.g4.ff[2] != 16 || c.g4.kvFrom != 2 {
		t.Errorf("per-layer config %+v", c.g4)
	}
	if src, err := c.gemma4KVSource(2); err != nil || src != 1 {
		t.Errorf("layer 2 reuses %d (%v), want layer 1", src, err)
	}
	if _, err := ParseConfig(KVMap(base(2))); !errors.Is(err, ErrMetadata) {
		t.Errorf("2 of 3 layers shared: %v", err)
	}
	bad := append(base(0), gguf.KV{Key: "gemma4.attention.value_length_swa", Value: gguf.Uint32(2)})
	if _, err := ParseConfig(KVMap(bad)); !errors.Is(err, ErrMetadata) {
		t.Errorf("key and value widths differ: %v", err)
	}
}
