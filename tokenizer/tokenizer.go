package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// ErrTokenize marks an input that llama.cpp cannot tokenize either: where it
// throws or aborts (a byte with no token, a codepoint above U+10FFFF to
// re-encode, a missing BOS/EOS/SEP id it was asked to add …).
var ErrTokenize = errors.New("tokenizer: cannot tokenize")

// vocabType is llama.cpp's llama_vocab_type.
type vocabType int

const (
	typeNone vocabType = iota
	typeSPM
	typeBPE
	typeWPM
	typeUGM
	typeRWKV
	typePLaMo2
	typeTest
)

// attr is llama_token_attr (include/llama.h).
type attr uint16

const (
	attrUnknown     attr = 1 << 0
	attrUnused      attr = 1 << 1
	attrNormal      attr = 1 << 2
	attrControl     attr = 1 << 3
	attrUserDefined attr = 1 << 4
	attrByte        attr = 1 << 5
	attrLStrip      attr = 1 << 7
	attrRStrip      attr = 1 << 8
)

// tokenNull is LLAMA_TOKEN_NULL.
const tokenNull = -1

// specialIDs are the special-token ids llama.cpp keeps (tokenNull = none).
type specialIDs struct {
	bos, eos, eot, eom, unk, sep, pad, mask        int
	fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep int
}

// Tokenizer encodes text exactly as llama.cpp's llama_tokenize does for the
// same vocabulary. It is immutable and safe for concurrent use.
type Tokenizer struct {
	typ   vocabType
	model string
	pre   preFlags

	texts  []string
	scores []float32
	attrs  []attr
	ids    map[string]int32
	ranks  map[string]int32 // BPE merges: "left right" → rank

	special                       specialIDs
	addBOS, addEOS, addSep        bool
	addSpacePrefix, removeExtraWS bool
	escapeSpaces                  bool
	lowercase, stripAccents       bool
	specialCache                  []int32 // CONTROL, USER_DEFINED and UNKNOWN tokens, longest first
	pieces                        []string
	pretok                        *preTokenizer
	ugm                           *ugmModel
	wpm                           *trie // WordPiece: every token text
	rwkv                          *trie
	plamo                         *plamo2Model
	// noCut: the symbols after which a run of "▁" is not cut off when an
	// SPM text or a BPE word is merged in pieces (encodeSPM,
	// bpeSession.word); nil: never cut.
	noCut map[string]bool
	// specialTrie holds the texts of specialCache when there are more
	// than specialTrieMin of them (specialsIn).
	specialTrie *trie
}

// specialTrieMin is the number of special tokens above which partition
// first finds which occur in the text; below it, one scan per token is
// cheaper.
const specialTrieMin = 32

// Options carries the values llama.cpp's vocabulary loader reads from
// outside the tokenizer.ggml.* keys (llama-vocab.cpp L3094-3140).
type Options struct {
	// ModelName is general.name: when it contains "phi-3" or "phi3"
	// (case-insensitively) every special token strips the whitespace that
	// follows it in the text.
	ModelName string
	// Architecture is general.architecture: "nomic-bert-moe" and
	// "jina-bert-v3" make <mask> strip the whitespace before it.
	Architecture string
}

// Load builds the tokenizer of a GGUF (a *ggufread.File): FromKVs plus
// general.name and general.architecture.
func Load(kvs KVLookup) (*Tokenizer, error) {
	v, err := FromKVs(kvs)
	if err != nil {
		return nil, err
	}
	var o Options
	if x, ok := kvs.KV(gguf.KeyGeneralName); ok {
		o.ModelName, _ = x.Str()
	}
	if x, ok := kvs.KV(gguf.KeyGeneralArchitecture); ok {
		o.Architecture, _ = x.Str()
	}
	return NewWithOptions(v, o)
}

// New builds the tokenizer of a vocabulary with empty Options.
func New(v *Vocab) (*Tokenizer, error) { return NewWithOptions(v, Options{}) }

// NewWithOptions builds the tokenizer of a vocabulary the way llama.cpp's
// llama_vocab::impl::load does (llama-vocab.cpp L1939-3137): defaults per
// model, pre-tokenizer flags, token attributes and their automatic fixes,
// special ids, the special-token cache and the token pieces.
func NewWithOptions(v *Vocab, o Options) (*Tokenizer, error) {
	t := &Tokenizer{model: v.Model, escapeSpaces: true, lowercase: true}
	s := &t.special
	*s = specialIDs{bos: 1, eos: 2, unk: 0, eot: tokenNull, eom: tokenNull, sep: tokenNull, pad: tokenNull,
		mask: tokenNull, fimPre: tokenNull, fimSuf: tokenNull, fimMid: tokenNull, fimPad: tokenNull,
		fimRep: tokenNull, fimSep: tokenNull}
	pre := v.Pre
	switch v.Model {
	case "no_vocab", "none":
		t.typ = typeNone
		return t, nil
	case "llama":
		t.typ = typeSPM
	case "bert":
		t.typ = typeWPM
		s.bos, s.eos, s.unk, s.sep, s.pad, s.mask = 101, tokenNull, 100, 102, 0, 103
	case "gpt2", "hybriddna", "whitespace", "gemma4":
		t.typ = typeBPE
		if v.Merges == nil && !(pre == "kimi-k2" && v.Model != "gemma4") {
			return nil, fmt.Errorf("%w: model %q needs tokenizer.ggml.merges", ErrVocab, v.Model)
		}
		t.ranks = make(map[string]int32, len(v.Merges))
		for i, m := range v.Merges {
			// llama.cpp splits at the first space after the first byte; an
			// entry without one becomes the pair ("", ""), which no lookup
			// can hit, and a repeated pair keeps its first rank.
			if strings.IndexByte(m[min(1, len(m)):], ' ') < 0 {
				continue
			}
			if _, dup := t.ranks[m]; !dup {
				t.ranks[m] = int32(i)
			}
		}
		s.bos, s.eos, s.unk = 11, 11, tokenNull
		if v.Model == "gemma4" {
			s.bos, s.eos = tokenNull, tokenNull
			pre = "gemma4"
		}
	case "t5":
		t.typ = typeUGM
		s.bos, s.eos, s.unk, s.pad = tokenNull, 1, 2, 0
	case "rwkv":
		t.typ = typeRWKV
		s.bos, s.eos, s.unk = tokenNull, tokenNull, tokenNull
	case "test":
		t.typ = typeTest
		s.bos, s.eos, s.unk = tokenNull, tokenNull, tokenNull
	case "plamo2":
		t.typ = typePLaMo2
		s.pad = 3
	default:
		return nil, fmt.Errorf("%w: unknown tokenizer model %q", ErrVocab, v.Model)
	}

	switch t.typ {
	case typeBPE:
		t.escapeSpaces = false
		if pre == "" {
			pre = "default"
		}
		pf, ok := preNames[pre]
		if !ok {
			return nil, fmt.Errorf("%w: unknown pre-tokenizer type %q", ErrVocab, pre)
		}
		t.pre = pf
		t.addBOS, t.addSep, t.escapeSpaces = pf.addBOS, pf.addSep, pf.escapeSpaces
		if pf.noBOS {
			s.bos = tokenNull
		}
		if pf.noLowercase {
			t.lowercase = false
		}
	case typeSPM:
		t.addSpacePrefix, t.addBOS = true, true
	case typeWPM:
		t.addBOS, t.addSep = true, true
	case typeUGM:
		t.addEOS = true
	}
	if t.typ != typeBPE {
		t.pre = preFlags{typ: preDefault}
	}
	if b, ok := v.Flag("add_space_prefix"); ok {
		t.addSpacePrefix = b
	}
	if b, ok := v.Flag("remove_extra_whitespaces"); ok {
		t.removeExtraWS = b
	}

	if err := t.loadTokens(v); err != nil {
		return nil, err
	}
	if err := t.initModel(v); err != nil {
		return nil, err
	}
	t.loadSpecialIDs(v)
	if b, ok := v.Flag("add_bos_token"); ok {
		t.addBOS = b
	}
	if b, ok := v.Flag("add_eos_token"); ok {
		t.addEOS = b
	}
	if b, ok := v.Flag("add_sep_token"); ok {
		t.addSep = b
	}
	if t.pre.typ == preGemma4 && !t.addBOS {
		t.addBOS = true // llama.cpp's Gemma 4 workaround
	}
	if b, ok := v.Flag("normalizer.lowercase"); ok {
		t.lowercase = b
	}
	t.stripAccents = t.lowercase
	if b, ok := v.Flag("normalizer.strip_accents"); ok {
		t.stripAccents = b
	}
	t.fixAttrs()

	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.specialCache = append(t.specialCache, int32(id))
		}
	}
	stdSort(t.specialCache, func(a, b int32) bool { return len(t.texts[a]) > len(t.texts[b]) })
	if len(t.specialCache) > specialTrieMin {
		tr := newTrie()
		for _, id := range t.specialCache {
			tr.insert([]byte(t.texts[id]), id)
		}
		t.specialTrie = tr.freeze()
	}

	t.pieces = make([]string, len(t.texts))
	for id := range t.texts {
		p, err := t.piece(id)
		if err != nil {
			return nil, err
		}
		t.pieces[id] = p
	}
	if err := t.stripAttrs(v.Pre, o); err != nil {
		return nil, err
	}
	switch {
	case t.typ == typeSPM:
		t.noCut = noCutAfter(t.texts)
	case t.typ == typeBPE && !t.pre.ignoreMerges:
		// The texts merges make: a lookup key is "left right" with no space
		// in either part, so only entries with one space ever apply.
		joined := make([]string, 0, len(t.ranks))
		for m := range t.ranks {
			if strings.Count(m, " ") == 1 {
				joined = append(joined, strings.Replace(m, " ", "", 1))
			}
		}
		t.noCut = noCutAfter(joined)
	}
	return t, nil
}

// loadTokens reads texts, scores and types (L2460-2540).
func (t *Tokenizer) loadTokens(v *Vocab) error {
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("%w: tokenizer.ggml.tokens is missing or empty", ErrVocab)
	}
	if n > 1<<31-1 {
		return fmt.Errorf("%w: %d tokens", ErrVocab, n)
	}
	if v.Scores != nil && len(v.Scores) < n || v.Types != nil && len(v.Types) < n {
		return fmt.Errorf("%w: fewer scores or token types than the %d tokens", ErrVocab, n)
	}
	t.texts = make([]string, n)
	t.scores = make([]float32, n)
	t.attrs = make([]attr, n)
	t.ids = make(map[string]int32, n)
	for i, w := range v.Tokens {
		if w == "" {
			w = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if prev, dup := t.ids[w]; dup {
			// llama.cpp asserts id_to_token.size() == token_to_id.size().
			return fmt.Errorf("%w: token %d %q repeats token %d", ErrVocab, i, w, prev)
		}
		t.ids[w] = int32(i)
		t.texts[i] = w
		if v.Scores != nil {
			t.scores[i] = v.Scores[i]
		}
		t.attrs[i] = attrNormal
		if v.Types != nil {
			switch v.Types[i] {
			case TypeUnknown:
				t.attrs[i] = attrUnknown
			case TypeUnused:
				t.attrs[i] = attrUnused
			case TypeNormal:
				t.attrs[i] = attrNormal
			case TypeControl:
				t.attrs[i] = attrControl
			case TypeUserDefined:
				t.attrs[i] = attrUserDefined
			case TypeByte:
				t.attrs[i] = attrByte
			default:
				t.attrs[i] = 0
			}
		}
	}
	if t.model == "hybriddna" {
		// The k-mers after <oov> carry a marker that keeps them apart in
		// the text → id map; their text loses it.
		if oov, ok := t.ids["<oov>"]; ok {
			for i := int(oov) + 1; i < n; i++ {
				if w := t.texts[i]; len(w) > len(dnaMarker) && strings.HasSuffix(w, dnaMarker) {
					t.texts[i] = w[:len(w)-len(dnaMarker)]
				}
			}
		}
	}
	return nil
}

// initModel builds the per-model state (init_tokenizer); it sees the token
// attributes before the special-token fixes, as llama.cpp's does.
func (t *Tokenizer) initModel(v *Vocab) error {
	var err error
	switch t.typ {
	case typeBPE:
		t.pretok, err = preTokenizerFor(t.pre.typ)
	case typeWPM:
		t.wpm = newTrie()
		for w, id := range t.ids {
			t.wpm.insert([]byte(w), id)
		}
		t.wpm.freeze()
	case typeUGM:
		t.ugm, err = newUGM(t, v.PrecompiledCharsmap)
	case typeRWKV:
		t.rwkv = newTrie()
		for id, w := range t.texts {
			t.rwkv.insert(unescapeRWKV(w), int32(id))
		}
		t.rwkv.freeze()
	case typePLaMo2:
		t.plamo, err = newPLaMo2(t)
	}
	return err
}

// loadSpecialIDs applies the special-id keys (L2580-2620): a default out of
// range is dropped, a key out of range is ignored.
func (t *Tokenizer) loadSpecialIDs(v *Vocab) {
	s := &t.special
	for _, e := range []struct {
		key Special
		id  *int
	}{
		{SpecialBOS, &s.bos}, {SpecialEOS, &s.eos}, {SpecialEOT, &s.eot}, {SpecialEOM, &s.eom},
		{SpecialUNK, &s.unk}, {SpecialSEP, &s.sep}, {SpecialPAD, &s.pad}, {SpecialMASK, &s.mask},
		{SpecialFIMPre, &s.fimPre}, {SpecialFIMSuf, &s.fimSuf}, {SpecialFIMMid, &s.fimMid},
		{SpecialFIMPad, &s.fimPad}, {SpecialFIMRep, &s.fimRep}, {SpecialFIMSep, &s.fimSep},
		{SpecialPrefix, &s.fimPre}, {SpecialSuffix, &s.fimSuf}, {SpecialMiddle, &s.fimMid},
	} {
		if *e.id >= len(t.texts) {
			*e.id = tokenNull
		}
		if id, ok := v.ID(e.key); ok && id >= 0 && id < len(t.texts) {
			*e.id = id
		}
	}
}

// The token texts llama.cpp recognises as special when their key is absent
// (L2693-2845).
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
		"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
		"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

func in(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// fixAttrs is llama.cpp's automatic detection of EOT/EOM/FIM/EOG tokens by
// their text, which also forces them CONTROL, and its other attribute
// workarounds (L2680-2990). llama.cpp walks an unordered_map here; when a
// vocabulary holds two candidate texts for the same missing FIM/EOT id, the
// one it picks (and makes CONTROL) depends on that map's order, while this
// walks ids in ascending order.
func (t *Tokenizer) fixAttrs() {
	s := &t.special
	control := func(id int) { t.attrs[id] |= attrControl }
	for id, w := range t.texts {
		for _, c := range []struct {
			slot  *int
			texts []string
		}{
			{&s.eot, eotTexts}, {&s.eom, []string{"<|eom_id|>"}}, {&s.fimPre, fimPreTexts}, {&s.fimSuf, fimSufTexts},
			{&s.fimMid, fimMidTexts}, {&s.fimPad, fimPadTexts}, {&s.fimRep, fimRepTexts}, {&s.fimSep, []string{"<|file_sep|>"}},
		} {
			if *c.slot == tokenNull && in(w, c.texts) {
				*c.slot = id
				control(id)
			}
		}
	}
	for id, w := range t.texts {
		cut := w
		if i := strings.IndexByte(cut, 0); i >= 0 {
			cut = cut[:i] // strstr on c_str()
		}
		if t.attrs[id]&attrControl != 0 && strings.Contains(cut, "unused") {
			t.attrs[id] |= attrUnused
		}
	}
	eog := map[int]bool{}
	for _, id := range []int{s.fimPad, s.fimRep, s.fimSep} {
		if id != tokenNull {
			eog[id] = true
		}
	}
	for id, w := range t.texts {
		if in(w, eogTexts) {
			eog[id] = true
			control(id)
		}
	}
	for id, w := range t.texts {
		if in(w, alwaysRendered) {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int{s.eos, s.eot, s.eom} {
		if id != tokenNull {
			eog[id] = true
		}
	}
	var hasReturn, hasCall, hasFlush bool
	end, sTok := tokenNull, tokenNull
	var hasToolResponse bool
	for id := range eog {
		if id < 0 || id >= len(t.texts) {
			continue
		}
		switch t.texts[id] {
		case "<|return|>":
			hasReturn = true
		case "<|call|>", "<|calls|>":
			hasCall = true
		case "<|flush|>":
			hasFlush = true
		case "<|end|>":
			end = id
		case "<|tool_response>", "<|plamo:eos|>":
			hasToolResponse = true
		case "</s>":
			sTok = id
		}
	}
	if end != tokenNull && (hasReturn && hasCall || hasCall && hasFlush) {
		t.attrs[end] = attrUserDefined
		delete(eog, end)
	}
	// The </s> check runs on the EOG set after the <|end|> removal; </s> and
	// <|tool_response>/<|plamo:eos|> are not <|end|>, so that removal cannot
	// change it.
	if hasToolResponse && sTok != tokenNull {
		t.attrs[sTok] = attrNormal
	}
}

// stripAttrs sets the lstrip/rstrip attributes llama.cpp gives by model,
// pre-tokenizer or architecture name (L3094-3140).
func (t *Tokenizer) stripAttrs(pre string, o Options) error {
	set := func(w string, a attr, on bool) error {
		id, ok := t.ids[w]
		if !ok {
			return fmt.Errorf("%w: token %q is missing (llama.cpp's token_to_id.at throws)", ErrVocab, w)
		}
		if on {
			t.attrs[id] |= a
		} else {
			t.attrs[id] &^= a
		}
		return nil
	}
	anyOf := func(s string, subs ...string) bool {
		for _, x := range subs {
			if strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, o.ModelName)
	switch {
	case anyOf(pre, "jina-v2-de", "jina-v2-es", "jina-v2-code") || anyOf(o.Architecture, "nomic-bert-moe", "jina-bert-v3"):
		if _, ok := t.ids["<mask>"]; ok {
			return set("<mask>", attrLStrip, true)
		}
	case anyOf(name, "phi-3", "phi3"):
		for _, id := range t.specialCache {
			t.attrs[id] |= attrRStrip
		}
		if err := set("</s>", attrRStrip, true); err != nil {
			return err
		}
		for _, w := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if err := set(w, attrRStrip, false); err != nil {
				return err
			}
		}
	case anyOf(name, "modern-bert"):
		if _, ok := t.ids["[MASK]"]; ok {
			return set("[MASK]", attrLStrip, true)
		}
	}
	return nil
}

// NumTokens is the vocabulary size.
func (t *Tokenizer) NumTokens() int { return len(t.texts) }

// AddBOS reports whether the vocabulary asks for a BOS token
// (llama_vocab_get_add_bos). llama-tokenize passes it as add_special, so
// Encode(text, t.AddBOS(), true) is what that tool prints by default.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether the vocabulary asks for an EOS token after the text
// (llama_vocab_get_add_eos).
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// BOS is the beginning-of-sequence token id (llama_vocab_bos), -1 when the
// vocabulary has none.
func (t *Tokenizer) BOS() int { return t.special.bos }

// Piece returns the text of a token as llama.cpp's llama_token_to_piece
// renders it with special = true (what llama-tokenize prints): special and
// user-defined tokens verbatim, SentencePiece "▁" as a space, GPT-2 byte
// characters as their bytes, byte tokens <0xXX> as that byte. A piece may be
// a partial UTF-8 sequence. Ids outside the vocabulary give "".
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// piece is token_to_piece(special = true) without lstrip (L3660-3790).
func (t *Tokenizer) piece(id int) (string, error) {
	w, a := t.texts[id], t.attrs[id]
	switch t.typ {
	case typeSPM, typeWPM, typeUGM, typeBPE:
		switch {
		case a&(attrUnknown|attrControl|attrUserDefined) != 0:
			return w, nil
		case a&attrNormal != 0:
			if t.typ != typeBPE || t.escapeSpaces {
				return strings.ReplaceAll(w, "▁", " "), nil
			}
			return decodeGPT2Text(w)
		case a&attrByte != 0:
			if t.typ == typeWPM {
				return "", fmt.Errorf("%w: WordPiece token %d %q is a byte token (llama.cpp aborts)", ErrVocab, id, w)
			}
			if len(w) < 3 {
				return "", fmt.Errorf("%w: byte token %d %q is too short", ErrVocab, id, w)
			}
			return string([]byte{hexByte(w[3:min(5, len(w))])}), nil
		}
		return "", nil
	case typeRWKV:
		return string(unescapeRWKV(w)), nil
	case typeTest:
		return strconv.FormatInt(int64(id), 16), nil
	case typePLaMo2:
		if a&attrByte != 0 && len(w) == 6 && strings.HasPrefix(w, "<0x") && w[5] == '>' && isHex(w[3]) && isHex(w[4]) {
			return string([]byte{hexByte(w[3:5])}), nil
		}
		return w, nil
	}
	return "", nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// hexByte is (char) strtol(s, NULL, 16) for the two characters after "<0x":
// leading spaces, a sign and a 0x prefix are accepted, parsing stops at the
// first non-hex character, and the result is truncated to a byte.
func hexByte(s string) byte {
	i := 0
	for i < len(s) && isSpaceC(uint32(s[i])) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && isHex(s[i+2]) {
		i += 2
	}
	var v int64
	for ; i < len(s) && isHex(s[i]); i++ {
		v = v*16 + int64(hexVal(s[i]))
	}
	if neg {
		v = -v
	}
	return byte(v)
}

// decodeGPT2Text is llama_decode_text: each character of a byte-level BPE
// token back to its byte; an unknown character is rendered as llama.cpp
// does ("[UNK_BYTE_0x…" + the whole token + "]").
func decodeGPT2Text(w string) (string, error) {
	var out []byte
	var cb []byte
	for _, c := range decodeLenient(w) {
		var err error
		if cb, err = appendCpt(cb[:0], c); err != nil {
			return "", fmt.Errorf("%w: token %q: %w", ErrVocab, w, err)
		}
		if b, ok := runeBytes[string(cb)]; ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, b := range cb {
			out = fmt.Appendf(out, "%02x", b)
		}
		out = append(out, w...)
		out = append(out, ']')
	}
	return string(out), nil
}

// fragment is a piece of the input: a special token (token ≥ 0) or raw
// text [off, off+n).
type fragment struct {
	token  int32
	off, n int
}

// partition is tokenizer_st_partition (L3255-3371): every special token, the
// longest first, is cut out of the raw fragments left to right; CONTROL and
// UNKNOWN tokens only with parseSpecial, USER_DEFINED always; lstrip/rstrip
// drop the whitespace next to a match.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{token: -1, off: 0, n: len(text)}}
	var next []fragment
	present := t.specialsIn(text)
	for _, id := range t.specialCache {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		st := t.texts[id]
		if present != nil && st != "" && !present[st] {
			// Not in the text, so in none of its fragments: llama.cpp's
			// scan would find nothing.
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.token >= 0 {
				next = append(next, f)
				continue
			}
			base, n := f.off, f.n
			for {
				i := strings.Index(text[base:base+n], st)
				if i < 0 {
					next = append(next, fragment{token: -1, off: base, n: n})
					break
				}
				match := base + i
				if left := match - base; left > 0 {
					if a&attrLStrip != 0 {
						for left > 0 && isSpaceC(uint32(text[base+left-1])) {
							left--
						}
					}
					if left > 0 {
						next = append(next, fragment{token: -1, off: base, n: left})
					}
				}
				next = append(next, fragment{token: id})
				end := match + len(st)
				if end >= base+n {
					break
				}
				rOff, rLen := end, base+n-end
				if a&attrRStrip != 0 {
					for rLen > 0 && isSpaceC(uint32(text[rOff])) {
						rOff++
						rLen--
					}
				}
				if rLen == 0 {
					break
				}
				base, n = rOff, rLen
			}
		}
		frags, next = next, frags
	}
	return frags
}

// WithPreTokenizer returns a tokenizer that splits text into words as the
// BPE pre-tokenizer named pre does and is otherwise t (the same
// vocabulary, merges, special tokens and their attributes; the flags a
// pre name sets for add_special are pre's). It exists for identifying a
// pre-tokenizer by trying several on one vocabulary without building it
// again each time (tokenizer/load); t must be a "gpt2" BPE vocabulary.
func (t *Tokenizer) WithPreTokenizer(pre string) (*Tokenizer, error) {
	if t.typ != typeBPE || t.model != "gpt2" {
		return nil, fmt.Errorf("%w: WithPreTokenizer needs a gpt2 BPE vocabulary, not %q", ErrVocab, t.model)
	}
	pf, ok := preNames[pre]
	if !ok {
		return nil, fmt.Errorf("%w: unknown pre-tokenizer type %q", ErrVocab, pre)
	}
	pretok, err := preTokenizerFor(pf.typ)
	if err != nil {
		return nil, err
	}
	// noCut stays t's: the cut applies to the merge path only, which
	// ignore_merges does not change.
	c := *t
	c.pre, c.pretok = pf, pretok
	c.addBOS, c.addSep, c.escapeSpaces = pf.addBOS, pf.addSep, pf.escapeSpaces
	return &c, nil
}

// specialsIn returns the special-token texts that occur in text, found in
// one pass over it with a trie of them, or nil when the vocabulary has too
// few special tokens for that to beat a scan per token (partition).
func (t *Tokenizer) specialsIn(text string) map[string]bool {
	if t.specialTrie == nil {
		return nil
	}
	found := map[string]bool{}
	for i := range len(text) {
		node := int32(0)
		for j := i; j < len(text); j++ {
			if node = t.specialTrie.child(node, text[j]); node < 0 {
				break
			}
			if t.specialTrie.hasValue[node] {
				found[text[i:j+1]] = true
			}
		}
	}
	return found
}

// Encode tokenizes text as llama_tokenize(vocab, text, add_special,
// parse_special) does (llama-vocab.cpp L3418-3658). addSpecial adds the BOS,
// EOS and SEP tokens the vocabulary asks for; parseSpecial recognises the
// text of CONTROL and UNKNOWN tokens (USER_DEFINED ones are always
// recognised). llama.cpp's test-tokenizer-0 passes false, false;
// llama-tokenize passes AddBOS(), true unless told otherwise.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int, error) {
	if t.typ == typeNone {
		return nil, fmt.Errorf("%w: the vocabulary has no tokenizer (model %q)", ErrTokenize, t.model)
	}
	frags := t.partition(text, parseSpecial)
	out := make([]int, 0, len(text)/3+4)
	need := func(id int, what string) error {
		if id == tokenNull {
			return fmt.Errorf("%w: add_special needs a %s token and the vocabulary has none", ErrTokenize, what)
		}
		return nil
	}
	var err error
	switch t.typ {
	case typeSPM:
		prevSpecial := true
		if addSpecial && t.addBOS {
			if err := need(t.special.bos, "BOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.bos)
		}
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, int(f.token))
				prevSpecial = true
				continue
			}
			s := text[f.off : f.off+f.n]
			if t.addSpacePrefix && prevSpecial {
				s = " " + s
			}
			if out, err = t.encodeSPM(strings.ReplaceAll(s, " ", "▁"), out); err != nil {
				return nil, err
			}
			prevSpecial = false
		}
		if addSpecial && t.addEOS {
			if err := need(t.special.eos, "EOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.eos)
		}
	case typeBPE:
		if addSpecial && t.addBOS {
			if err := need(t.special.bos, "BOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.bos)
		}
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, int(f.token))
				continue
			}
			s := text[f.off : f.off+f.n]
			if t.escapeSpaces {
				s = strings.ReplaceAll(s, " ", "▁")
			}
			switch t.model {
			case "hybriddna":
				out, err = t.encodeHybridDNA(s, out)
			case "whitespace":
				out, err = t.encodeWhitespace(s, out)
			default:
				out, err = t.encodeBPE(s, out)
			}
			if err != nil {
				return nil, err
			}
		}
		if addSpecial && t.addEOS {
			if err := need(t.special.eos, "EOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.eos)
		}
	case typeWPM:
		if addSpecial {
			if err := need(t.special.bos, "BOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.bos)
		}
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, int(f.token))
				continue
			}
			if out, err = t.encodeWPM(text[f.off:f.off+f.n], out); err != nil {
				return nil, err
			}
		}
		if addSpecial {
			if err := need(t.special.sep, "SEP"); err != nil {
				return nil, err
			}
			out = append(out, t.special.sep)
		}
	case typeUGM:
		if addSpecial && t.addBOS {
			if err := need(t.special.bos, "BOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.bos)
		}
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, int(f.token))
				continue
			}
			if out, err = t.ugm.encode(t, text[f.off:f.off+f.n], out); err != nil {
				return nil, err
			}
		}
		if addSpecial && t.addEOS {
			if err := need(t.special.eos, "EOS"); err != nil {
				return nil, err
			}
			out = append(out, t.special.eos)
		}
	case typeRWKV, typePLaMo2, typeTest:
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, int(f.token))
				continue
			}
			s := text[f.off : f.off+f.n]
			switch t.typ {
			case typeRWKV:
				out, err = t.encodeRWKV(s, out)
			case typePLaMo2:
				out, err = t.plamo.encode(s, out)
			default:
				out = t.encodeTest(s, out)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// byteToken is llama_vocab::byte_to_token for SPM and UGM: <0xXX>, else the
// byte itself as a token.
func (t *Tokenizer) byteToken(b byte) (int, error) {
	const hex = "0123456789ABCDEF"
	if id, ok := t.ids[string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})]; ok {
		return int(id), nil
	}
	if id, ok := t.ids[string([]byte{b})]; ok {
		return int(id), nil
	}
	return 0, fmt.Errorf("%w: byte 0x%02X has no token", ErrTokenize, b)
}

// encodeTest is the "test" vocabulary of llama.cpp's own tests: every 5
// bytes hash to an id.
func (t *Tokenizer) encodeTest(s string, out []int) []int {
	n := uint64(len(t.texts))
	for pos := 0; pos < len(s); pos += 5 {
		var h uint64
		for _, b := range []byte(s[pos:min(pos+5, len(s))]) {
			h = h*31 + uint64(b)
		}
		out = append(out, int(h%n))
	}
	return out
}
