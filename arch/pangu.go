package arch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newPanguEmbedded, "PanguEmbeddedForCausalLM")
}

// panguEmbedded is PanguEmbeddedModel (conversion/pangu.py): TextModel's
// parameters and tensors plus the vocabulary size and head widths, a
// SentencePiece vocabulary with tokenizer_config.json's add_prefix_space.
type panguEmbedded struct{ text }

func newPanguEmbedded(h HParams, dir string) (Model, error) {
	t, err := newText("pangu-embedded", h, dir)
	return &panguEmbedded{t}, err
}

func (m *panguEmbedded) Vocab() VocabKind { return VocabSentencePiece }

// AdjustVocab appends add_space_prefix when tokenizer_config.json has
// add_prefix_space (null packs as false).
func (m *panguEmbedded) AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error) {
	var l gguf.KVList
	l.Append(kvs...)
	data, err := os.ReadFile(filepath.Join(m.dir, "tokenizer_config.json"))
	if os.IsNotExist(err) {
		return l.KVs(), nil
	} else if err != nil {
		return nil, err
	}
	var tc map[string]any
	if err := json.Unmarshal(data, &tc); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if v, ok := tc["add_prefix_space"]; ok {
		l.Set(gguf.KeyTokenizerAddSpacePrefix, gguf.Bool(Truthy(v)))
	}
	return l.KVs(), nil
}

// Params appends to TextModel's keys vocab_size, rope.dimension_count
// (head_dim, else hidden_size // num_attention_heads) and, without
// head_dim, the key and value lengths.
func (m *panguEmbedded) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := m.addConfigKeys([]configKey{{"vocab_size", "vocab_size", k.u32}}); err != nil {
		return nil, err
	}
	headDim, ok := m.h["head_dim"]
	if !ok || headDim == nil {
		if headDim, err = hiddenPerHead(m.h); err != nil {
			return nil, err
		}
	}
	suffixes := []string{"rope.dimension_count"}
	if v, ok := m.h["head_dim"]; !ok || v == nil {
		suffixes = append(suffixes, "attention.key_length", "attention.value_length")
	}
	for _, s := range suffixes {
		if err := k.u32(s, headDim); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify drops lm_head when tie_word_embeddings is set.
func (m *panguEmbedded) Modify(in Input, bid int) ([]Output, error) {
	if in.Name == "lm_head.weight" && Truthy(m.h["tie_word_embeddings"]) {
		return nil, nil
	}
	return m.mapped(in, in.Name, bid, nil)
}
