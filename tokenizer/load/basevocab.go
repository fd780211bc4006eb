package load

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// errLlama3 is LlamaHfVocab's TypeError for a Llama 3 style tokenizer.json,
// on which LlamaModel.set_vocab falls back to _set_vocab_gpt2.
var errLlama3 = errors.New("load: Llama 3 style tokenizer.json")

// getVocabBase is TextModel.get_vocab_base (conversion/base.py
// L1581-1623), used by the GPT-2 BPE and WordPiece routines: every id
// below hparams vocab_size (default: the size of the full vocabulary) gets
// its token, or "[PAD{i}]" as UNUSED when no token has it; added tokens
// are CONTROL when special or special-looking, else USER_DEFINED (with
// "▁" written as a space), after a round trip through the tokenizer when
// they are not normalized; model tokens are NORMAL. The pre-tokenizer is
// Options.Pre, else the converter's hash computed with ggufkit's encoder
// (identifyByHash), else the structure table (identifyPre).
func getVocabBase(f *folder, opts Options, model string) (tokens []string, types []int32, pre string, err error) {
	v, err := newHFView(f)
	if err != nil {
		return nil, nil, "", err
	}
	full := v.fullVocab()
	n := opts.VocabSize
	if n == 0 {
		n = len(full)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return nil, nil, "", err
	}
	for tok, id := range full {
		if id >= n {
			return nil, nil, "", fmt.Errorf("%w: %s: token %q has id %d, not below vocab_size %d", ErrFormat, v.file, tok, id, n)
		}
	}
	if opts.Pre != "" && model == "gpt2" {
		if err := checkPre(opts.Pre); err != nil {
			return nil, nil, "", err
		}
	}
	reverse := v.reverse()
	tokens = make([]string, n)
	types = make([]int32, n)
	for i := range n {
		tok, ok := reverse[i]
		if !ok {
			tokens[i], types[i] = "[PAD"+strconv.Itoa(i)+"]", typeUnused
			continue
		}
		if _, added := v.byContent[tok]; !added {
			tokens[i], types[i] = tok, typeNormal
			continue
		}
		a := v.added[i]
		if a == nil {
			return nil, nil, "", fmt.Errorf("%w: %s: token %q of id %d is also an added token of another id", ErrFormat, v.file, tok, i)
		}
		if !a.Normalized {
			if tok, err = v.roundTrip(tok, i); err != nil {
				return nil, nil, "", fmt.Errorf("%s: added token %q: %w", v.file, a.Content, err)
			}
		}
		if a.Special || looksSpecial(tok) {
			types[i] = typeControl
		} else {
			tok = strings.ReplaceAll(tok, "\u2581", " ") // pre-normalize user-defined spaces (Gemma)
			types[i] = typeUserDefined
		}
		tokens[i] = tok
	}
	switch {
	case opts.Pre != "":
		pre = opts.Pre
	default:
		name, hashes := identifyByHash(v, model, tokens, types, v.merges)
		if name != "" {
			pre = name
			break
		}
		if pre, err = identifyPre(v); err != nil {
			var upe *UnknownPreError
			if errors.As(err, &upe) {
				upe.Hashes = hashes
			}
			return nil, nil, "", err
		}
	}
	return tokens, types, pre, nil
}

// gpt2 is _set_vocab_gpt2 (conversion/base.py L1964-1972).
func gpt2(f *folder, l *kvList, opts Options) error {
	tokens, types, pre, err := getVocabBase(f, opts, "gpt2")
	if err != nil {
		return err
	}
	l.str(gguf.KeyTokenizerModel, "gpt2")
	l.str(gguf.KeyTokenizerPre, pre)
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	return addSpecialVocab(f, l, true, -1)
}

// bert is BertModel.set_vocab (conversion/bert.py L40-67).
func bert(f *folder, l *kvList, opts Options) error {
	tokens, types, pre, err := getVocabBase(f, opts, "bert")
	if err != nil {
		return err
	}
	count := opts.TypeVocabSize
	if count == 0 {
		count = 1
	}
	if err := l.u32(gguf.KeyTokenizerTokenTypeCount, int64(count)); err != nil {
		return err
	}
	tokens = phantomSpace(tokens, types)
	l.str(gguf.KeyTokenizerModel, "bert")
	l.str(gguf.KeyTokenizerPre, pre)
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	return addSpecialVocab(f, l, false, len(tokens))
}

// llamaHF is _set_vocab_llama_hf (conversion/base.py L2183-2203) with
// gguf-py's LlamaHfVocab (vocab.py L555-690).
func llamaHF(f *folder, l *kvList) error {
	t, err := llamaHFTable(f)
	if err != nil {
		return err
	}
	t.writeLlama(l, "llama")
	return addSpecialVocab(f, l, false, len(t.tokens))
}

// llamaHFTable is the token list of gguf-py's LlamaHfVocab (vocab.py
// L555-690): all_tokens() with score -1000 for every token.
func llamaHFTable(f *folder) (*tokenTable, error) {
	tok, err := f.tokenizerJSON()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, notFound(f, "tokenizer.json")
	}
	m := tok.Model
	if m.Type == ModelBPE && m.IgnoreMerges && m.ByteFallback != nil && !*m.ByteFallback {
		return nil, errLlama3
	}
	decoderType, _ := getKey(tok.Decoder, "type").(string)
	if m.Type != ModelBPE || m.ByteFallback == nil || !*m.ByteFallback || decoderType != "Sequence" {
		return nil, fmt.Errorf("%w: %s is not a Llama BPE tokenizer (BPE with byte_fallback and a Sequence decoder)", ErrNotFound, tok.File)
	}
	v, err := newHFView(f)
	if err != nil {
		return nil, err
	}
	base := len(v.vocab)
	var added []int // ids of added tokens outside the model vocabulary, ascending
	for _, id := range v.addedByID {
		if id >= base {
			added = append(added, id)
		}
	}
	full := v.fullVocab()
	specialIDs := map[int]bool{}
	specials := map[string]bool{}
	for _, s := range v.specials {
		specials[s] = true
		if id, ok := full[s]; ok {
			specialIDs[id] = true
		}
	}
	reverse := v.reverse()
	n, err := vocabLen(base+len(added), "vocabulary size")
	if err != nil {
		return nil, err
	}
	t := &tokenTable{tokens: make([]string, 0, n), scores: make([]float32, 0, n), types: make([]int32, 0, n)}
	push := func(text string, typ int32) {
		t.tokens = append(t.tokens, text)
		t.scores = append(t.scores, -1000)
		t.types = append(t.types, typ)
	}
	for id := range base {
		text, ok := reverse[id]
		if !ok {
			return nil, fmt.Errorf("%w: %s: no token has id %d of the %d-token vocabulary", ErrFormat, tok.File, id, base)
		}
		switch {
		case isByteToken(text):
			push(text, typeByte)
		case specialIDs[id]:
			push(text, typeControl)
		default:
			push(text, typeNormal)
		}
	}
	for _, id := range added {
		text := v.added[id].Content
		switch {
		case !specials[text]:
			push(text, typeUserDefined)
		case specialIDs[full[text]]:
			push(text, typeControl)
		default:
			push(text, typeNormal)
		}
	}
	return t, nil
}

// isByteToken matches <0xXX>, LlamaHfVocab's byte-token pattern.
func isByteToken(s string) bool {
	return len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' && isHex(s[3]) && isHex(s[4])
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
