package arch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newEmbeddingGemma, "Gemma3TextModel")
}

// embeddingGemma is EmbeddingGemma (conversion/gemma.py): Gemma3Model
// under the gemma-embedding architecture, with the sliding window as
// config.json writes it and the sentence-transformers pooling type. The
// 2_Dense / 3_Dense projections are converted only with the converter's
// --sentence-transformers-dense-modules, which ggufkit does not offer, so
// they are left out as the converter's default leaves them.
type embeddingGemma struct {
	gemma
}

func newEmbeddingGemma(h HParams, dir string) (Model, error) {
	t, err := newText("gemma-embedding", h, dir)
	if err != nil {
		return nil, err
	}
	return &embeddingGemma{gemma{text: t, version: 3}}, nil
}

// Params is EmbeddingGemma.set_gguf_parameters: Gemma3Model's keys, the
// sliding window read from config.json itself (Gemma3TextConfig changes it
// for bidirectional attention), then the pooling type.
func (m *embeddingGemma) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.params3(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	sw, err := rawSlidingWindow(m.dir)
	if err != nil {
		return nil, err
	}
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// rawSlidingWindow is config.json's sliding_window as written, which the
// converter requires.
func rawSlidingWindow(dir string) (any, error) {
	b, err := readSmall(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: sliding_window not found in model config (no config.json)", ErrConfig)
	}
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	var sw any
	if v, ok := raw["sliding_window"]; ok {
		if err := json.Unmarshal(v, &sw); err != nil {
			return nil, fmt.Errorf("config.json: sliding_window: %w", err)
		}
	}
	if sw == nil {
		return nil, &ConfigError{Key: "sliding_window", Value: nil, Msg: "is required for an EmbeddingGemma model"}
	}
	return sw, nil
}
