package arch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newNomicBert, "NomicBertModel")
	derivedKeys["nomic_bert"] = append(derivedKeys["nomic_bert"], deriveNomicRopeTheta)
}

// deriveNomicRopeTheta is transformers' NomicBertConfig, which does not
// know the remote config's rotary_emb_base: to_dict's rope parameters get
// the class's default base whatever rotary_emb_base says, and the
// converter reads that first (nomic-embed-text-v1.5's 1000 agrees;
// v2-moe's 10000 is written as 1000, as llama.cpp writes it).
func deriveNomicRopeTheta(h HParams) {
	known := slices.DeleteFunc(slices.Clone(ropeThetaKeys), func(k string) bool { return k == "rotary_emb_base" })
	if hasRopeTheta(h, known, "full_attention") {
		return
	}
	if classes, err := loadDefaults(); err == nil && classes["nomic_bert"] != nil && classes["nomic_bert"].RopeTheta != nil {
		h["rope_theta"] = classes["nomic_bert"].RopeTheta
	}
}

// nomicBert is NomicBertModel (conversion/bert.py): BertModel under the
// nomic-bert architecture, with the converter's checks of the remote
// config, or with moe_every_n_layers under nomic-bert-moe
// (nomic-embed-text-v2-moe): GELU MLPs with biases, every n-th one a
// mixture of experts stored as two fused matrices (mlp.experts.mlp.w1 and
// w2, [experts·n_inner, n_embd] each). A tokenizer.json of model type
// Unigram makes the vocabulary XLM-R's (XLMRobertaModel's routine and its
// position offset), WordPiece BERT's.
type nomicBert struct {
	*bert
	moe   bool
	vocab VocabKind
}

// maxTokenizerJSON bounds the tokenizer.json read to tell its model type
// (XLM-R's is 17 MB).
const maxTokenizerJSON = 1 << 28

func newNomicBert(h HParams, dir string) (Model, error) {
	moe := Truthy(h["moe_every_n_layers"])
	if err := checkNomicConfig(h, moe); err != nil {
		return nil, err
	}
	typ, err := tokenizerModelType(dir)
	if err != nil {
		return nil, err
	}
	h = maps.Clone(h)
	vocab := VocabBert
	switch typ {
	case "WordPiece":
	case "Unigram":
		// _xlmroberta_tokenizer_init: max_position_embeddings less
		// pad_token_id + 1.
		vocab = VocabXLMRoberta
		if moe {
			vocab = VocabNomicBertMoE
		}
		if pad, ok, err := h.Int("pad_token_id"); err != nil {
			return nil, err
		} else if ok {
			if v, has := h["max_position_embeddings"]; has {
				n, err := asInt(v)
				if err != nil {
					return nil, &ConfigError{Key: "max_position_embeddings", Value: v, Msg: "is not an integer"}
				}
				h["max_position_embeddings"] = jsonInt(n - pad - 1)
			}
		}
	default:
		return nil, fmt.Errorf("%w: tokenizer.json: unknown tokenizer: %q", ErrConfig, typ)
	}
	// nomic-embed-text v1 and v1.5 (8192 positions of which 2048 trained)
	// are written with a context of 2048, v2-moe (2048, 2048) with 512.
	npos, mtp := h["n_positions"], h.get("max_trained_positions", json.Number("2048"))
	switch {
	case numIs(npos, 8192) && numIs(mtp, 2048):
		h["n_positions"] = json.Number("2048")
	case numIs(npos, 2048) && numIs(mtp, 2048):
		h["n_positions"] = json.Number("512")
	default:
		return nil, fmt.Errorf("%w: unrecognized parameters: n_positions=%v, max_trained_positions=%v", ErrConfig, describe(npos), describe(mtp))
	}
	arch := "nomic-bert"
	if moe {
		arch = "nomic-bert-moe"
	}
	b, err := newBertArch(arch, h, dir)
	if err != nil {
		return nil, err
	}
	return &nomicBert{bert: b, moe: moe, vocab: vocab}, nil
}

// checkNomicConfig is NomicBertModel.__init__'s assertions: SwiGLU and no
// biases for a dense model, GELU and biases for a MoE one; bidirectional,
// post-norms, plain RoPE.
func checkNomicConfig(h HParams, moe bool) error {
	act, biasMsg := "swiglu", "is not false (a dense model has no bias tensors)"
	if moe {
		act, biasMsg = "gelu", "is not true (a MoE model has bias tensors)"
	}
	want := []struct {
		key string
		ok  func(any) bool
		msg string
	}{
		{"activation_function", func(v any) bool { return v == act }, "is not " + act},
		{"causal", func(v any) bool { return v == false }, "is not false"},
		{"qkv_proj_bias", func(v any) bool { return v == moe }, biasMsg},
		{"mlp_fc1_bias", func(v any) bool { return v == moe }, biasMsg},
		{"mlp_fc2_bias", func(v any) bool { return v == moe }, biasMsg},
		{"prenorm", func(v any) bool { return v == false }, "is not false (norms come at the end of a layer)"},
		{"rotary_emb_fraction", func(v any) bool { return numIs(v, 1) }, "is not 1.0"},
		{"rotary_emb_interleaved", func(v any) bool { return v == false }, "is not false"},
		{"rotary_emb_scale_base", func(v any) bool { return v == nil }, "is not null"},
	}
	for _, w := range want {
		v, ok := h[w.key]
		if !ok {
			return &ConfigError{Key: w.key, Value: nil, Msg: "is missing (NomicBertModel requires it)"}
		}
		if !w.ok(v) {
			return &ConfigError{Key: w.key, Value: v, Msg: w.msg}
		}
	}
	return nil
}

// numIs reports whether v is a number equal to x.
func numIs(v any, x float64) bool {
	f, err := asFloat(v)
	return err == nil && f == x
}

// tokenizerModelType is the model type of the folder's tokenizer.json
// (WordPiece, Unigram, BPE …).
func tokenizerModelType(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: NomicBertModel needs a tokenizer.json: %w", ErrConfig, err)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	var tj struct {
		Model struct {
			Type string `json:"type"`
		} `json:"model"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxTokenizerJSON)).Decode(&tj); err != nil {
		return "", fmt.Errorf("tokenizer.json: %w", err)
	}
	return tj.Model.Type, nil
}

// VocabNomicBertMoE is _xlmroberta_set_vocab for nomic-bert-moe: XLM-R's
// vocabulary with <mask> added at id 250001.
const VocabNomicBertMoE VocabKind = "nomic-bert-moe"

// Vocab is NomicBertModel.set_vocab: XLM-R's routine for a Unigram
// tokenizer.json (with the MoE variant's <mask>), BERT's otherwise.
func (m *nomicBert) Vocab() VocabKind { return m.vocab }

// Params is NomicBertModel.set_gguf_parameters: BertModel's, then for the
// MoE variant moe_every_n_layers and moe_top_k as the experts used.
func (m *nomicBert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.bert.Params(ft)
	if err != nil || !m.moe {
		return kvs, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	if err := k.u32("moe_every_n_layers", m.h["moe_every_n_layers"]); err != nil {
		return nil, err
	}
	if err := k.u32("expert_used_count", required(m.h, "moe_top_k")); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is NomicBertModel.filter_tensors: the experts' shared output bias
// (mlp.experts.bias) dropped, then BertModel's.
func (m *nomicBert) Filter(name string) (string, bool) {
	if strings.Contains(name, "mlp.experts.bias") {
		return "", false
	}
	return m.bert.Filter(name)
}

// Modify is NomicBertModel.modify_tensors: the fused experts viewed as
// [experts, n_inner, n_embd] (w1, ffn_up_exps) and, transposed per expert,
// [experts, n_embd, n_inner] (w2, ffn_down_exps).
func (m *nomicBert) Modify(in Input, bid int) ([]Output, error) {
	w1, w2 := strings.Contains(in.Name, "mlp.experts.mlp.w1"), strings.Contains(in.Name, "mlp.experts.mlp.w2")
	if !w1 && !w2 {
		return m.bert.Modify(in, bid)
	}
	n, err := expertCount(m.h, "num_local_experts", "num_experts")
	if err != nil {
		return nil, err
	}
	inner, err := m.h.MustInt("n_inner")
	if err != nil {
		return nil, err
	}
	embd, err := m.h.MustInt("n_embd")
	if err != nil {
		return nil, err
	}
	if numel(in.Shape) != int64(n)*inner*embd {
		// torch's view fails.
		return nil, fmt.Errorf("%s of shape %v is not %d experts × n_inner %d × n_embd %d", in.Name, in.Shape, n, inner, embd)
	}
	out, err := m.mapped(in, in.Name+".weight", bid, nil)
	if err != nil {
		return nil, err
	}
	out[0].Shape = []int64{int64(n), inner, embd}
	if w2 {
		out[0].Shape = []int64{int64(n), embd, inner}
		out[0].Build = func(srcs [][]float32) ([]float32, error) {
			src := srcs[0]
			dst := make([]float32, len(src))
			per := inner * embd
			for e := range int64(n) {
				for i := range inner {
					for j := range embd {
						dst[e*per+j*inner+i] = src[e*per+i*embd+j]
					}
				}
			}
			return dst, nil
		}
	}
	return out, nil
}
