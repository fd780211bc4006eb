package arch

import "github.com/ggufkit/ggufkit/gguf"

func init() {
	register(newMaincoder, "MaincoderForCausalLM")
}

// maincoder is MaincoderModel (conversion/maincoder.py, remote code):
// TextModel's tensors (q/k norms, no Q/K permutation), the GPT-2
// vocabulary, head_dim as the rope dimension count.
type maincoder struct{ text }

func newMaincoder(h HParams, dir string) (Model, error) {
	t, err := newText("maincoder", h, dir)
	return &maincoder{t}, err
}

func (m *maincoder) Vocab() VocabKind { return VocabGPT2 }

// Params is MaincoderModel.set_gguf_parameters: TextModel's keys, then
// head_dim (when set) as the rope dimension count.
func (m *maincoder) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if v := m.h["head_dim"]; v != nil {
		if err := k.u32("rope.dimension_count", v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

func (m *maincoder) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}
