package arch

import (
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newLFM2(false), "Lfm2ForCausalLM", "LFM2ForCausalLM")
	register(newLFM2(true), "Lfm2MoeForCausalLM")
	derivedKeys["lfm2"] = append(derivedKeys["lfm2"], deriveLFM2)
}

// lfm2 is LFM2Model and LFM2MoeModel (conversion/lfm2.py): Liquid AI's
// hybrids of gated short-convolution blocks and attention blocks, the MoE
// variant with sigmoid-routed experts after num_dense_layers dense blocks.
type lfm2 struct {
	text
	moe     bool
	experts *expertStacker
}

// deriveLFM2 is Lfm2Config.__post_init__: layer_types from full_attn_idxs
// (every layer attention when there is neither), and block_ff_dim popped
// into intermediate_size.
func deriveLFM2(h HParams) {
	if unset(h, "layer_types") {
		n, err := asInt(h["num_hidden_layers"])
		if err == nil && isInt(h["num_hidden_layers"]) && n >= 0 && n <= 1<<16 {
			idx, _ := h["full_attn_idxs"].([]any)
			attn := map[int64]bool{}
			for _, v := range idx {
				if i, err := asInt(v); err == nil && isInt(v) {
					attn[i] = true
				}
			}
			types := make([]any, n)
			for i := range n {
				types[i] = "conv"
				if idx == nil || attn[i] {
					types[i] = "full_attention"
				}
			}
			h["layer_types"] = types
		}
	}
	if v, ok := h["block_ff_dim"]; ok {
		h["intermediate_size"] = v
		delete(h, "block_ff_dim")
	}
}

func newLFM2(moe bool) Constructor {
	return func(h HParams, dir string) (Model, error) {
		ggufArch := "lfm2"
		if moe {
			ggufArch = "lfm2moe"
		}
		t, err := newText(ggufArch, h, dir)
		if err != nil {
			return nil, err
		}
		// set_gguf_parameters replaces num_key_value_heads by a per-layer
		// list: the count on attention layers ("conv" is the other type;
		// the MoE class counts only "full_attention"), 0 elsewhere.
		types, err := layerTypes(h, t.blocks)
		if err != nil {
			return nil, err
		}
		attn := func(s string) bool { return s != "conv" }
		if moe {
			attn = func(s string) bool { return s == "full_attention" }
		}
		kv, err := perLayerKVHeads(h, types, attn)
		if err != nil {
			return nil, err
		}
		t.h = maps.Clone(h)
		t.h["num_key_value_heads"] = kv
		m := &lfm2{text: t, moe: moe}
		if moe {
			n, err := expertCount(h, "num_local_experts", "num_experts")
			if err != nil {
				return nil, err
			}
			m.experts = newExpertStacker(n, t.blocks, []string{"w1", "w2", "w3"}, t.names)
		}
		return m, nil
	}
}

func (m *lfm2) Vocab() VocabKind { return VocabGPT2 }

// Params is LFM2Model.set_gguf_parameters / LFM2MoeModel's.
func (m *lfm2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	if m.moe {
		if err := k.u32("expert_feed_forward_length", h["moe_intermediate_size"]); err != nil {
			return nil, err
		}
		if err := k.u32("leading_dense_block_count", h["num_dense_layers"]); err != nil {
			return nil, err
		}
		k.l.Set(k.key("expert_gating_func"), gguf.Uint32(2)) // ExpertGatingFuncType.SIGMOID
	}
	if err := k.u32("vocab_size", h["vocab_size"]); err != nil {
		return nil, err
	}
	if err := k.u32("shortconv.l_cache", h["conv_L_cache"]); err != nil {
		return nil, err
	}
	if m.moe {
		return k.l.KVs(), nil
	}
	if err := k.f32("attention.layer_norm_rms_epsilon", h["norm_eps"]); err != nil {
		return nil, err
	}
	ff, err := m.feedForwardLength()
	if err != nil {
		return nil, err
	}
	if err := k.u32("feed_forward_length", ff); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// feedForwardLength is LFM2Model._add_feed_forward_length: block_ff_dim
// (or intermediate_size), when block_auto_adjust_ff_dim cut to 2/3, times
// block_ffn_dim_multiplier and rounded up to block_multiple_of.
func (m *lfm2) feedForwardLength() (int64, error) {
	v, key, ok := m.h.Find("block_ff_dim", "intermediate_size")
	if !ok {
		return 0, &ConfigError{Key: "intermediate_size", Value: nil, Msg: "is missing"}
	}
	ff, err := asInt(v)
	if err != nil || !isInt(v) || ff < 0 || ff > 1<<32-1 {
		return 0, &ConfigError{Key: key, Value: v, Msg: "is not a feed-forward length"}
	}
	auto, ok := m.h.Bool("block_auto_adjust_ff_dim")
	if !ok {
		return 0, &ConfigError{Key: "block_auto_adjust_ff_dim", Value: m.h["block_auto_adjust_ff_dim"], Msg: "is not a boolean"}
	}
	if !auto {
		return ff, nil
	}
	ff = int64(float64(2*ff) / 3)
	if mv := m.h["block_ffn_dim_multiplier"]; mv != nil {
		mult, err := asFloat(mv)
		if err != nil || mult < 0 || math.IsInf(mult, 0) || mult*float64(ff) > 1<<32 {
			return 0, &ConfigError{Key: "block_ffn_dim_multiplier", Value: mv, Msg: "is not a usable multiplier"}
		}
		ff = int64(mult * float64(ff))
	}
	mo := m.h["block_multiple_of"]
	mult, err := asInt(mo)
	if err != nil || !isInt(mo) || mult <= 0 || mult > 1<<32 {
		// The converter divides by it.
		return 0, &ConfigError{Key: "block_multiple_of", Value: mo, Msg: "is not a positive integer"}
	}
	return mult * ((ff + mult - 1) / mult), nil
}

// audioParts are ConformerAudioModel.is_audio_tensor's name parts, which
// LFM2Model's filter drops (LFM2-Audio checkpoints).
var audioParts = []string{"audio", "codebook", "conformer", "depth_embedding", "depthformer", "depth_linear"}

// Filter is LFM2Model.filter_tensors (audio tensors dropped, the audio
// models' "lfm." prefix made "model.") or LFM2MoeModel's (expert_bias
// renamed to a bias), then TextModel's.
func (m *lfm2) Filter(name string) (string, bool) {
	if m.moe {
		if strings.HasSuffix(name, ".expert_bias") {
			name = strings.Replace(name, ".expert_bias", ".expert_bias.bias", 1)
		}
		return m.text.Filter(name)
	}
	for _, p := range audioParts {
		if strings.Contains(name, p) {
			return "", false
		}
	}
	return m.text.Filter(strings.ReplaceAll(name, "lfm.", "model."))
}

// Modify is LFM2Model.modify_tensors / LFM2MoeModel's: the short
// convolution's [channels, 1, kernel] weight squeezed to 2-D, per-expert
// weights stacked.
func (m *lfm2) Modify(in Input, bid int) ([]Output, error) {
	var shape []int64
	if strings.Contains(in.Name, "conv.conv") {
		s, err := squeezeDim(in.Shape, 1)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", in.Name, err)
		}
		shape = s
	}
	if m.moe && strings.Contains(in.Name, "experts") {
		if shape != nil {
			in.Shape = shape
		}
		return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.feed_forward.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("layers.%d.feed_forward.experts.%s.weight", bid, wid)
		})
	}
	out, err := m.mapped(in, in.Name, bid, nil)
	if err != nil {
		return nil, err
	}
	if shape != nil {
		out[0].Shape = shape
	}
	return out, nil
}

func (m *lfm2) Finish() error { return m.experts.finish() }
