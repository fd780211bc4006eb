package arch

import "github.com/ggufkit/ggufkit/gguf"

func init() {
	register(newSeedOss, "SeedOssForCausalLM")
}

// seedOss is SeedOssModel (conversion/olmo.py): TextModel unchanged.
type seedOss struct{ text }

func newSeedOss(h HParams, dir string) (Model, error) {
	t, err := newText("seed_oss", h, dir)
	return &seedOss{t}, err
}

func (m *seedOss) Vocab() VocabKind { return VocabGPT2 }

func (m *seedOss) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

func (m *seedOss) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }
