package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newCodeShell, "CodeShellForCausalLM")
	register(newRefact, "GPTRefactForCausalLM")
}

// configKey is one key of a set_gguf_parameters written from a config.json
// key as it is.
type configKey struct {
	suffix, key string
	add         func(string, any) error
}

// addConfigKeys writes keys in order, each from its config.json key, which
// must be present.
func (t *text) addConfigKeys(keys []configKey) error {
	for _, s := range keys {
		v, ok := t.h[s.key]
		if !ok {
			return fmt.Errorf("config.json: %s is missing", s.key)
		}
		if err := s.add(s.suffix, v); err != nil {
			return err
		}
	}
	return nil
}

// gptCodeParams writes the keys CodeShellModel and RefactModel begin with:
// context_length (n_positions), embedding_length (n_embd), the
// feed-forward length ffn(n_embd), block_count and head_count (n_head).
func (t *text) gptCodeParams(ffn func(nEmbd int64) int64) (*kv, error) {
	k := &kv{arch: t.arch}
	nEmbd, err := t.h.MustInt("n_embd")
	if err != nil {
		return nil, err
	}
	if err := t.addConfigKeys([]configKey{
		{"context_length", "n_positions", k.u32},
		{"embedding_length", "n_embd", k.u32},
	}); err != nil {
		return nil, err
	}
	if err := k.u32OrArray("feed_forward_length", ffn(nEmbd)); err != nil {
		return nil, err
	}
	if err := k.u32("block_count", t.blocks); err != nil {
		return nil, err
	}
	if err := t.addConfigKeys([]configKey{{"attention.head_count", "n_head", k.u32OrArray}}); err != nil {
		return nil, err
	}
	return k, nil
}

// codeShell is CodeShellModel (conversion/codeshell.py): GPT-2's tensor
// names with GQA and NeoX RoPE, its own parameter list.
type codeShell struct{ text }

func newCodeShell(h HParams, dir string) (Model, error) {
	t, err := newText("codeshell", h, dir)
	return &codeShell{t}, err
}

func (m *codeShell) Vocab() VocabKind { return VocabGPT2 }

// Params is CodeShellModel.set_gguf_parameters: a feed-forward length of
// 4 × n_embd, num_query_groups KV heads, rope base 10000 with a linear
// scaling of factor 1.
func (m *codeShell) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.gptCodeParams(func(nEmbd int64) int64 { return 4 * nEmbd })
	if err != nil {
		return nil, err
	}
	if err := m.addConfigKeys([]configKey{
		{"attention.head_count_kv", "num_query_groups", k.u32OrArray},
		{"attention.layer_norm_epsilon", "layer_norm_epsilon", k.f32},
	}); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	if err := k.f32("rope.freq_base", 10000.0); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("linear")) // RopeScalingType.LINEAR
	if err := k.f32("rope.scaling.factor", 1.0); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

func (m *codeShell) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}

// refact is RefactModel (conversion/refact.py): ALiBi, RMS norms, one KV
// head, the fused kv and gate_up_proj split by rows.
type refact struct{ text }

func newRefact(h HParams, dir string) (Model, error) {
	t, err := newText("refact", h, dir)
	return &refact{t}, err
}

func (m *refact) Vocab() VocabKind { return VocabGPT2 }

// refactFFN is RefactModel's feed-forward length: int(2 × 4·n_embd / 3)
// rounded up to a multiple of 256.
func refactFFN(nEmbd int64) int64 {
	hidden := 2 * 4 * nEmbd / 3
	return 256 * ((hidden + 255) / 256)
}

// Params is RefactModel.set_gguf_parameters.
func (m *refact) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.gptCodeParams(refactFFN)
	if err != nil {
		return nil, err
	}
	if err := k.u32OrArray("attention.head_count_kv", 1); err != nil {
		return nil, err
	}
	if err := m.addConfigKeys([]configKey{{"attention.layer_norm_rms_epsilon", "layer_norm_epsilon", k.f32}}); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify splits attn.kv into K (one head) and V, and mlp.gate_up_proj into
// gate and up at the feed-forward length; attn.q is renamed.
func (m *refact) Modify(in Input, bid int) ([]Output, error) {
	nEmbd, err := m.h.MustInt("n_embd")
	if err != nil {
		return nil, err
	}
	nHead, err := m.h.MustInt("n_head")
	if err != nil {
		return nil, err
	}
	if nHead <= 0 {
		return nil, &ConfigError{Key: "n_head", Value: nHead, Msg: "is not a head count"}
	}
	var cut int64
	var parts [2]string
	switch in.Name {
	case fmt.Sprintf("transformer.h.%d.attn.q.weight", bid):
		name := fmt.Sprintf("blk.%d.attn_q.weight", bid)
		o := identity(in, name, bid)
		o.HFName = name
		return []Output{o}, nil
	case fmt.Sprintf("transformer.h.%d.attn.kv.weight", bid):
		cut, parts = nEmbd/nHead, [2]string{"k", "v"}
	case fmt.Sprintf("transformer.h.%d.mlp.gate_up_proj.weight", bid):
		cut, parts = refactFFN(nEmbd), [2]string{"gate", "up"}
	default:
		return m.mapped(in, in.Name, bid, nil)
	}
	if len(in.Shape) == 0 || in.Shape[0] < cut {
		return nil, fmt.Errorf("tensor %q of shape %v has fewer than %d rows", in.Name, in.Shape, cut)
	}
	var outs []Output
	for i, r := range [][2]int64{{0, cut}, {cut, in.Shape[0]}} {
		var name string
		if parts[0] == "k" {
			name = fmt.Sprintf("blk.%d.attn_%s.weight", bid, parts[i])
		} else {
			name = fmt.Sprintf("blk.%d.ffn_%s.weight", bid, parts[i])
		}
		o := identity(in, name, bid)
		o.HFName = name // super().modify_tensors sees the GGUF name
		o.Build = rowRange(in.Shape, r[0], r[1])
		o.Shape = append([]int64{r[1] - r[0]}, in.Shape[1:]...)
		outs = append(outs, o)
	}
	return outs, nil
}
