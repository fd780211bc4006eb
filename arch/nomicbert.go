package arch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
)

func init() {
	register(newNomicBert, "NomicBertModel")
}

// nomicBert is NomicBertModel (conversion/bert.py): BertModel under the
// nomic-bert architecture, with the converter's checks of the remote
// config. Its MoE variant (moe_every_n_layers, nomic-bert-moe) comes with
// XLM-R's Unigram vocabulary, which ggufkit's converter does not write, so
// it is refused.
type nomicBert struct {
	*bert
}

// maxTokenizerJSON bounds the tokenizer.json read to tell its model type
// (XLM-R's is 17 MB).
const maxTokenizerJSON = 1 << 28

func newNomicBert(h HParams, dir string) (Model, error) {
	if moe := h["moe_every_n_layers"]; Truthy(moe) {
		return nil, &ConfigError{Key: "moe_every_n_layers", Value: moe, Msg: "makes a nomic-bert-moe model, whose XLM-R " +
			"Unigram vocabulary ggufkit does not convert"}
	}
	if err := checkNomicConfig(h); err != nil {
		return nil, err
	}
	typ, err := tokenizerModelType(dir)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "WordPiece":
	case "Unigram":
		return nil, fmt.Errorf("%w: tokenizer.json: an XLM-R Unigram vocabulary for NomicBertModel is not supported", ErrConfig)
	default:
		return nil, fmt.Errorf("%w: tokenizer.json: unknown tokenizer: %q", ErrConfig, typ)
	}
	// nomic-embed-text v1 and v1.5 (8192 positions of which 2048 trained)
	// are written with a context of 2048, v2-moe (2048, 2048) with 512.
	h = maps.Clone(h)
	npos, mtp := h["n_positions"], h.get("max_trained_positions", json.Number("2048"))
	switch {
	case numIs(npos, 8192) && numIs(mtp, 2048):
		h["n_positions"] = json.Number("2048")
	case numIs(npos, 2048) && numIs(mtp, 2048):
		h["n_positions"] = json.Number("512")
	default:
		return nil, fmt.Errorf("%w: unrecognized parameters: n_positions=%v, max_trained_positions=%v", ErrConfig, describe(npos), describe(mtp))
	}
	b, err := newBertArch("nomic-bert", h, dir)
	if err != nil {
		return nil, err
	}
	return &nomicBert{b}, nil
}

// checkNomicConfig is NomicBertModel.__init__'s assertions on a dense
// model: SwiGLU, bidirectional, no biases, post-norms, plain RoPE.
func checkNomicConfig(h HParams) error {
	want := []struct {
		key string
		ok  func(any) bool
		msg string
	}{
		{"activation_function", func(v any) bool { return v == "swiglu" }, "is not swiglu"},
		{"causal", func(v any) bool { return v == false }, "is not false"},
		{"qkv_proj_bias", func(v any) bool { return v == false }, "is not false (a dense model has no bias tensors)"},
		{"mlp_fc1_bias", func(v any) bool { return v == false }, "is not false (a dense model has no bias tensors)"},
		{"mlp_fc2_bias", func(v any) bool { return v == false }, "is not false (a dense model has no bias tensors)"},
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
