package arch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newLFM2Embed, "Lfm2Model", "Lfm2BidirectionalModel")
}

// lfm2Embed is LFM2ColBertModel (conversion/lfm2.py): LFM2Model on the
// bare model's names (made "model." ones), bidirectional for
// Lfm2BidirectionalModel, with the sentence-transformers pooling type. The
// converter also writes a ColBERT projection from 1_Dense/model.safetensors
// as dense_2; ggufkit refuses a folder that has one.
type lfm2Embed struct {
	*lfm2
}

func newLFM2Embed(h HParams, dir string) (Model, error) {
	dense := filepath.Join(dir, "1_Dense", "model.safetensors")
	if _, err := os.Stat(dense); err == nil {
		return nil, fmt.Errorf("%w: %s: the ColBERT projection (dense_2) of an LFM2 embedding model is not supported", ErrConfig, dense)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	m, err := newLFM2(false)(h, dir)
	if err != nil {
		return nil, err
	}
	return &lfm2Embed{m.(*lfm2)}, nil
}

// Params is LFM2ColBertModel.set_gguf_parameters: LFM2Model's, causal
// attention off for Lfm2BidirectionalModel, then the pooling type.
func (m *lfm2Embed) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.lfm2.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	if m.hfArch == "Lfm2BidirectionalModel" {
		k.l.Set(k.key("attention.causal"), gguf.Bool(false))
	}
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify prefixes "model." to every name but the dense projection's, then
// is LFM2Model's.
func (m *lfm2Embed) Modify(in Input, bid int) ([]Output, error) {
	if !strings.HasPrefix(in.Name, "dense_2") {
		in.Name = "model." + in.Name
	}
	return m.lfm2.Modify(in, bid)
}
