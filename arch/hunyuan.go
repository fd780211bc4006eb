package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newHunYuanDense, "HunYuanDenseV1ForCausalLM")
	// HunYuanDenseV1Config.__post_init__: num_key_value_heads = heads when None.
	derivedKeys["hunyuan_v1_dense"] = append(derivedKeys["hunyuan_v1_dense"], deriveKVHeads)
}

// VocabAdjuster is a model whose set_vocab changes what its tokenizer
// routine wrote (special token ids read from config or generation files).
type VocabAdjuster interface {
	AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error)
}

// hunYuanDense is HunYuanModel (conversion/hunyuan.py): TextModel's
// tensors, dynamic NTK-alpha rope folded into the base, and the
// tokenizer.json branch of its set_vocab.
type hunYuanDense struct {
	text
}

func newHunYuanDense(h HParams, dir string) (Model, error) {
	t, err := newText("hunyuan-dense", h, dir)
	if err != nil {
		return nil, err
	}
	return &hunYuanDense{text: t}, nil
}

func (m *hunYuanDense) Vocab() VocabKind { return VocabGPT2 }

// AdjustVocab is the end of HunYuanModel.set_vocab: eos replaced by
// eod_token_id, eot from generation_config.json's eos_token_id list. Its
// tiktoken branch (no tokenizer.json: remote code's mergeable_ranks) and
// a negative pad_token_id are refused.
func (m *hunYuanDense) AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error) {
	if m.dir != "" {
		if _, err := os.Stat(filepath.Join(m.dir, "tokenizer.json")); err != nil {
			return nil, fmt.Errorf("%w: HunYuan without tokenizer.json: the converter reads the remote-code tiktoken tokenizer (mergeable_ranks), which is not supported", ErrConfig)
		}
	}
	if p, ok, err := m.h.Int("pad_token_id"); err == nil && ok && p < 0 {
		return nil, &ConfigError{Key: "pad_token_id", Value: m.h["pad_token_id"], Msg: "is negative (HunyuanVL's special-token guard is not supported)"}
	}
	var l gguf.KVList
	l.Append(kvs...)
	if v := m.h["eod_token_id"]; v != nil {
		n, err := asInt(v)
		if err != nil || n < 0 || n > 1<<32-1 {
			return nil, &ConfigError{Key: "eod_token_id", Value: v, Msg: "is not a token id"}
		}
		l.Set(gguf.KeyTokenizerEOSID, gguf.Uint32(uint32(n)))
	}
	if m.dir != "" {
		data, err := os.ReadFile(filepath.Join(m.dir, "generation_config.json"))
		if err == nil {
			var gc map[string]any
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(&gc); err != nil {
				return nil, fmt.Errorf("generation_config.json: %w", err)
			}
			if eos, ok := gc["eos_token_id"].([]any); ok && len(eos) >= 2 {
				n, err := asInt(eos[0])
				if err != nil || n < 0 || n > 1<<32-1 {
					return nil, &ConfigError{Key: "generation_config.json eos_token_id[0]", Value: eos[0], Msg: "is not a token id"}
				}
				l.Set(gguf.KeyTokenizerEOTID, gguf.Uint32(uint32(n)))
			}
		}
	}
	return l.KVs(), nil
}

// Params is HunYuanModel.set_gguf_parameters: TextModel's (without an
// expert count for num_experts ≤ 1), then for dynamic rope the base
// scaled by alpha^(head_dim/(head_dim-2)), no rope scaling, and a 256k
// context.
func (m *hunYuanDense) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	rp := m.ropeParams()
	typ, _ := rp["rope_type"].(string)
	if typ != "dynamic" && typ != "xdrope" {
		return k.l.KVs(), nil
	}
	alpha, base := 50.0, 10000.0
	if v, ok := rp["alpha"]; ok {
		if alpha, err = asFloat(v); err != nil {
			return nil, &ConfigError{Key: "rope_parameters.alpha", Value: v, Msg: "is not a number"}
		}
	}
	if v, ok := rp["rope_theta"]; ok {
		if base, err = asFloat(v); err != nil {
			return nil, &ConfigError{Key: "rope_parameters.rope_theta", Value: v, Msg: "is not a number"}
		}
	}
	hd, err := m.h.MustInt("head_dim")
	if err != nil {
		return nil, err
	}
	if hd == 2 {
		return nil, &ConfigError{Key: "head_dim", Value: m.h["head_dim"], Msg: "is 2: the alpha exponent d/(d-2) divides by zero"}
	}
	scaled := base * math.Pow(alpha, float64(hd)/float64(hd-2))
	if err := k.f32("rope.freq_base", scaled); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	k.l.Set(k.key("rope.scaling.factor"), gguf.Float32(1))
	if typ == "dynamic" {
		ctx, _, _ := m.h.Int("max_position_embeddings")
		if base != 10000 || (ctx != 32*1024 && ctx != 256*1024) {
			return nil, fmt.Errorf("%w: HunYuan dynamic rope: the converter asserts rope_theta 10000 and max_position_embeddings 32k or 256k (got %v, %d)", ErrConfig, base, ctx)
		}
		k.l.Set(k.key("rope.scaling.original_context_length"), gguf.Uint32(256*1024))
		k.l.Set(k.key("context_length"), gguf.Uint32(256*1024))
	}
	return k.l.KVs(), nil
}

// Modify is HunYuanModel.modify_tensors: lm_head dropped when tied.
func (m *hunYuanDense) Modify(in Input, bid int) ([]Output, error) {
	if in.Name == "lm_head.weight" && Truthy(m.h["tie_word_embeddings"]) {
		return nil, nil
	}
	return m.mapped(in, in.Name, bid, nil)
}
