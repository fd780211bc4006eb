package arch

import "github.com/ggufkit/ggufkit/gguf"

func init() {
	register(newNanbeige, "NanbeigeForCausalLM")
}

// nanbeige is NanbeigeModel (conversion/nanbeige.py): LlamaModel under
// the nanbeige architecture, with the loop count and whether the output
// norm is skipped between loops.
type nanbeige struct{ *llama }

func newNanbeige(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("nanbeige", h, dir)
	if err != nil {
		return nil, err
	}
	return &nanbeige{l}, nil
}

// Params is NanbeigeModel.set_gguf_parameters: LlamaModel's, then
// num_loops (int(num_loops or 1), at least 1) and skip_loop_final_norm
// (its truth value, false when unset).
func (m *nanbeige) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.llama.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	loops := int64(1)
	if v := m.h["num_loops"]; Truthy(v) {
		f, err := asFloat(v)
		if err != nil || f >= 1<<32 {
			return nil, &ConfigError{Key: "num_loops", Value: v, Msg: "is not a loop count"}
		}
		loops = max(int64(f), 1)
	}
	if err := k.u32("num_loops", loops); err != nil {
		return nil, err
	}
	k.l.Set(k.key("skip_loop_final_norm"), gguf.Bool(Truthy(m.h["skip_loop_final_norm"])))
	return k.l.KVs(), nil
}
