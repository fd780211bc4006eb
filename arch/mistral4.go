package arch

import "strings"

func init() {
	// Mistral4Config.__post_init__: num_key_value_heads =
	// num_attention_heads when None, head_dim = qk_nope_head_dim +
	// qk_rope_head_dim (whatever config.json says).
	derivedKeys["mistral4"] = append(derivedKeys["mistral4"], deriveKVHeads, deriveMistral4HeadDim)
}

// deriveMistral4HeadDim is Mistral4Config's head_dim = qk_nope_head_dim +
// qk_rope_head_dim (to_dict reports it; TextModel writes it as the key and
// value lengths before DeepseekV2Model overwrites them).
func deriveMistral4HeadDim(h HParams) {
	nope, ok1, err1 := h.Int("qk_nope_head_dim")
	rope, ok2, err2 := h.Int("qk_rope_head_dim")
	if ok1 && ok2 && err1 == nil && err2 == nil {
		h["head_dim"] = jsonInt(nope + rope)
	}
}

// mistral4Model is Mistral3Model.Mistral4Model (conversion/mistral3.py),
// what Mistral3ForConditionalGeneration and Ministral3ForCausalLM convert
// as when their (text) model_type is mistral4 (Mistral Small 4):
// DeepseekV2Model under the mistral4 architecture, whose experts are
// stored stacked and fused (mlp.experts.gate_up_proj [experts, 2·ff,
// hidden], mlp.experts.down_proj, without a .weight suffix) and map as
// they are, to ffn_gate_up_exps and ffn_down_exps.
type mistral4Model struct{ *deepseek2 }

func newMistral4(h HParams, dir string) (Model, error) {
	m, err := newDeepseek2(mistral4)(h, dir)
	if err != nil {
		return nil, err
	}
	return &mistral4Model{m.(*deepseek2)}, nil
}

// Modify is Mistral4Model.modify_tensors: the fused expert tensors get
// their .weight suffix, then DeepseekV2Model's (without MTP skipping or
// expert stacking).
func (m *mistral4Model) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	if strings.HasSuffix(name, ".down_proj") || strings.HasSuffix(name, ".gate_up_proj") {
		name += ".weight"
	}
	return m.modify(in, name, bid)
}
