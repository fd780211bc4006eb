// Package tokenizer holds a model's vocabulary as llama.cpp stores it in a
// GGUF (the tokenizer.ggml.* keys) and the encoders that tokenize text with
// it exactly as llama.cpp does (src/llama-vocab.cpp). The loaders that turn
// Hugging Face tokenizer files into a Vocab live in tokenizer/load.
package tokenizer

import (
	"errors"
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// TokenType is llama.cpp's llama_token_type, stored per token in
// tokenizer.ggml.token_type.
type TokenType int32

// The token types of include/llama.h.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// ErrVocab marks a vocabulary that is missing, malformed or of an unknown kind.
var ErrVocab = errors.New("tokenizer: bad vocabulary")

// Special names the special-token ids a vocabulary may carry, with the
// suffix of their GGUF key (tokenizer.ggml.<suffix>).
type Special string

// The special tokens llama.cpp stores (gguf-py Keys.Tokenizer).
const (
	SpecialBOS    Special = "bos_token_id"
	SpecialEOS    Special = "eos_token_id"
	SpecialEOT    Special = "eot_token_id"
	SpecialEOM    Special = "eom_token_id"
	SpecialUNK    Special = "unknown_token_id"
	SpecialSEP    Special = "seperator_token_id" // sic
	SpecialPAD    Special = "padding_token_id"
	SpecialMASK   Special = "mask_token_id"
	SpecialFIMPre Special = "fim_pre_token_id"
	SpecialFIMSuf Special = "fim_suf_token_id"
	SpecialFIMMid Special = "fim_mid_token_id"
	SpecialFIMPad Special = "fim_pad_token_id"
	SpecialFIMRep Special = "fim_rep_token_id"
	SpecialFIMSep Special = "fim_sep_token_id"
	// The deprecated spellings of the FIM prefix/suffix/middle ids, which
	// llama.cpp still reads after the fim_* keys (and which then win).
	SpecialPrefix Special = "prefix_token_id"
	SpecialSuffix Special = "suffix_token_id"
	SpecialMiddle Special = "middle_token_id"
)

// Vocab is a tokenizer as a GGUF stores it.
type Vocab struct {
	// Model is tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE),
	// "bert" (WordPiece), "t5" (Unigram), "rwkv", "gemma4", "none" …
	Model string
	// Pre is tokenizer.ggml.pre, the pre-tokenizer name ("llama-bpe",
	// "qwen2", "default" …); empty when absent.
	Pre string
	// Tokens, and per token its score and type (Scores and Types are nil
	// when the file has none).
	Tokens []string
	Scores []float32
	Types  []TokenType
	// Merges are BPE merges, "left right" per entry.
	Merges []string
	// IDs holds the special-token ids present in the file.
	IDs map[Special]int
	// Flags holds the boolean tokenizer flags present in the file, keyed by
	// their key suffix: add_bos_token, add_eos_token, add_sep_token,
	// add_space_prefix, remove_extra_whitespaces, normalizer.lowercase,
	// normalizer.strip_accents.
	Flags map[string]bool
	// PrecompiledCharsmap is the SentencePiece normalizer blob (T5 family).
	PrecompiledCharsmap []byte
	// TokenTypeCount is tokenizer.ggml.token_type_count (BERT), 0 if absent.
	TokenTypeCount int
}

// ID returns a special-token id and whether the vocabulary has it.
func (v *Vocab) ID(s Special) (int, bool) {
	id, ok := v.IDs[s]
	return id, ok
}

// Flag returns a tokenizer flag (add_bos_token …) and whether it is set.
func (v *Vocab) Flag(name string) (value, ok bool) {
	value, ok = v.Flags[name]
	return value, ok
}

// KVLookup is what FromKVs reads from: a GGUF file's metadata.
type KVLookup interface {
	KV(key string) (gguf.Value, bool)
}

const keyPrefix = "tokenizer.ggml."

// FromKVs reads the tokenizer.ggml.* keys of a GGUF.
func FromKVs(kvs KVLookup) (*Vocab, error) {
	v := &Vocab{IDs: map[Special]int{}, Flags: map[string]bool{}}
	str := func(key string) (string, error) {
		x, ok := kvs.KV(key)
		if !ok {
			return "", nil
		}
		s, ok := x.Str()
		if !ok {
			return "", fmt.Errorf("%w: %s is %s, want string", ErrVocab, key, x.Type())
		}
		return s, nil
	}
	var err error
	if v.Model, err = str(gguf.KeyTokenizerModel); err != nil {
		return nil, err
	}
	if v.Model == "" {
		return nil, fmt.Errorf("%w: %s is missing", ErrVocab, gguf.KeyTokenizerModel)
	}
	if v.Pre, err = str(gguf.KeyTokenizerPre); err != nil {
		return nil, err
	}
	if x, ok := kvs.KV(gguf.KeyTokenizerTokens); ok {
		if v.Tokens, ok = x.Strings(); !ok {
			return nil, fmt.Errorf("%w: %s is not a string array", ErrVocab, gguf.KeyTokenizerTokens)
		}
	}
	n := len(v.Tokens)
	if x, ok := kvs.KV(gguf.KeyTokenizerScores); ok {
		if v.Scores, ok = x.Float32s(); !ok && x.IsArray() && x.ElemType() == gguf.TypeInt32 {
			// llama.cpp also accepts integer scores (llama-vocab.cpp L2468-2483).
			ints, _ := x.Ints()
			v.Scores = make([]float32, len(ints))
			for i, s := range ints {
				v.Scores[i] = float32(s)
			}
			ok = true
		}
		if !ok || len(v.Scores) != n {
			return nil, fmt.Errorf("%w: %s must hold %d float32", ErrVocab, gguf.KeyTokenizerScores, n)
		}
	}
	if x, ok := kvs.KV(gguf.KeyTokenizerTokenType); ok {
		ints, ok := x.Ints()
		if !ok || len(ints) != n {
			return nil, fmt.Errorf("%w: %s must hold %d integers", ErrVocab, gguf.KeyTokenizerTokenType, n)
		}
		v.Types = make([]TokenType, n)
		for i, t := range ints {
			v.Types[i] = TokenType(t)
		}
	}
	if x, ok := kvs.KV(gguf.KeyTokenizerMerges); ok {
		if v.Merges, ok = x.Strings(); !ok {
			return nil, fmt.Errorf("%w: %s is not a string array", ErrVocab, gguf.KeyTokenizerMerges)
		}
	}
	for _, s := range []Special{SpecialBOS, SpecialEOS, SpecialEOT, SpecialEOM, SpecialUNK, SpecialSEP, SpecialPAD,
		SpecialMASK, SpecialFIMPre, SpecialFIMSuf, SpecialFIMMid, SpecialFIMPad, SpecialFIMRep, SpecialFIMSep,
		SpecialPrefix, SpecialSuffix, SpecialMiddle} {
		x, ok := kvs.KV(keyPrefix + string(s))
		if !ok {
			continue
		}
		id, ok := x.Int()
		if !ok {
			return nil, fmt.Errorf("%w: %s%s is %s, want an integer", ErrVocab, keyPrefix, s, x.Type())
		}
		v.IDs[s] = int(id)
	}
	for _, f := range []string{"add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix", "remove_extra_whitespaces",
		"normalizer.lowercase", "normalizer.strip_accents"} {
		if x, ok := kvs.KV(keyPrefix + f); ok {
			b, ok := x.BoolValue()
			if !ok {
				return nil, fmt.Errorf("%w: %s%s is %s, want bool", ErrVocab, keyPrefix, f, x.Type())
			}
			v.Flags[f] = b
		}
	}
	if x, ok := kvs.KV(gguf.KeyTokenizerPrecompiledCharmap); ok {
		ints, ok := x.Ints()
		if !ok {
			return nil, fmt.Errorf("%w: %s is not a byte array", ErrVocab, gguf.KeyTokenizerPrecompiledCharmap)
		}
		v.PrecompiledCharsmap = make([]byte, len(ints))
		for i, b := range ints {
			v.PrecompiledCharsmap[i] = byte(b)
		}
	}
	if x, ok := kvs.KV(gguf.KeyTokenizerTokenTypeCount); ok {
		c, _ := x.Int()
		v.TokenTypeCount = int(c)
	}
	return v, nil
}
