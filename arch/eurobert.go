package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newEuroBert, "EuroBertModel")
}

// euroBert is EuroBertModel (conversion/bert.py): a bidirectional Llama
// layout under the eurobert architecture, without Q/K permutation, with a
// GPT-2 style BPE vocabulary that adds no BOS token.
type euroBert struct {
	text
}

func newEuroBert(h HParams, dir string) (Model, error) {
	t, err := newText("eurobert", h, dir)
	if err != nil {
		return nil, err
	}
	return &euroBert{t}, nil
}

// Vocab is EuroBertModel.set_vocab: _set_vocab_gpt2 after add_bos_token
// false (AdjustVocab).
func (m *euroBert) Vocab() VocabKind { return VocabGPT2 }

// AdjustVocab puts add_bos_token false before the vocabulary, as set_vocab
// writes it first; a value the vocabulary sets again replaces it there.
func (m *euroBert) AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error) {
	var l gguf.KVList
	l.Set(gguf.KeyTokenizerAddBOS, gguf.Bool(false))
	l.Append(kvs...)
	return l.KVs(), nil
}

// Params is EuroBertModel.set_gguf_parameters: TextModel's, bidirectional
// attention, no rope scaling, the sentence-transformers pooling type.
func (m *euroBert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("attention.causal"), gguf.Bool(false))
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is EuroBertModel.filter_tensors: the "model." prefix removed.
func (m *euroBert) Filter(name string) (string, bool) {
	return m.text.Filter(strings.TrimPrefix(name, "model."))
}

func (m *euroBert) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}
