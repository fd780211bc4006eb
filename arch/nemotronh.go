package arch

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newNemotronH, "NemotronHForCausalLM")
}

// nemotronDenseReason is why a dense Nemotron-H is refused.
const nemotronDenseReason = "with transformers 5.24 and later, NemotronHConfig always reports " +
	"num_experts_per_tok (default 2), so llama.cpp's NemotronHModel takes its MoE path for every checkpoint: a " +
	"dense Nemotron-H (Nemotron-H-8B, Nemotron-Nano-9B-v2) comes out as nemotron_h_moe with feed_forward_length 0 " +
	"on its MLP blocks and expert keys from the config class's defaults, which llama.cpp's loader then takes for " +
	"recurrent blocks and cannot load; ggufkit does not write that file"

// nemotronPattern maps hybrid_override_pattern's characters to layer
// types (NemotronHConfig._pattern_to_list).
var nemotronPattern = map[rune]string{'M': "linear_attention", 'E': "moe", '*': "full_attention", '-': "mlp"}

// nemotronMambaKeys are the legacy mamba_-prefixed config.json keys
// NemotronHConfig.__post_init__ pops into its fields.
var nemotronMambaKeys = [][2]string{
	{"mamba_n_groups", "n_groups"}, {"mamba_d_conv", "conv_kernel"}, {"mamba_expand", "expand"},
	{"mamba_dt_min", "time_step_min"}, {"mamba_dt_max", "time_step_max"}, {"mamba_dt_limit", "time_step_limit"},
	{"mamba_dt_init_floor", "time_step_floor"}, {"mamba_conv_bias", "use_conv_bias"}, {"mamba_chunk_size", "chunk_size"},
}

// deriveNemotronH is NemotronHConfig.__post_init__ as to_dict reports it:
// the legacy mamba_ keys under their field names, hybrid_override_pattern
// (popped) as the layers_block_type list when that is unset, else the
// default four layers.
func deriveNemotronH(h HParams) {
	for _, kv := range nemotronMambaKeys {
		if v, ok := h[kv[0]]; ok {
			h[kv[1]] = v
			delete(h, kv[0])
		}
	}
	pattern, hasPattern := h["hybrid_override_pattern"]
	delete(h, "hybrid_override_pattern")
	if !unset(h, "layers_block_type") {
		return
	}
	if s, ok := pattern.(string); ok && hasPattern {
		types := make([]any, 0, len(s))
		for _, c := range s {
			t, ok := nemotronPattern[c]
			if !ok {
				t = string(c) // transformers raises a KeyError; newNemotronH refuses it
			}
			types = append(types, t)
		}
		h["layers_block_type"] = types
		return
	}
	h["layers_block_type"] = []any{"linear_attention", "moe", "full_attention", "mlp"}
}

// nemotronH is NemotronHModel (conversion/nemotron.py) on its MoE path
// (nemotron_h_moe): GraniteHybridModel with one kind of block per layer
// from layers_block_type — Mamba-2 mixer, attention, or routed experts
// (relu² up/down, stacked) with a shared expert and a sigmoid router.
type nemotronH struct {
	*graniteHybrid
	types   []string
	experts *expertStacker
}

func newNemotronH(h HParams, dir string) (Model, error) {
	raw, ok := h["layers_block_type"].([]any)
	if !ok || len(raw) == 0 {
		return nil, &ConfigError{Key: "layers_block_type", Value: h["layers_block_type"], Msg: "is not a list of layer types"}
	}
	types := make([]string, len(raw))
	hasMoE := false
	for i, v := range raw {
		t, _ := v.(string)
		switch t {
		case "linear_attention", "mamba", "full_attention", "attention", "moe":
		case "mlp":
			return nil, &UnsupportedError{Arch: "NemotronHForCausalLM", Reason: nemotronDenseReason}
		default:
			return nil, &ConfigError{Key: "layers_block_type", Value: h["layers_block_type"], Msg: fmt.Sprintf("has an unknown layer type %v", v)}
		}
		hasMoE = hasMoE || t == "moe"
		types[i] = t
	}
	if !hasMoE {
		return nil, &UnsupportedError{Arch: "NemotronHForCausalLM", Reason: nemotronDenseReason}
	}
	if n, err := asInt(h["num_nextn_predict_layers"]); err == nil && n > 0 {
		return nil, &UnsupportedError{Arch: "NemotronHForCausalLM", Reason: "num_nextn_predict_layers > 0: the MTP head " +
			"llama.cpp's converter folds into an extra block is not converted by ggufkit"}
	}
	if h["moe_latent_size"] != nil {
		return nil, &UnsupportedError{Arch: "NemotronHForCausalLM", Reason: "moe_latent_size is set (latent MoE " +
			"projections): not converted by ggufkit"}
	}
	hp := maps.Clone(h)
	hp["num_hidden_layers"] = int64(len(types))
	attnLayers := func(_ HParams, blocks int) ([]bool, error) {
		attn := make([]bool, blocks)
		for i, t := range types {
			attn[i] = t == "full_attention" || t == "attention"
		}
		return attn, nil
	}
	g, err := newGraniteHybridAs(hp, dir, "nemotron_h_moe", attnLayers)
	if err != nil {
		return nil, err
	}
	// NemotronHModel: d_inner is num_heads × mamba_head_dim, not expand's.
	nHeads, err := hint(hp, "num_heads")
	if err != nil {
		return nil, err
	}
	g.ssm.dInner = nHeads * g.ssm.dModel
	return &nemotronH{graniteHybrid: g, types: types}, nil
}

func (m *nemotronH) is(bid int, types ...string) bool {
	if bid < 0 || bid >= len(m.types) {
		return false
	}
	for _, t := range types {
		if m.types[bid] == t {
			return true
		}
	}
	return false
}

// Params is NemotronHModel.set_gguf_parameters on its MoE path:
// GraniteHybridModel's, then the head sizes, feed_forward_length per
// layer (moe_intermediate_size on expert blocks, replacing the scalar in
// place) and the expert keys.
func (m *nemotronH) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.graniteHybrid.Params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	headDim, _, ok := h.Find("head_dim", "attention_head_dim")
	if !ok || headDim == nil {
		return nil, fmt.Errorf("%w: could not find the attention head dim in config", ErrConfig)
	}
	ffn, err := h.MustInt("moe_intermediate_size")
	if err != nil {
		return nil, err
	}
	ffVec := make([]any, len(m.types))
	for i := range ffVec {
		ffVec[i] = int64(0)
		if m.is(i, "moe") {
			ffVec[i] = ffn
		}
	}
	steps := []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"attention.key_length", headDim, k.u32},
		{"attention.value_length", headDim, k.u32},
		{"feed_forward_length", ffVec, k.i32Array},
		{"expert_used_count", h["num_experts_per_tok"], k.u32},
		{"expert_feed_forward_length", ffn, k.u32},
		{"expert_shared_feed_forward_length", h["moe_shared_expert_intermediate_size"], k.u32},
		{"expert_count", h["n_routed_experts"], k.u32},
		{"expert_shared_count", h["n_shared_experts"], k.u32},
		{"expert_weights_norm", h["norm_topk_prob"], k.boolean},
		{"expert_weights_scale", h["routed_scaling_factor"], k.f32},
		{"expert_group_count", h["n_group"], k.u32},
	}
	for _, s := range steps {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is NemotronHModel.modify_tensors on its MoE path: the router's
// correction bias as it is, the experts' up and down projections stacked,
// the Mamba-2 tensors and attention blocks as GraniteHybridModel, the
// rest (router, shared expert, norms) as ModelBase.
func (m *nemotronH) Modify(in Input, bid int) ([]Output, error) {
	switch {
	case bid >= 0 && strings.Contains(in.Name, "mixer.experts."):
		if m.experts == nil {
			n, err := expertCount(m.h, "n_routed_experts")
			if err != nil {
				return nil, err
			}
			m.experts = newExpertStacker(n, m.blocks, []string{"down_proj", "up_proj"}, m.names)
		}
		return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("backbone.layers.%d.mixer.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.mlp.experts.%s.weight", bid, wid)
		})
	case m.is(bid, "linear_attention", "mamba"):
		return m.ssm.Modify(in, bid)
	case m.is(bid, "full_attention", "attention"):
		return m.graniteMoe.Modify(in, bid)
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *nemotronH) Finish() error { return m.experts.finish() }
