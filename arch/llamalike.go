package arch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newArcee, "ArceeForCausalLM")
	register(newApertus, "ApertusForCausalLM")
	// ArceeConfig and ApertusConfig: num_key_value_heads =
	// num_attention_heads when None; ArceeConfig's head_dim = hidden_size
	// // num_attention_heads when None.
	derivedKeys["arcee"] = append(derivedKeys["arcee"], deriveHeadDim, deriveKVHeads)
	derivedKeys["apertus"] = append(derivedKeys["apertus"], deriveKVHeads)
}

// arcee is ArceeModel (conversion/llama.py): LlamaModel under the arcee
// architecture, plus the sentence-transformers pooling type.
type arcee struct{ *llama }

func newArcee(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("arcee", h, dir)
	if err != nil {
		return nil, err
	}
	return &arcee{l}, nil
}

// Params is ArceeModel.set_gguf_parameters: LlamaModel's, then
// _try_set_pooling_type.
func (m *arcee) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.llama.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// apertus is ApertusModel (conversion/llama.py): LlamaModel under the
// apertus architecture without the Q/K permutation, whose per-layer xIELU
// activation parameters (mlp.act_fn.alpha_n, alpha_p, beta, eps: one value
// each) are not tensors of the GGUF but the float arrays xielu.*, which the
// converter adds while it prepares the tensors.
type apertus struct {
	*llama
	// xielu holds, per parameter, the source tensor of each block, and the
	// order in which the parameters' sets became complete.
	xielu    map[string]map[int]Input
	complete []string
}

func newApertus(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("apertus", h, dir)
	if err != nil {
		return nil, err
	}
	l.noPermute = true
	return &apertus{llama: l, xielu: map[string]map[int]Input{}}, nil
}

// xieluParams maps the act_fn parameter names to their GGUF keys.
var xieluParams = map[string]string{
	"alpha_n": "xielu.alpha_n", "alpha_p": "xielu.alpha_p", "beta": "xielu.beta", "eps": "xielu.eps",
}

// Modify is ApertusModel.modify_tensors: an xIELU parameter is held for
// its key (written once every block's value is there, in the order the
// sets complete); the rest is LlamaModel's.
func (m *apertus) Modify(in Input, bid int) ([]Output, error) {
	for p := range xieluParams {
		if !strings.HasSuffix(in.Name, ".act_fn."+p) {
			continue
		}
		if numel(in.Shape) != 1 {
			// .item() needs a single value.
			return nil, fmt.Errorf("xIELU parameter of shape %v, want one value", in.Shape)
		}
		if m.xielu[p] == nil {
			m.xielu[p] = map[int]Input{}
		}
		m.xielu[p][bid] = in
		if len(m.xielu[p]) == m.blocks {
			m.complete = append(m.complete, p)
		}
		return nil, nil
	}
	return m.llama.Modify(in, bid)
}

// ValueKVs returns the xielu.* arrays (float32, by block number), read
// with read, in the order their sets became complete.
func (m *apertus) ValueKVs(read func(Input) ([]float32, error)) ([]gguf.KV, error) {
	var kvs []gguf.KV
	for _, p := range m.complete {
		bids := make([]int, 0, len(m.xielu[p]))
		for b := range m.xielu[p] {
			bids = append(bids, b)
		}
		sort.Ints(bids)
		vals := make([]float32, len(bids))
		for i, b := range bids {
			v, err := read(m.xielu[p][b])
			if err != nil {
				return nil, err
			}
			if len(v) != 1 {
				return nil, fmt.Errorf("xIELU parameter %q: %d values", m.xielu[p][b].Source, len(v))
			}
			vals[i] = v[0]
		}
		kvs = append(kvs, gguf.KV{Key: xieluParams[p], Value: gguf.Array(vals)})
	}
	return kvs, nil
}
