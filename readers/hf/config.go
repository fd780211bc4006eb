package hf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ggufkit/ggufkit/readers"
)

// The configuration files a model folder may hold.
const (
	ConfigName           = "config.json"
	ParamsName           = "params.json" // Meta's original checkpoints
	GenerationConfigName = "generation_config.json"
	TokenizerConfigName  = "tokenizer_config.json"
	SpecialTokensMapName = "special_tokens_map.json"
	AddedTokensName      = "added_tokens.json"
)

// maxJSONSize bounds a configuration file read into memory. The largest real
// ones (tokenizer_config.json with big added_tokens_decoder tables and chat
// templates) are a few MB.
const maxJSONSize = 64 << 20

// ErrConfig is wrapped by every error about a malformed configuration file.
var ErrConfig = errors.New("hf: invalid configuration file")

// Config is a model's configuration: config.json as read, or Meta's
// params.json mapped onto the same keys, plus the other JSON files that go
// with it. Numbers are kept as json.Number, so integers stay exact and an
// integer is told from a float as Python's json module tells them.
type Config struct {
	// File is the path of config.json or params.json; "" when the folder
	// has neither.
	File string
	// Raw is that file's top-level object exactly as read.
	Raw map[string]any
	// Params is the view the typed accessors read, the one llama.cpp's
	// TextModel calls hparams: Raw with a multimodal wrapper's text
	// sub-config merged over the top level (see textConfig); for
	// params.json, Raw plus the Hugging Face keys its keys map to.
	Params map[string]any
	// Global is Raw with those renames but nothing merged: what llama.cpp's
	// MmprojModel calls global_config (for params.json, Params).
	Global map[string]any
	// Generation, TokenizerConfig, SpecialTokensMap and AddedTokens are the
	// other files as read; nil when absent.
	Generation       map[string]any
	TokenizerConfig  map[string]any
	SpecialTokensMap map[string]any
	AddedTokens      map[string]any
}

// ReadConfig reads the configuration files of a model folder. config.json
// wins over params.json; every file is optional. A file that is a Git LFS
// pointer or not a JSON object is an error naming it.
func ReadConfig(dir string) (*Config, error) {
	c := &Config{}
	for _, f := range []struct {
		name string
		dst  *map[string]any
	}{
		{GenerationConfigName, &c.Generation},
		{TokenizerConfigName, &c.TokenizerConfig},
		{SpecialTokensMapName, &c.SpecialTokensMap},
		{AddedTokensName, &c.AddedTokens},
	} {
		m, err := readJSON(filepath.Join(dir, f.name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		*f.dst = m
	}
	path := filepath.Join(dir, ConfigName)
	m, err := readJSON(path)
	if errors.Is(err, fs.ErrNotExist) {
		path = filepath.Join(dir, ParamsName)
		m, err = readJSON(path)
		if errors.Is(err, fs.ErrNotExist) {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		c.File, c.Raw, c.Params = path, m, fromParams(m)
		c.Global = c.Params
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	c.File, c.Raw, c.Global = path, m, renamedConfig(m)
	c.Params = textConfig(m)
	return c, nil
}

// readJSON reads a JSON object from path. A missing file is an error
// wrapping fs.ErrNotExist.
func readJSON(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("hf: %s: %w", path, err)
	}
	if len(b) > maxJSONSize {
		return nil, fmt.Errorf("hf: %s: %w: larger than %d bytes", path, ErrConfig, maxJSONSize)
	}
	if readers.IsLFSPointer(b) {
		return nil, fmt.Errorf("hf: %s: %w", path, readers.ErrLFSPointer)
	}
	m, err := ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("hf: %s: %w", path, err)
	}
	return m, nil
}

// ParseJSON decodes a configuration file's bytes: one JSON object, numbers
// as json.Number. Errors wrap ErrConfig and give the byte offset.
func ParseJSON(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%w: offset %d: %v", ErrConfig, se.Offset, err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%w: not a JSON object", ErrConfig)
		}
		return nil, fmt.Errorf("%w: offset %d: %v", ErrConfig, dec.InputOffset(), err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrConfig)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: offset %d: data after the JSON object", ErrConfig, dec.InputOffset())
	}
	return m, nil
}

// renamedConfig is raw with a multimodal wrapper's language model config
// under text_config: ModelBase.load_hparams renames llm_config, lm_config,
// thinker_config.text_config, language_config and lfm to it.
func renamedConfig(raw map[string]any) map[string]any {
	p := maps.Clone(raw)
	// load_hparams applies these renames in this order; a later one wins.
	for _, alias := range []string{"llm_config", "lm_config", "thinker_config", "language_config", "lfm"} {
		v, ok := p[alias]
		if !ok {
			continue
		}
		if alias == "thinker_config" {
			if m, ok := v.(map[string]any); ok {
				v = m["text_config"]
			} else {
				v = nil
			}
		}
		p["text_config"] = v
	}
	return p
}

// textConfig returns the hparams llama.cpp's converter reads: the renamed
// config with its text_config merged over the top level (TextModel.__init__:
// {**hparams, **hparams["text_config"]}).
func textConfig(raw map[string]any) map[string]any {
	p := renamedConfig(raw)
	if tc, ok := p["text_config"].(map[string]any); ok {
		maps.Copy(p, tc)
	}
	return p
}

// fromParams maps Meta's params.json onto the Hugging Face keys (the
// mapping of convert_legacy_llama.py's loadOriginalParamsJson), keeping the
// original keys too: dim → hidden_size, n_layers → num_hidden_layers,
// n_heads → num_attention_heads, n_kv_heads (default n_heads) →
// num_key_value_heads, norm_eps → rms_norm_eps, rope_theta, a positive
// vocab_size (Meta writes -1 when the tokenizer decides), max_seq_len →
// max_position_embeddings, and intermediate_size from dim, multiple_of and
// ffn_dim_multiplier by Meta's FeedForward formula. Open replaces
// vocab_size and intermediate_size by the weights' shapes when it can, as
// the legacy converter does.
func fromParams(raw map[string]any) map[string]any {
	p := make(map[string]any, len(raw)+8)
	for k, v := range raw {
		p[k] = v
	}
	for _, m := range [][2]string{
		{"dim", "hidden_size"},
		{"n_layers", "num_hidden_layers"},
		{"n_heads", "num_attention_heads"},
		{"n_kv_heads", "num_key_value_heads"},
		{"n_heads", "num_key_value_heads"},
		{"norm_eps", "rms_norm_eps"},
		{"max_seq_len", "max_position_embeddings"},
	} {
		if v, ok := raw[m[0]]; ok && v != nil {
			if _, done := p[m[1]]; !done {
				p[m[1]] = v
			}
		}
	}
	if n, ok := intValue(raw["vocab_size"]); !ok || n <= 0 {
		delete(p, "vocab_size")
	}
	dim, ok1 := intValue(raw["dim"])
	multipleOf, ok2 := intValue(raw["multiple_of"])
	if ok1 && ok2 && multipleOf > 0 {
		// Meta's llama/model.py FeedForward: int() truncates toward zero.
		hidden := 2 * (4 * dim) / 3
		if mult, ok := floatValue(raw["ffn_dim_multiplier"]); ok {
			hidden = int64(mult * float64(hidden))
		}
		hidden = multipleOf * ((hidden + multipleOf - 1) / multipleOf)
		p["intermediate_size"] = jsonInt(hidden)
	}
	return p
}

// Get returns the value of key in Params.
func (c *Config) Get(key string) (any, bool) {
	v, ok := c.Params[key]
	return v, ok
}

// Int returns the value of the first of keys present in Params with a
// non-null value, as an integer (a float with an integral value counts, as
// Python would use it). ok is false when no key is present or the value is
// not an integral number.
func (c *Config) Int(keys ...string) (int64, bool) {
	v, _ := c.first(keys)
	return intValue(v)
}

// Float returns the first of keys present with a non-null numeric value.
func (c *Config) Float(keys ...string) (float64, bool) {
	v, _ := c.first(keys)
	return floatValue(v)
}

func intValue(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func floatValue(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// String returns the first of keys present with a non-null string value.
func (c *Config) String(keys ...string) (string, bool) {
	v, ok := c.first(keys)
	s, isStr := v.(string)
	return s, ok && isStr
}

// Bool returns the first of keys present with a non-null boolean value.
func (c *Config) Bool(keys ...string) (bool, bool) {
	v, ok := c.first(keys)
	b, isBool := v.(bool)
	return b, ok && isBool
}

// Map returns the object value of key, nil when absent, null or not an
// object.
func (c *Config) Map(key string) map[string]any {
	m, _ := c.Params[key].(map[string]any)
	return m
}

// first returns the value of the first key present with a non-null value
// (llama.cpp's find_hparam takes the first key present; a null value is of
// no use to a caller wanting a number or a string, so it is skipped).
func (c *Config) first(keys []string) (any, bool) {
	for _, k := range keys {
		if v, ok := c.Params[k]; ok && v != nil {
			return v, true
		}
	}
	return nil, false
}

// Architectures returns the architectures list (the text sub-config's when
// it has one, as get_model_architecture picks for text models).
func (c *Config) Architectures() []string {
	list, _ := c.Params["architectures"].([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Architecture returns Architectures()[0], or "".
func (c *Config) Architecture() string {
	if a := c.Architectures(); len(a) > 0 {
		return a[0]
	}
	return ""
}

// ModelType returns model_type, or "".
func (c *Config) ModelType() string {
	s, _ := c.String("model_type")
	return s
}

// HiddenSize returns hidden_size (GPT-2's n_embd, T5's d_model).
func (c *Config) HiddenSize() (int64, bool) { return c.Int("hidden_size", "n_embd", "d_model") }

// NumHiddenLayers returns the block count, looked up in the order of
// llama.cpp's TextModel: n_layers, num_hidden_layers, n_layer, num_layers.
func (c *Config) NumHiddenLayers() (int64, bool) {
	return c.Int("n_layers", "num_hidden_layers", "n_layer", "num_layers")
}

// NumAttentionHeads returns num_attention_heads (n_head, n_heads).
func (c *Config) NumAttentionHeads() (int64, bool) {
	return c.Int("num_attention_heads", "n_head", "n_heads")
}

// NumKeyValueHeads returns num_key_value_heads (n_kv_heads); ok is false
// when absent — most architectures then use NumAttentionHeads.
func (c *Config) NumKeyValueHeads() (int64, bool) { return c.Int("num_key_value_heads", "n_kv_heads") }

// IntermediateSize returns intermediate_size (GPT-2's n_inner).
func (c *Config) IntermediateSize() (int64, bool) { return c.Int("intermediate_size", "n_inner") }

// VocabSize returns vocab_size.
func (c *Config) VocabSize() (int64, bool) { return c.Int("vocab_size") }

// RMSNormEps returns rms_norm_eps.
func (c *Config) RMSNormEps() (float64, bool) { return c.Float("rms_norm_eps") }

// LayerNormEps returns layer_norm_eps (GPT-2's layer_norm_epsilon).
func (c *Config) LayerNormEps() (float64, bool) {
	return c.Float("layer_norm_eps", "layer_norm_epsilon")
}

// RopeTheta returns the RoPE base, looked up like llama.cpp's TextModel
// (global_rope_theta, rope_global_theta, rope_theta_global, rope_theta,
// rotary_emb_base), then in rope_parameters (transformers ≥ 5 moved it
// there).
func (c *Config) RopeTheta() (float64, bool) {
	if f, ok := c.Float("global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"); ok {
		return f, true
	}
	return floatValue(c.Map("rope_parameters")["rope_theta"])
}

// RopeScaling returns the RoPE parameters as llama.cpp's TextModel reads
// them: rope_parameters when that key is present, else rope_scaling; nil
// when the value is null or absent.
func (c *Config) RopeScaling() map[string]any {
	if _, ok := c.Params["rope_parameters"]; ok {
		return c.Map("rope_parameters")
	}
	return c.Map("rope_scaling")
}

// MaxPositionEmbeddings returns max_position_embeddings (GPT-2's
// n_positions).
func (c *Config) MaxPositionEmbeddings() (int64, bool) {
	return c.Int("max_position_embeddings", "n_positions")
}

// TieWordEmbeddings returns tie_word_embeddings; ok is false when absent.
func (c *Config) TieWordEmbeddings() (bool, bool) { return c.Bool("tie_word_embeddings") }

// TorchDType returns the weights' declared dtype: dtype (transformers ≥ 5)
// or torch_dtype, e.g. "bfloat16"; "" when absent.
func (c *Config) TorchDType() string {
	s, _ := c.String("dtype", "torch_dtype")
	return s
}

// BOSTokenID returns bos_token_id when it is an integer.
func (c *Config) BOSTokenID() (int64, bool) { return c.Int("bos_token_id") }

// EOSTokenID returns eos_token_id when it is an integer (see TokenIDs for
// the list form).
func (c *Config) EOSTokenID() (int64, bool) { return c.Int("eos_token_id") }

// PadTokenID returns pad_token_id when it is an integer.
func (c *Config) PadTokenID() (int64, bool) { return c.Int("pad_token_id") }

// TokenIDs returns the ids of key whether it holds one integer or a list
// of integers (e.g. Llama 3's eos_token_id [128001, 128008, 128009]); nil
// otherwise.
func (c *Config) TokenIDs(key string) []int64 {
	if n, ok := c.Int(key); ok {
		return []int64{n}
	}
	list, _ := c.Params[key].([]any)
	var out []int64
	for _, v := range list {
		if n, ok := intValue(v); ok {
			out = append(out, n)
		}
	}
	return out
}

func jsonInt(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }
