package load

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// hfView is what the converter sees through transformers'
// AutoTokenizer.from_pretrained(dir) for the vocabulary functions that use
// it (get_vocab_base, LlamaHfVocab): the model vocabulary, the added tokens
// with their flags, the named special tokens, and the pipeline parts that
// identify the pre-tokenizer. It is built from tokenizer.json when the
// folder has one, else from the "slow" files (vocab.txt for WordPiece,
// vocab.json + merges.txt for byte-level BPE) the way transformers builds a
// fast tokenizer from them.
type hfView struct {
	file      string // the file the vocabulary came from, for errors
	modelType string
	vocab     map[string]int // the model vocabulary (without added tokens)
	// added tokens by id, and content → id.
	added     map[int]*AddedToken
	addedByID []int // ids of added, ascending
	byContent map[string]int
	// specials are all_special_tokens: the named special tokens (bos, eos,
	// unk, sep, pad, cls, mask, then additional ones), deduplicated.
	specials []string

	unkToken string   // the model's unk_token
	merges   []string // BPE merges: tokenizer.json's, else merges.txt's

	normalizer, preTokenizer, postProcessor, decoder any
	cleanUp                                          bool // clean_up_tokenization_spaces
	class                                            string
}

// tokenizerClass is what transformers' tokenizer classes contribute: the
// default special tokens of the class and, for slow files, its pipeline.
type tokenizerClass struct {
	bos, eos, unk, sep, pad, cls, mask string
}

// tokenizerClasses holds the defaults of the tokenizer classes of the
// supported model families (transformers 5.24 models/*/tokenization_*.py
// __init__ defaults). A class not listed contributes nothing, as
// PreTrainedTokenizerFast / TokenizersBackend do.
var tokenizerClasses = map[string]tokenizerClass{
	"BertTokenizer":       {unk: "[UNK]", sep: "[SEP]", pad: "[PAD]", cls: "[CLS]", mask: "[MASK]"},
	"DistilBertTokenizer": {unk: "[UNK]", sep: "[SEP]", pad: "[PAD]", cls: "[CLS]", mask: "[MASK]"},
	"GPT2Tokenizer":       {bos: "<|endoftext|>", eos: "<|endoftext|>", unk: "<|endoftext|>"},
	"CodeGenTokenizer":    {bos: "<|endoftext|>", eos: "<|endoftext|>", unk: "<|endoftext|>"},
	"GPTNeoXTokenizer":    {bos: "<|endoftext|>", eos: "<|endoftext|>", unk: "<|endoftext|>"},
	"Qwen2Tokenizer":      {eos: "<|endoftext|>", unk: "<|endoftext|>", pad: "<|endoftext|>"},
	"LlamaTokenizer":      {bos: "<s>", eos: "</s>", unk: "<unk>"},
	"GemmaTokenizer":      {bos: "<bos>", eos: "<eos>", unk: "<unk>", pad: "<pad>"},
}

// modelTypeTokenizer maps config.json model_type to its tokenizer class
// (transformers' TOKENIZER_MAPPING_NAMES) for the supported families, used
// when tokenizer_config.json names no class.
var modelTypeTokenizer = map[string]string{
	"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer", "gpt2": "GPT2Tokenizer",
	"gpt_neox": "GPTNeoXTokenizer", "starcoder2": "GPT2Tokenizer", "qwen2": "Qwen2Tokenizer",
	"qwen2_moe": "Qwen2Tokenizer", "qwen3": "Qwen2Tokenizer", "qwen3_moe": "Qwen2Tokenizer",
	"llama": "LlamaTokenizer", "mistral": "LlamaTokenizer", "mixtral": "LlamaTokenizer",
	"phi3": "LlamaTokenizer", "gemma": "GemmaTokenizer", "gemma2": "GemmaTokenizer", "gemma3_text": "GemmaTokenizer",
}

// specialAttrs are transformers' SPECIAL_TOKENS_ATTRIBUTES in order.
var specialAttrs = []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}

// newHFView builds the AutoTokenizer view of a folder.
func newHFView(f *folder) (*hfView, error) {
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	stm, err := f.jsonObject("special_tokens_map.json")
	if err != nil {
		return nil, err
	}
	cfg, err := f.jsonObject("config.json")
	if err != nil {
		return nil, err
	}
	v := &hfView{added: map[int]*AddedToken{}, byContent: map[string]int{}}
	v.class, _ = tc["tokenizer_class"].(string)
	v.class = strings.TrimSuffix(v.class, "Fast")
	if v.class == "" {
		if mt, ok := cfg["model_type"].(string); ok {
			v.class = modelTypeTokenizer[mt]
		}
	}
	tok, err := f.tokenizerJSON()
	if err != nil {
		return nil, err
	}
	slowWordPiece := false
	switch {
	case tok != nil:
		v.file = tok.File
		v.modelType = tok.Model.Type
		if tok.Model.Type == ModelUnigram {
			v.vocab = make(map[string]int, len(tok.Model.Pieces))
			for i, p := range tok.Model.Pieces {
				v.vocab[p.Piece] = i
			}
		} else {
			v.vocab = tok.Model.Vocab
		}
		v.normalizer, v.preTokenizer, v.postProcessor, v.decoder = tok.Normalizer, tok.PreTokenizer, tok.PostProcessor, tok.Decoder
		v.unkToken, v.merges = tok.Model.UnkToken, tok.Model.Merges
		for i := range tok.AddedTokens {
			v.addToken(tok.AddedTokens[i], true)
		}
	case f.isFile("vocab.txt"):
		slowWordPiece = true
		if err := v.slowWordPiece(f, tc); err != nil {
			return nil, err
		}
	case f.isFile("vocab.json") && f.isFile("merges.txt"):
		if err := v.slowByteLevel(f); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %s has no tokenizer.json, vocab.txt or vocab.json+merges.txt", ErrNotFound, f.dir)
	}
	if b, ok := tc["clean_up_tokenization_spaces"].(bool); ok {
		v.cleanUp = b
	} else {
		v.cleanUp = v.class == "BertTokenizer" || v.class == "DistilBertTokenizer"
	}
	// added_tokens_decoder of tokenizer_config.json: tokens not yet known.
	if raw, ok := tc["added_tokens_decoder"].(map[string]any); ok {
		ids := make([]int, 0, len(raw))
		byID := map[int]map[string]any{}
		for k, x := range raw {
			id, err := parseIntKey(k)
			if err != nil {
				return nil, errorf(ErrFormat, f.path("tokenizer_config.json"), "added_tokens_decoder."+k, "key is not a token id")
			}
			m, ok := x.(map[string]any)
			if !ok {
				return nil, errorf(ErrFormat, f.path("tokenizer_config.json"), "added_tokens_decoder."+k, "is %s, want an object", describe(x))
			}
			ids = append(ids, id)
			byID[id] = m
		}
		sort.Ints(ids)
		for _, id := range ids {
			m := byID[id]
			if _, known := v.added[id]; known {
				continue
			}
			content, ok := m["content"].(string)
			if !ok {
				return nil, errorf(ErrFormat, f.path("tokenizer_config.json"), fmt.Sprintf("added_tokens_decoder.%d.content", id), "is %s, want a string", describe(m["content"]))
			}
			special, _ := m["special"].(bool)
			normalized, present := m["normalized"].(bool)
			if !present {
				normalized = !special
			}
			v.addToken(AddedToken{ID: -1, Content: content, Special: special, Normalized: normalized}, false)
		}
	}
	// The named special tokens: tokenizer_config.json, else
	// special_tokens_map.json, else the class default.
	def := tokenizerClasses[v.class]
	defaults := map[string]string{"bos": def.bos, "eos": def.eos, "unk": def.unk, "sep": def.sep, "pad": def.pad, "cls": def.cls, "mask": def.mask}
	seen := map[string]bool{}
	addSpecial := func(x any) {
		content, normalized := "", false
		switch t := x.(type) {
		case string:
			content = t
		case map[string]any:
			content, _ = t["content"].(string)
			normalized, _ = t["normalized"].(bool)
		}
		if content == "" || seen[content] {
			return
		}
		seen[content] = true
		v.specials = append(v.specials, content)
		v.addToken(AddedToken{ID: -1, Content: content, Special: true, Normalized: normalized}, false)
	}
	named := map[string]string{}
	for _, a := range specialAttrs {
		key := a + "_token"
		if x, ok := tc[key]; ok {
			addSpecial(x)
			named[a] = specialContent(x)
		} else if x, ok := stm[key]; ok {
			addSpecial(x)
			named[a] = specialContent(x)
		} else if defaults[a] != "" {
			addSpecial(defaults[a])
			named[a] = defaults[a]
		}
	}
	if slowWordPiece {
		// BertTokenizer's post-processor: cls $A sep (its __init__).
		cls := named["cls"]
		if cls == "" {
			cls = "[CLS]"
		}
		sep := named["sep"]
		if sep == "" {
			sep = "[SEP]"
		}
		specials := map[string]any{}
		full := v.fullVocab()
		for _, s := range []string{cls, sep} {
			if id, ok := full[s]; ok {
				specials[s] = map[string]any{"id": s, "ids": []any{json.Number(strconv.Itoa(id))}, "tokens": []any{s}}
			}
		}
		v.postProcessor = map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": cls, "type_id": json.Number("0")}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": json.Number("0")}},
			map[string]any{"SpecialToken": map[string]any{"id": sep, "type_id": json.Number("0")}},
		}, "special_tokens": specials}
		v.unkToken = named["unk"]
		if v.unkToken == "" {
			v.unkToken = "[UNK]"
		}
	}
	for _, key := range []string{"additional_special_tokens", "extra_special_tokens"} {
		x, ok := tc[key]
		if !ok {
			x = stm[key]
		}
		if list, ok := x.([]any); ok {
			for _, e := range list {
				addSpecial(e)
			}
		}
	}
	return v, nil
}

// addToken registers an added token. fromFile tokens keep their declared
// id; others are new tokens (id -1) that get the id tokenizers'
// AddedVocabulary gives them: the model's id when the content is in the
// model vocabulary, the existing id when it is already added, else the next
// free id after the model vocabulary and the added tokens. A token already
// known takes the special flag of a named special token.
func (v *hfView) addToken(a AddedToken, fromFile bool) {
	if id, ok := v.byContent[a.Content]; ok && !fromFile {
		if a.Special {
			v.added[id].Special = true
		}
		return
	}
	if !fromFile {
		if id, ok := v.vocab[a.Content]; ok {
			a.ID = id
		} else {
			a.ID = len(v.vocab)
			for _, id := range v.addedByID {
				if id >= len(v.vocab) {
					a.ID = max(a.ID, id+1)
				}
			}
		}
	}
	if _, ok := v.added[a.ID]; !ok {
		v.addedByID = append(v.addedByID, a.ID)
		sort.Ints(v.addedByID)
	}
	tok := a
	v.added[a.ID] = &tok
	v.byContent[a.Content] = a.ID
}

// specialContent is the text of a named special token given as a string
// or as an AddedToken object, "" for anything else.
func specialContent(x any) string {
	switch t := x.(type) {
	case string:
		return t
	case map[string]any:
		s, _ := t["content"].(string)
		return s
	}
	return ""
}

// parseIntKey is Python's int(s) for an added_tokens_decoder key.
func parseIntKey(s string) (int, error) {
	id, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || id < 0 || id > math.MaxInt32 {
		return 0, fmt.Errorf("bad id %q", s)
	}
	return id, nil
}

// fullVocab is get_vocab(): the model vocabulary and the added tokens.
func (v *hfView) fullVocab() map[string]int {
	out := make(map[string]int, len(v.vocab)+len(v.added))
	for t, id := range v.vocab {
		out[t] = id
	}
	for id, a := range v.added {
		out[a.Content] = id
	}
	return out
}

// reverse maps ids to tokens of the full vocabulary: an added token wins
// over a model token of the same id (tokenizers' id_to_token).
func (v *hfView) reverse() map[int]string {
	out := make(map[int]string, len(v.vocab)+len(v.added))
	for t, id := range v.vocab {
		if prev, dup := out[id]; !dup || t < prev {
			out[id] = t // deterministic for a (broken) vocabulary with shared ids
		}
	}
	for id, a := range v.added {
		out[id] = a.Content
	}
	return out
}

// slowWordPiece is BertTokenizer built from vocab.txt (transformers'
// BertConverter): WordPiece with "##", BertNormalizer, BertPreTokenizer,
// [CLS] $A [SEP], WordPiece decoder.
func (v *hfView) slowWordPiece(f *folder, tc map[string]any) error {
	switch v.class {
	case "BertTokenizer", "DistilBertTokenizer":
	default:
		return errorf(ErrUnsupported, f.path("vocab.txt"), "", "tokenizer class %q is not built from vocab.txt here (want BertTokenizer)", v.class)
	}
	b, err := f.bytes("vocab.txt")
	if err != nil {
		return err
	}
	if v.vocab, err = ParseVocabTxt(b, f.path("vocab.txt")); err != nil {
		return err
	}
	v.file = f.path("vocab.txt")
	v.modelType = ModelWordPiece
	lower := true
	if x, ok := tc["do_lower_case"].(bool); ok {
		lower = x
	}
	chinese := true
	if x, ok := tc["tokenize_chinese_chars"].(bool); ok {
		chinese = x
	}
	v.normalizer = map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": chinese, "strip_accents": tc["strip_accents"], "lowercase": lower}
	v.preTokenizer = map[string]any{"type": "BertPreTokenizer"}
	v.decoder = map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true}
	return nil
}

// slowByteLevel is a GPT-2 style tokenizer built from vocab.json and
// merges.txt (transformers' GPT2Converter / Qwen2Converter).
func (v *hfView) slowByteLevel(f *folder) error {
	b, err := f.bytes("vocab.json")
	if err != nil {
		return err
	}
	if v.vocab, err = ParseVocabJSON(b, f.path("vocab.json")); err != nil {
		return err
	}
	v.file = f.path("vocab.json")
	v.modelType = ModelBPE
	switch v.class {
	case "GPT2Tokenizer", "CodeGenTokenizer", "GPTNeoXTokenizer":
		v.preTokenizer = byteLevel(false, true)
	case "Qwen2Tokenizer":
		v.normalizer = map[string]any{"type": "NFC"}
		v.preTokenizer = seqPre(splitIsolated(qwen2Regex), byteLevel(false, false))
	default:
		return errorf(ErrUnsupported, f.path("vocab.json"), "", "tokenizer class %q is not built from vocab.json+merges.txt here (want GPT2Tokenizer or Qwen2Tokenizer)", v.class)
	}
	v.decoder = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	mb, err := f.bytes("merges.txt")
	if err != nil {
		return err
	}
	if v.merges, _, err = ParseMergesTxt(mb, f.path("merges.txt")); err != nil {
		return err
	}
	if !f.isFile("added_tokens.json") {
		return nil
	}
	raw, err := f.bytes("added_tokens.json")
	if err != nil {
		return err
	}
	entries, err := parseIDObject(raw, f.path("added_tokens.json"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		v.addToken(AddedToken{ID: e.ID, Content: e.Content, Normalized: true}, true)
	}
	return nil
}

// roundTrip is tokenizer.decode(tokenizer.encode(token)) for an added
// token that is not normalized (get_vocab_base): the added-token matcher
// encodes the content to its own id, and decoding emits an added token
// as it is unless it is also a model token, which goes through the
// decoder; transformers then cleans up spaces for non-BPE models when
// clean_up_tokenization_spaces is set.
func (v *hfView) roundTrip(content string, id int) (string, error) {
	out := content
	if mid, ok := v.vocab[content]; ok && mid == id {
		var err error
		if out, err = decodeOne(v.decoder, content); err != nil {
			return "", err
		}
	}
	if v.cleanUp && v.modelType != ModelBPE {
		out = cleanUpTokenization(out)
	}
	return out, nil
}

// maxDecodedToken bounds the bytes a decoder chain may make of one token
// (added tokens are at most a few hundred bytes).
const maxDecodedToken = 1 << 16

// decodeOne runs a tokenizers decoder on a single token.
func decodeOne(dec any, tok string) (string, error) {
	if dec == nil {
		return tok, nil
	}
	typ, _ := getKey(dec, "type").(string)
	switch typ {
	case "Sequence":
		list, _ := getKey(dec, "decoders").([]any)
		for _, d := range list {
			var err error
			if tok, err = decodeOne(d, tok); err != nil {
				return "", err
			}
		}
		return tok, nil
	case "ByteLevel":
		b := make([]byte, 0, len(tok))
		for _, r := range tok {
			c, ok := unicodeToByte[r]
			if !ok {
				return tok, nil
			}
			b = append(b, c)
		}
		return lossyUTF8(b), nil
	case "Metaspace":
		// The first token of a decode loses every replacement character
		// unless the prepend scheme is "never" (tokenizers' Metaspace
		// decode_chain); later tokens would get spaces.
		rep, _ := getKey(dec, "replacement").(string)
		scheme, _ := getKey(dec, "prepend_scheme").(string)
		if scheme == "" {
			if add, ok := getKey(dec, "add_prefix_space").(bool); ok && !add {
				scheme = "never"
			}
		}
		if rep != "" {
			with := " "
			if scheme != "never" {
				with = ""
			}
			tok = strings.ReplaceAll(tok, rep, with)
		}
		return tok, nil
	case "Replace":
		pat, ok := getKey(getKey(dec, "pattern"), "String").(string)
		content, _ := getKey(dec, "content").(string)
		if !ok {
			return "", fmt.Errorf("%w: Replace decoder with a regex pattern", ErrUnsupported)
		}
		// A chain of Replace decoders can grow a token geometrically; a
		// real decoder only swaps a marker for a space.
		if grown := len(tok) + strings.Count(tok, pat)*(len(content)-len(pat)); grown > maxDecodedToken {
			return "", fmt.Errorf("%w: Replace decoder grows token %.40q to %d bytes (at most %d)", ErrTooLarge, tok, grown, maxDecodedToken)
		}
		return strings.ReplaceAll(tok, pat, content), nil
	case "ByteFallback":
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
			if b, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				if b < utf8.RuneSelf {
					return string(rune(b)), nil
				}
				return "\uFFFD", nil
			}
		}
		return tok, nil
	case "Fuse":
		return tok, nil
	case "Strip":
		content, _ := getKey(dec, "content").(string)
		start, _ := pyInt(getKey(dec, "start"))
		stop, _ := pyInt(getKey(dec, "stop"))
		if r, size := utf8.DecodeRuneInString(content); size > 0 {
			for ; start > 0 && strings.HasPrefix(tok, string(r)); start-- {
				tok = tok[size:]
			}
			for ; stop > 0 && strings.HasSuffix(tok, string(r)); stop-- {
				tok = tok[:len(tok)-size]
			}
		}
		return tok, nil
	case "WordPiece":
		if c, ok := getKey(dec, "cleanup").(bool); !ok || c {
			tok = cleanUpTokenization(tok)
			tok = strings.ReplaceAll(tok, " do not", " don't")
		}
		return tok, nil
	}
	return "", fmt.Errorf("%w: decoder %q (needed to round-trip an added token)", ErrUnsupported, typ)
}

// cleanUpTokenization is transformers' clean_up_tokenization: spaces
// before punctuation and English contractions removed, one replacement
// after the other as the Python chain of str.replace does.
func cleanUpTokenization(s string) string {
	for _, r := range [][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// lossyUTF8 is Rust's String::from_utf8_lossy (and Python's
// decode("utf-8", "replace")): each maximal invalid subpart becomes one
// U+FFFD, where a subpart is a lead byte followed by the continuation bytes
// that could still complete it.
func lossyUTF8(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[:size])
			b = b[size:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[invalidSubpart(b):]
	}
	return sb.String()
}

// invalidSubpart is the length of the maximal subpart of an ill-formed
// sequence starting at b[0] (Unicode §3.9, table 3-7).
func invalidSubpart(b []byte) int {
	lead := b[0]
	var n int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		n = 2
	case lead == 0xE0:
		n, lo = 3, 0xA0
	case lead == 0xED:
		n, hi = 3, 0x9F
	case lead >= 0xE1 && lead <= 0xEF:
		n = 3
	case lead == 0xF0:
		n, lo = 4, 0x90
	case lead == 0xF4:
		n, hi = 4, 0x8F
	case lead >= 0xF1 && lead <= 0xF3:
		n = 4
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
