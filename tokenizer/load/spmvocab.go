package load

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// tokenTable is a vocabulary under construction: per id its text, score
// and type.
type tokenTable struct {
	tokens []string
	scores []float32
	types  []int32
}

// newPadTable is the converter's starting table for SentencePiece
// vocabularies: n entries "[PAD{i}]", score -10000, UNUSED.
func newPadTable(n int) *tokenTable {
	t := &tokenTable{tokens: make([]string, n), scores: make([]float32, n), types: make([]int32, n)}
	for i := range n {
		t.tokens[i] = "[PAD" + strconv.Itoa(i) + "]"
		t.scores[i] = -10000
		t.types[i] = typeUnused
	}
	return t
}

// set writes one entry.
func (t *tokenTable) set(id int, tok string, score float32, typ int32) {
	t.tokens[id], t.scores[id], t.types[id] = tok, score, typ
}

// writeLlama adds the KVs the SentencePiece-style routines write: model,
// pre "default", tokens, scores, types.
func (t *tokenTable) writeLlama(l *kvList, model string) {
	l.str(gguf.KeyTokenizerModel, model)
	l.str(gguf.KeyTokenizerPre, "default")
	array(l, gguf.KeyTokenizerTokens, t.tokens)
	array(l, gguf.KeyTokenizerScores, t.scores)
	array(l, gguf.KeyTokenizerTokenType, t.types)
}

// vocabLen checks a vocabulary size against MaxVocabSize.
func vocabLen(n int, what string) (int, error) {
	if n < 0 || n > MaxVocabSize {
		return 0, fmt.Errorf("%w: %s %d is outside [0, %d]", ErrTooLarge, what, n, MaxVocabSize)
	}
	return n, nil
}

// loadSPM reads and parses a SentencePiece model file of the folder; a
// missing file is ErrNotFound.
func loadSPM(f *folder, name string) (*SPMModel, error) {
	if !f.isFile(name) {
		return nil, notFound(f, name)
	}
	b, err := f.bytes(name)
	if err != nil {
		return nil, err
	}
	return ParseSentencePiece(b, f.path(name))
}

// spmType is the token type the converter gives a piece: it asks
// IsUnknown, IsControl, IsUnused and IsByte in that order, so USER_DEFINED
// pieces become NORMAL.
func spmType(p Piece) int32 {
	switch p.Type {
	case PieceUnknown, PieceControl, PieceUnused, PieceByte:
		return p.Type
	}
	return typeNormal
}

// createVocabSentencePiece is _create_vocab_sentencepiece (conversion/base.py
// L2094-2181).
func createVocabSentencePiece(f *folder, opts Options) (*tokenTable, error) {
	m, err := loadSPM(f, "tokenizer.model")
	if err != nil {
		return nil, err
	}
	// find_hparam(["vocab_size_per_layer_input", "vocab_size"]) or
	// tokenizer.vocab_size(): a zero size falls back to the pieces too.
	n := opts.VocabSize
	if n == 0 {
		n = len(m.Pieces)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return nil, err
	}
	t := newPadTable(n)
	for id, p := range m.Pieces {
		if id >= n {
			break // "ignore tokens from {id}: id is out of range"
		}
		t.set(id, p.Piece, p.Score, spmType(p))
	}
	if err := addedTokensJSON(f, t); err != nil {
		return nil, err
	}
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	decoder, err := addedTokensDecoder(f, tc)
	if err != nil {
		return nil, err
	}
	for _, d := range decoder {
		if d.id >= n {
			continue
		}
		tok, typ := d.content, typeUserDefined
		if truthy(d.raw["special"]) || looksSpecial(tok) {
			typ = typeControl
		} else {
			tok = strings.ReplaceAll(tok, "\u2581", " ") // pre-normalize user-defined spaces
		}
		t.set(d.id, tok, -1000, typ)
	}
	return t, nil
}

// addedTokensJSON writes added_tokens.json over the table as the
// SentencePiece routines do: ids at or over the table size are skipped;
// the others become USER_DEFINED with score -1000.
func addedTokensJSON(f *folder, t *tokenTable) error {
	if !f.isFile("added_tokens.json") {
		return nil
	}
	b, err := f.bytes("added_tokens.json")
	if err != nil {
		return err
	}
	entries, err := parseIDObject(b, f.path("added_tokens.json"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.ID < len(t.tokens) {
			t.set(e.ID, e.Content, -1000, typeUserDefined)
		}
	}
	return nil
}

// decoderEntry is one entry of tokenizer_config.json's
// added_tokens_decoder.
type decoderEntry struct {
	id      int
	content string
	raw     map[string]any
}

// addedTokensDecoder returns tokenizer_config.json's added_tokens_decoder
// in ascending id order (each entry sets its own id, so the order the
// converter iterates them in does not matter).
func addedTokensDecoder(f *folder, tc map[string]any) ([]decoderEntry, error) {
	x, ok := tc["added_tokens_decoder"]
	if !ok || x == nil {
		return nil, nil
	}
	file := f.path("tokenizer_config.json")
	m, ok := x.(map[string]any)
	if !ok {
		return nil, errorf(ErrFormat, file, "added_tokens_decoder", "is %s, want an object", describe(x))
	}
	out := make([]decoderEntry, 0, len(m))
	for k, v := range m {
		field := "added_tokens_decoder." + k
		id, err := parseIntKey(k)
		if err != nil {
			return nil, errorf(ErrFormat, file, field, "key is not a token id")
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errorf(ErrFormat, file, field, "is %s, want an object", describe(v))
		}
		content, ok := obj["content"].(string)
		if !ok {
			return nil, errorf(ErrFormat, file, field+".content", "is %s, want a string", describe(obj["content"]))
		}
		out = append(out, decoderEntry{id, content, obj})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// looksSpecial is TextModel.does_token_look_special: added tokens some
// models fail to mark special (command-r, deepseek-coder, gemma).
func looksSpecial(tok string) bool {
	switch tok {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return (strings.HasPrefix(tok, "<|") && strings.HasSuffix(tok, "|>")) ||
		(strings.HasPrefix(tok, "<｜") && strings.HasSuffix(tok, "｜>")) ||
		(strings.HasPrefix(tok, "<unused") && strings.HasSuffix(tok, ">"))
}

// sentencePiece is _set_vocab_sentencepiece.
func sentencePiece(f *folder, l *kvList, opts Options) error {
	t, err := createVocabSentencePiece(f, opts)
	if err != nil {
		return err
	}
	t.writeLlama(l, "llama")
	return addSpecialVocab(f, l, false, len(t.tokens))
}

// addSpecialVocab is gguf.SpecialVocab(dir, load_merges, n_vocab=…)
// followed by add_to_gguf; nVocab < 0 is n_vocab=None.
func addSpecialVocab(f *folder, l *kvList, loadMerges bool, nVocab int) error {
	sv, err := newSpecialVocab(f, loadMerges, nil, nVocab)
	if err != nil {
		return err
	}
	return sv.addTo(l)
}

// phi3 is Phi3MiniModel.set_vocab (conversion/phi.py L44-146).
func phi3(f *folder, l *kvList, opts Options) error {
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return err
	}
	// The converter reads tokenizer_config["tokenizer_class"] and fails
	// when it is absent; here an absent class is simply not GPT-2's.
	if tc["tokenizer_class"] == "GPT2Tokenizer" {
		return gpt2(f, l, opts)
	}
	t, err := paddedPieces(f, opts)
	if err != nil {
		return err
	}
	n := len(t.tokens)
	if err := addedTokensJSON(f, t); err != nil {
		return err
	}
	decoder, err := addedTokensDecoder(f, tc)
	if err != nil {
		return err
	}
	setAdded := func(file string, id int, content string, special any) error {
		if id >= n {
			return fmt.Errorf("%w: %s: added token %q has id %d, outside vocab_size %d", ErrFormat, file, content, id, n)
		}
		typ := typeUserDefined
		if truthy(special) {
			typ = typeControl
		}
		t.set(id, content, -1000, typ)
		return nil
	}
	if err := eachAddedToken(f, decoder, setAdded); err != nil {
		return err
	}
	t.writeLlama(l, "llama")
	return addSpecialVocab(f, l, false, len(t.tokens))
}

// paddedPieces is the table Phi3MiniModel and ArcticModel start from: the
// pieces of tokenizer.model in a pad table of
// hparams.get('vocab_size', tokenizer.vocab_size()) entries (more pieces
// than that is an IndexError there, an error here).
func paddedPieces(f *folder, opts Options) (*tokenTable, error) {
	m, err := loadSPM(f, "tokenizer.model")
	if err != nil {
		return nil, err
	}
	n := opts.VocabSize
	if n == 0 {
		n = len(m.Pieces)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return nil, err
	}
	if len(m.Pieces) > n {
		return nil, fmt.Errorf("%w: %s has %d pieces, more than vocab_size %d", ErrFormat, f.path("tokenizer.model"), len(m.Pieces), n)
	}
	t := newPadTable(n)
	for id, p := range m.Pieces {
		t.set(id, p.Piece, p.Score, spmType(p))
	}
	return t, nil
}

// eachAddedToken calls set for every entry of tokenizer_config.json's
// added_tokens_decoder (decoder), then for every added token of
// tokenizer.json, as the SentencePiece routines that rewrite added tokens
// visit them (file names the file the entry comes from).
func eachAddedToken(f *folder, decoder []decoderEntry, set func(file string, id int, content string, special any) error) error {
	for _, d := range decoder {
		if err := set(f.path("tokenizer_config.json"), d.id, d.content, d.raw["special"]); err != nil {
			return err
		}
	}
	tok, err := f.tokenizerJSON()
	if err != nil || tok == nil {
		return err
	}
	for _, a := range tok.AddedTokens {
		if err := set(tok.File, a.ID, a.Content, a.Special); err != nil {
			return err
		}
	}
	return nil
}

// t5 is T5Model.set_vocab (conversion/t5.py L27-119).
func t5(f *folder, l *kvList, opts Options) error {
	name := "tokenizer.model"
	if !f.isFile(name) {
		name = "spiece.model" // many older models use this name
	}
	m, err := loadSPM(f, name)
	if err != nil {
		if name == "spiece.model" && isNotFound(err) {
			return notFound(f, "tokenizer.model", "spiece.model")
		}
		return err
	}
	switch m.ModelType {
	case SPMBPE: // Pile-T5 and others
		if name != "tokenizer.model" {
			return fmt.Errorf("%w: %s is a BPE model; the converter reads BPE models only as tokenizer.model", ErrUnsupported, f.path(name))
		}
		return sentencePiece(f, l, opts)
	case SPMUnigram:
	default:
		return fmt.Errorf("%w: %s: SentencePiece model type %d, want UNIGRAM or BPE", ErrUnsupported, f.path(name), m.ModelType)
	}
	n := opts.VocabSize // hparams.get('vocab_size', tokenizer.vocab_size())
	if n == 0 {
		n = len(m.Pieces)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return err
	}
	if len(m.Pieces) > n {
		return fmt.Errorf("%w: %s has %d pieces, more than vocab_size %d", ErrFormat, f.path(name), len(m.Pieces), n)
	}
	t := newPadTable(n)
	for id, p := range m.Pieces {
		t.set(id, p.Piece, p.Score, spmType(p))
	}
	if err := addedTokensJSON(f, t); err != nil {
		return err
	}
	t.writeLlama(l, "t5")
	l.boolean(gguf.KeyTokenizerAddSpacePrefix, m.AddDummyPrefix)
	l.boolean(gguf.KeyTokenizerRemoveExtraSpaces, m.RemoveExtraWhitespaces)
	array(l, gguf.KeyTokenizerPrecompiledCharmap, m.PrecompiledCharsmap)
	return addSpecialVocab(f, l, false, len(t.tokens))
}
