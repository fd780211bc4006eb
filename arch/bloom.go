package arch

import (
	"fmt"
	"regexp"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newBloom, "BloomForCausalLM", "BloomModel")
}

// bloom is BloomModel (conversion/bloom.py): ALiBi (no rotary), a norm
// after the token embeddings, and the fused query_key_value stored head by
// head as (q, k, v), reordered to Q|K|V as for GPT-NeoX.
type bloom struct{ text }

func newBloom(h HParams, dir string) (Model, error) {
	t, err := newText("bloom", h, dir)
	return &bloom{t}, err
}

func (m *bloom) Vocab() VocabKind { return VocabGPT2 }

// dims is the head count (n_head, else num_attention_heads) and the width
// (hidden_size, else n_embed), as the converter reads them.
func (m *bloom) dims() (nHead, nEmbd int64, err error) {
	if nHead, err = m.h.MustInt("n_head", "num_attention_heads"); err != nil {
		return 0, 0, err
	}
	if nEmbd, err = m.h.MustInt("hidden_size", "n_embed"); err != nil {
		return 0, 0, err
	}
	if nHead <= 0 || nEmbd%nHead != 0 {
		return 0, 0, &ConfigError{Key: "n_head", Value: nHead, Msg: fmt.Sprintf("does not divide the width %d", nEmbd)}
	}
	return nHead, nEmbd, nil
}

// Params is BloomModel.set_gguf_parameters: the context length is
// seq_length, else the width; the feed-forward length 4 × the width; as
// many KV heads as heads.
func (m *bloom) Params(ft gguf.FileType) ([]gguf.KV, error) {
	nHead, nEmbd, err := m.dims()
	if err != nil {
		return nil, err
	}
	ctx := any(nEmbd)
	if v, ok := m.h["seq_length"]; ok {
		ctx = v
	}
	eps, ok := m.h["layer_norm_epsilon"]
	if !ok {
		return nil, fmt.Errorf("config.json: layer_norm_epsilon is missing")
	}
	k := &kv{arch: m.arch}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", ctx, k.u32},
		{"embedding_length", nEmbd, k.u32},
		{"feed_forward_length", 4 * nEmbd, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", nHead, k.u32OrArray},
		{"attention.head_count_kv", nHead, k.u32OrArray},
		{"attention.layer_norm_epsilon", eps, k.f32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

var (
	// bloomPrefix is the converter's re.sub(r'transformer\.', '', name).
	bloomPrefix = regexp.MustCompile(`transformer\.`)
	bloomQKV    = regexp.MustCompile(`^h\.\d+\.self_attention\.query_key_value\.(weight|bias)`)
)

// Modify drops "transformer." from the name (BloomForCausalLM's prefix)
// and reorders the fused QKV weight and bias.
func (m *bloom) Modify(in Input, bid int) ([]Output, error) {
	name := bloomPrefix.ReplaceAllString(in.Name, "")
	if !bloomQKV.MatchString(name) {
		return m.mapped(in, name, bid, nil)
	}
	nHead, nEmbd, err := m.dims()
	if err != nil {
		return nil, err
	}
	if len(in.Shape) == 0 || len(in.Shape) > 2 || in.Shape[0] != 3*nEmbd || (len(in.Shape) == 2 && in.Shape[1] != nEmbd) {
		return nil, fmt.Errorf("%s: shape %v does not hold %d heads of a %d-wide QKV", in.Name, in.Shape, nHead, nEmbd)
	}
	return m.mapped(in, name, bid, qkvPerHeadToBlocks(in.Shape, nHead, nEmbd/nHead))
}
