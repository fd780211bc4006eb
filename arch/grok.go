package arch

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGrok, "GrokForCausalLM", "Grok1ForCausalLM")
}

// grok is GrokModel (conversion/grok.py, Grok-1, remote code): TextModel's
// parameters with the soft-capping, attention output, embedding and logit
// scales, and the experts (moe.{x}.linear, linear_1, linear_v, or the
// block_sparse_moe.experts.{x}.w1, w2, w3 of later checkpoints) stacked per
// block. Refused: YaRN rope configs (rope_type yarn / original) and expert
// tensors split across shards, which the converter concatenates.
type grok struct {
	text
	experts *expertStacker
	// grok2Names: the experts are named block_sparse_moe.experts.{x}.w*.
	grok2Names bool
}

func newGrok(h HParams, dir string) (Model, error) {
	if t, _ := h["rope_type"].(string); t == "yarn" || t == "original" {
		return nil, &ConfigError{Key: "rope_type", Value: t, Msg: "asks for YaRN rope parameters, which are not converted"}
	}
	t, err := newText("grok", h, dir)
	if err != nil {
		return nil, err
	}
	return &grok{text: t}, nil
}

// Vocab is GrokModel.set_vocab: SentencePiece with a tokenizer.model, else
// (Grok-2's tokenizer.json) the gpt2 routine.
func (m *grok) Vocab() VocabKind {
	if isFile(filepath.Join(m.dir, "tokenizer.model")) {
		return VocabSentencePiece
	}
	return VocabGPT2
}

// Params is GrokModel.set_gguf_parameters.
func (m *grok) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.f32("attn_logit_softcapping", m.h.get("attn_logit_softcapping", 30.0)); err != nil {
		return nil, err
	}
	if err := k.f32("router_logit_softcapping", m.h.get("router_logit_softcapping", 30.0)); err != nil {
		return nil, err
	}
	if v := m.h["final_logit_softcapping"]; Truthy(v) {
		if err := k.f32("final_logit_softcapping", v); err != nil {
			return nil, err
		}
	}
	if v := m.h["moe_intermediate_size"]; v != nil {
		if err := k.u32OrArray("expert_feed_forward_length", v); err != nil {
			return nil, err
		}
	}
	if v := m.h["attn_temperature_len"]; Truthy(v) {
		if err := k.u32("attention.temperature_length", v); err != nil {
			return nil, err
		}
	}
	scale, ok := m.h["attn_output_multiplier"]
	if !ok || scale == nil {
		dim, err := headDim(m.h)
		if err != nil {
			return nil, err
		}
		scale = math.Pow(float64(dim), -0.5)
	}
	if err := k.f32("attention.output_scale", scale); err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{
		{"embedding_multiplier_scale", "embedding_scale"},
		{"output_multiplier_scale", "logit_scale"},
	} {
		v, ok := m.h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Value: nil, Msg: "is missing"}
		}
		if err := k.f32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// grokExpertNames pairs Grok-1's expert projections with their later names.
var grokExpertNames = map[string]string{"linear": "w1", "linear_1": "w2", "linear_v": "w3"}

// Modify is GrokModel.modify_tensors: expert tensors are held until their
// block is complete and stacked as moe.{linear, linear_1, linear_v}; the
// converter writes a block's stack before the first tensor that follows
// its experts, which is where it completes.
func (m *grok) Modify(in Input, bid int) ([]Output, error) {
	if !strings.Contains(in.Name, ".moe.") && !strings.Contains(in.Name, ".block_sparse_moe.experts.") {
		return m.mapped(in, in.Name, bid, nil)
	}
	if m.experts == nil {
		n, err := expertCount(m.h, "num_local_experts")
		if err != nil {
			return nil, err
		}
		m.experts = newExpertStacker(n, m.blocks, []string{"linear", "linear_1", "linear_v"}, m.names)
		m.grok2Names = strings.Contains(in.Name, ".block_sparse_moe.experts.")
	}
	if bid >= 0 && bid < len(m.experts.blocks) {
		if _, dup := m.experts.blocks[bid][in.Name]; dup {
			return nil, fmt.Errorf("%s: an expert tensor split across files (the converter concatenates the parts; not supported)", in.Name)
		}
	}
	return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
		if m.grok2Names {
			return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, grokExpertNames[wid])
		}
		return fmt.Sprintf("transformer.decoder_layer.%d.moe.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("transformer.decoder_layer.%d.moe.%s.weight", bid, wid)
	})
}

func (m *grok) Finish() error { return m.experts.finish() }
