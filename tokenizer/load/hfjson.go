package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Model types of a Hugging Face tokenizer.json (tokenizers' ModelWrapper).
const (
	ModelBPE       = "BPE"
	ModelWordPiece = "WordPiece"
	ModelWordLevel = "WordLevel"
	ModelUnigram   = "Unigram"
)

// AddedToken is one entry of tokenizer.json's added_tokens (or of
// tokenizer_config.json's added_tokens_decoder).
type AddedToken struct {
	ID         int
	Content    string
	SingleWord bool
	LStrip     bool
	RStrip     bool
	Normalized bool
	Special    bool
}

// HFModel is the "model" section of a tokenizer.json.
type HFModel struct {
	// Type is BPE, WordPiece, WordLevel or Unigram. Files written by old
	// tokenizers versions have no "type"; it is inferred as tokenizers
	// does: a list vocabulary is Unigram, merges make BPE, a
	// continuing_subword_prefix or max_input_chars_per_word makes
	// WordPiece, anything else is WordLevel.
	Type string
	// Vocab maps token to id (BPE, WordPiece, WordLevel).
	Vocab map[string]int
	// Pieces are a Unigram vocabulary in id order (scores as float32, as
	// the GGUF stores them).
	Pieces []Piece
	// UnkID is the Unigram unk_id (-1 when null or absent).
	UnkID int
	// UnkToken is the BPE/WordPiece/WordLevel unk_token ("" when null).
	UnkToken string
	// Merges are BPE merges as "left right". Files that store merges as
	// pairs (["left", "right"], tokenizers ≥ 0.20) have spaces inside a
	// part written as U+0120, as gguf-py's SpecialVocab does.
	Merges []string
	// ByteFallback is nil when the key is absent (the converter reads it
	// with different defaults in different places).
	ByteFallback *bool
	// IgnoreMerges is the BPE ignore_merges flag (Llama 3 style).
	IgnoreMerges bool
	// ContinuingSubwordPrefix is the WordPiece/BPE subword prefix.
	ContinuingSubwordPrefix string
}

// HFTokenizer is a parsed tokenizer.json: the model, the added tokens, and
// the normalizer, pre-tokenizer, post-processor and decoder as decoded JSON
// (map[string]any …, numbers as json.Number; nil when null).
type HFTokenizer struct {
	File          string
	Model         HFModel
	AddedTokens   []AddedToken
	Normalizer    any
	PreTokenizer  any
	PostProcessor any
	Decoder       any
}

// ParseTokenizerJSON parses a Hugging Face tokenizer.json. file names it in
// errors.
func ParseTokenizerJSON(data []byte, file string) (*HFTokenizer, error) {
	top, err := objectMembers(data, file, "")
	if err != nil {
		return nil, err
	}
	t := &HFTokenizer{File: file}
	var model json.RawMessage
	for _, m := range top {
		switch m.Key {
		case "model":
			model = m.Value
		case "added_tokens":
			if t.AddedTokens, err = parseAddedTokens(m.Value, file); err != nil {
				return nil, err
			}
		case "normalizer", "pre_tokenizer", "post_processor", "decoder":
			v, err := decodeJSON(m.Value, file)
			if err != nil {
				return nil, err
			}
			switch m.Key {
			case "normalizer":
				t.Normalizer = v
			case "pre_tokenizer":
				t.PreTokenizer = v
			case "post_processor":
				t.PostProcessor = v
			default:
				t.Decoder = v
			}
		}
	}
	if model == nil {
		return nil, errorf(ErrFormat, file, "model", "missing")
	}
	if err := t.Model.parse(model, file); err != nil {
		return nil, err
	}
	return t, nil
}

func parseAddedTokens(raw json.RawMessage, file string) ([]AddedToken, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errorf(ErrFormat, file, "added_tokens", "is %s, want an array", jsonKind(raw))
	}
	out := make([]AddedToken, 0, len(items))
	for i, it := range items {
		a, err := parseAddedToken(it, file, fmt.Sprintf("added_tokens[%d]", i), true)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// parseAddedToken reads one added-token object. withID says whether the
// object carries its "id" (tokenizer.json) or the id is the key
// (added_tokens_decoder).
func parseAddedToken(raw json.RawMessage, file, field string, withID bool) (AddedToken, error) {
	var a AddedToken
	v, err := decodeJSON(raw, file)
	if err != nil {
		return a, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return a, errorf(ErrFormat, file, field, "is %s, want an object", describe(v))
	}
	content, ok := m["content"].(string)
	if !ok {
		return a, errorf(ErrFormat, file, field+".content", "is %s, want a string", describe(m["content"]))
	}
	a.Content = content
	if withID {
		id, ok := pyInt(m["id"])
		if !ok || id < 0 || id > math.MaxInt32 {
			return a, errorf(ErrFormat, file, field+".id", "is %s, want a token id", describe(m["id"]))
		}
		a.ID = int(id)
	}
	flags := []struct {
		key string
		dst *bool
	}{{"single_word", &a.SingleWord}, {"lstrip", &a.LStrip}, {"rstrip", &a.RStrip}, {"normalized", &a.Normalized}, {"special", &a.Special}}
	for _, fl := range flags {
		x, present := m[fl.key]
		if !present || x == nil {
			continue
		}
		b, ok := x.(bool)
		if !ok {
			return a, errorf(ErrFormat, file, field+"."+fl.key, "is %s, want a bool", describe(x))
		}
		*fl.dst = b
	}
	return a, nil
}

func (m *HFModel) parse(raw json.RawMessage, file string) error {
	members, err := objectMembers(raw, file, "model")
	if err != nil {
		return err
	}
	fields := map[string]json.RawMessage{}
	for _, mb := range members {
		fields[mb.Key] = mb.Value
	}
	m.UnkID = -1
	if t, ok := fields["type"]; ok {
		if err := json.Unmarshal(t, &m.Type); err != nil {
			return errorf(ErrFormat, file, "model.type", "is %s, want a string", jsonKind(t))
		}
	} else {
		switch {
		case bytes.HasPrefix(bytes.TrimLeft(fields["vocab"], " \t\r\n"), []byte("[")):
			m.Type = ModelUnigram
		case fields["merges"] != nil:
			m.Type = ModelBPE
		case fields["continuing_subword_prefix"] != nil || fields["max_input_chars_per_word"] != nil:
			m.Type = ModelWordPiece
		default:
			m.Type = ModelWordLevel
		}
	}
	vocab, ok := fields["vocab"]
	if !ok {
		return errorf(ErrFormat, file, "model.vocab", "missing")
	}
	switch m.Type {
	case ModelBPE, ModelWordPiece, ModelWordLevel:
		if m.Vocab, err = parseVocabObject(vocab, file, "model.vocab"); err != nil {
			return err
		}
	case ModelUnigram:
		if m.Pieces, err = parseUnigramVocab(vocab, file); err != nil {
			return err
		}
		if raw, ok := fields["unk_id"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			v, err := decodeJSON(raw, file)
			if err != nil {
				return err
			}
			id, ok := pyInt(v)
			if !ok || id < 0 || id >= int64(len(m.Pieces)) {
				return errorf(ErrFormat, file, "model.unk_id", "%s is not an id of the %d pieces", describe(v), len(m.Pieces))
			}
			m.UnkID = int(id)
		}
	default:
		return errorf(ErrUnsupported, file, "model.type", "unknown model type %q", m.Type)
	}
	if raw, ok := fields["merges"]; ok && m.Type == ModelBPE {
		if m.Merges, err = parseMerges(raw, file); err != nil {
			return err
		}
	}
	for key, dst := range map[string]*string{"unk_token": &m.UnkToken, "continuing_subword_prefix": &m.ContinuingSubwordPrefix} {
		if raw, ok := fields[key]; ok {
			v, err := decodeJSON(raw, file)
			if err != nil {
				return err
			}
			if s, ok := v.(string); ok {
				*dst = s
			} else if v != nil {
				return errorf(ErrFormat, file, "model."+key, "is %s, want a string", describe(v))
			}
		}
	}
	for key, dst := range map[string]**bool{"byte_fallback": &m.ByteFallback} {
		if raw, ok := fields[key]; ok {
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return errorf(ErrFormat, file, "model."+key, "is %s, want a bool", jsonKind(raw))
			}
			*dst = &b
		}
	}
	if raw, ok := fields["ignore_merges"]; ok {
		if err := json.Unmarshal(raw, &m.IgnoreMerges); err != nil {
			return errorf(ErrFormat, file, "model.ignore_merges", "is %s, want a bool", jsonKind(raw))
		}
	}
	return nil
}

// parseVocabObject reads a token → id object. Ids must be non-negative
// ints below 2^31 (a GGUF token array index).
func parseVocabObject(raw json.RawMessage, file, field string) (map[string]int, error) {
	// RawMessage, not json.Number: encoding/json would decode the string
	// "0" into a json.Number, where Python sees a str.
	var vocab map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&vocab); err != nil {
		return nil, errorf(ErrFormat, file, field, "want an object of token ids: %v", err)
	}
	if err := expectEOF(dec, file); err != nil {
		return nil, err
	}
	out := make(map[string]int, len(vocab))
	for tok, n := range vocab {
		id, ok := pyInt(json.Number(n))
		if !ok || id < 0 || id > math.MaxInt32 {
			return nil, errorf(ErrFormat, file, field, "token %q has id %s, want a token id", tok, n)
		}
		out[tok] = int(id)
	}
	return out, nil
}

func parseUnigramVocab(raw json.RawMessage, file string) ([]Piece, error) {
	var items [][]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errorf(ErrFormat, file, "model.vocab", "want a list of [piece, score]: %v", err)
	}
	out := make([]Piece, len(items))
	for i, it := range items {
		field := fmt.Sprintf("model.vocab[%d]", i)
		if len(it) != 2 {
			return nil, errorf(ErrFormat, file, field, "has %d elements, want [piece, score]", len(it))
		}
		if err := json.Unmarshal(it[0], &out[i].Piece); err != nil {
			return nil, errorf(ErrFormat, file, field, "piece is %s, want a string", jsonKind(it[0]))
		}
		var score float64
		if err := json.Unmarshal(it[1], &score); err != nil {
			return nil, errorf(ErrFormat, file, field, "score is %s, want a number", jsonKind(it[1]))
		}
		out[i].Score = float32(score)
		out[i].Type = PieceNormal
	}
	return out, nil
}

// parseMerges reads BPE merges in either encoding: "left right" strings
// (kept as they are) or ["left", "right"] pairs (joined by a space after
// every space inside a part becomes U+0120, gguf-py vocab.py L189-214). As
// in gguf-py the first element decides the encoding; the others must
// follow it.
func parseMerges(raw json.RawMessage, file string) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errorf(ErrFormat, file, "model.merges", "is %s, want an array", jsonKind(raw))
	}
	if len(items) == 0 {
		return nil, nil
	}
	pairs := bytes.HasPrefix(bytes.TrimLeft(items[0], " \t\r\n"), []byte("["))
	// Decoding the whole array at once is several times faster than item by
	// item; the loop below runs only to name a bad item.
	if !pairs {
		var all []string
		if json.Unmarshal(raw, &all) == nil {
			return all, nil
		}
	} else {
		var all [][]string
		if json.Unmarshal(raw, &all) == nil && !slices.ContainsFunc(all, func(p []string) bool { return len(p) != 2 }) {
			out := make([]string, len(all))
			for i, pair := range all {
				out[i] = strings.ReplaceAll(pair[0], " ", "\u0120") + " " + strings.ReplaceAll(pair[1], " ", "\u0120")
			}
			return out, nil
		}
	}
	out := make([]string, len(items))
	for i, it := range items {
		field := fmt.Sprintf("model.merges[%d]", i)
		if !pairs {
			if err := json.Unmarshal(it, &out[i]); err != nil {
				return nil, errorf(ErrFormat, file, field, "is %s, want a string like the first merge", jsonKind(it))
			}
			continue
		}
		var pair []string
		if err := json.Unmarshal(it, &pair); err != nil || len(pair) != 2 {
			return nil, errorf(ErrFormat, file, field, "want a [left, right] pair of strings like the first merge")
		}
		out[i] = strings.ReplaceAll(pair[0], " ", "\u0120") + " " + strings.ReplaceAll(pair[1], " ", "\u0120")
	}
	return out, nil
}
