package load

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/tokenizer"
)

// Identification by the converter's own hash.
//
// Where ggufkit's encoder tokenizes exactly as the Hugging Face library
// (its encoders are llama.cpp's, and llama.cpp has a pre-tokenizer type for
// each model of the table precisely so that it agrees with the library),
// the ids of preHashText give the converter's hash, and the table gives
// the converter's name: exactly its answer, for every model in the table.
// The vocabulary is tokenized with the pre-tokenizers its structure calls
// for (hashCandidates), and only those: another pre-tokenizer can give the
// hash of another tokenizer of the same vocabulary (Llama 3's split on a
// vocabulary whose tokenizer.json splits as Qwen2 gives Llama 3's hash,
// where the library, splitting as Qwen2, gives a hash in no table).

// hashCandidates are the llama.cpp pre-tokenizer names whose splitting the
// tokenizer's structure calls for: preHashSplits, and the name the
// structure table gives.
func hashCandidates(v *hfView) []string {
	var out []string
	pre := canon(v.preTokenizer)
	for _, c := range preHashSplits {
		if c.pre == pre {
			out = append(out, c.name)
		}
	}
	if exprs, ok := splitRegexes(v.preTokenizer); ok && hashNormalizers[canon(v.normalizer)] {
		for _, name := range tokenizer.PreNamesForSplits(exprs) {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	if name, err := identifyPre(v); err == nil && !slices.Contains(out, name) {
		out = append(out, name)
	}
	return out
}

// preHashSplits maps the canonical pre_tokenizer of a byte-level BPE
// tokenizer.json to a llama.cpp pre-tokenizer name that splits text the
// same way: GPT-2's ByteLevel regex, the Llama 3 and Qwen2 split regexes,
// StarCoder's single digits.
var preHashSplits = []struct{ pre, name string }{
	{canon(byteLevel(false, true)), "gpt-2"},
	{canon(seqPre(splitIsolated(llama3Regex), byteLevel(false, false))), "llama-bpe"},
	{canon(seqPre(splitIsolated(qwen2Regex), byteLevel(false, false))), "qwen2"},
	{canon(seqPre(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(false, true))), "starcoder"},
}

// hashNormalizers are the normalizers under which the split regexes alone
// decide the ids of the check text: none, an empty Sequence (DeepSeek V3's
// tokenizer.json), NFC (Qwen's; the check text is in NFC). Another
// normalizer (lowercasing, NFKC …) changes the library's ids, so the
// regexes name no candidate.
var hashNormalizers = map[string]bool{"none": true, "Sequence[]": true, "NFC": true}

// splitRegexes lists the regexes a byte-level BPE pre_tokenizer splits
// with, in order: each Split (Regex pattern, Isolated, not inverted),
// Digits with individual_digits as \p{N}, and a final ByteLevel without a
// prefix space, which adds GPT-2's regex when use_regex is set (true when
// absent, as in tokenizers). ok is false for any other structure.
func splitRegexes(pre any) (exprs []string, ok bool) {
	parts := []any{pre}
	if getKey(pre, "type") == "Sequence" {
		parts, _ = getKey(pre, "pretokenizers").([]any)
	}
	for i, p := range parts {
		switch getKey(p, "type") {
		case "Split":
			r, isStr := getKey(getKey(p, "pattern"), "Regex").(string)
			if !isStr || getKey(p, "behavior") != "Isolated" || getKey(p, "invert") != false {
				return nil, false
			}
			exprs = append(exprs, r)
		case "Digits":
			if getKey(p, "individual_digits") != true {
				return nil, false
			}
			exprs = append(exprs, `\p{N}`)
		case "ByteLevel":
			if i != len(parts)-1 || getKey(p, "add_prefix_space") == true {
				return nil, false
			}
			if getKey(p, "use_regex") != false {
				exprs = append(exprs, tokenizer.GPT2Regex)
			}
			return exprs, len(exprs) > 0
		default:
			return nil, false
		}
	}
	return nil, false
}

// identifyByHash returns the converter's name for the tokenizer; "" when
// it cannot be told (hashes then holds the hashes of the structure's
// candidates, for the error).
func identifyByHash(v *hfView, model string, tokens []string, types []int32, merges []string) (name string, hashes []string) {
	base := hashTokenizer(v, model, tokens, types, merges)
	if base == nil {
		return "", nil
	}
	if model == "bert" {
		// WordPiece splits the same way whatever the name: BERT's split, after
		// BERT's normalizer with its flags, is what llama.cpp implements.
		if canon(v.preTokenizer) != "BertPreTokenizer" || getKey(v.normalizer, "type") != "BertNormalizer" {
			return "", nil
		}
		h := preHash(v, base)
		if n, ok := preHashes[h]; ok {
			return n, nil
		}
		return "", []string{h}
	}
	for _, cand := range hashCandidates(v) {
		tok, err := base.WithPreTokenizer(cand)
		if err != nil {
			continue
		}
		h := preHash(v, tok)
		if n, ok := preHashes[h]; ok {
			return n, nil
		}
		if h != "" && !slices.Contains(hashes, h) {
			hashes = append(hashes, h)
		}
	}
	return "", hashes
}

// hashTokenizer builds ggufkit's tokenizer of the vocabulary being
// converted ("gpt2" with the default pre-tokenizer, or "bert" in its
// phantom-space form with the normalizer's flags); nil when the encoder
// refuses the vocabulary, which then gives no hash.
func hashTokenizer(v *hfView, model string, tokens []string, types []int32, merges []string) *tokenizer.Tokenizer {
	voc := &tokenizer.Vocab{Model: model, Pre: "default", Tokens: tokens, Merges: merges,
		Types: make([]tokenizer.TokenType, len(types)), IDs: map[tokenizer.Special]int{}, Flags: map[string]bool{}}
	for i, t := range types {
		voc.Types[i] = tokenizer.TokenType(t)
	}
	if model == "bert" {
		voc.Tokens = phantomSpace(tokens, types)
		if id, ok := v.fullVocab()[v.unkToken]; ok && v.unkToken != "" {
			voc.IDs[tokenizer.SpecialUNK] = id
		}
		var sv specialVocab
		sv.parseNormalizer(v.normalizer)
		if sv.lowercase != nil {
			voc.Flags["normalizer.lowercase"] = truthy(sv.lowercase)
		}
		if sv.stripAccents != nil {
			voc.Flags["normalizer.strip_accents"] = truthy(sv.stripAccents)
		}
	}
	tok, err := tokenizer.New(voc)
	if err != nil {
		return nil
	}
	return tok
}

// preHash tokenizes preHashText as the converter's AutoTokenizer.encode
// does — the text alone, then the post-processor's special tokens around
// it — and returns the sha256 of the ids written as Python prints a list
// ("" when the encoder cannot tokenize it).
func preHash(v *hfView, tok *tokenizer.Tokenizer) string {
	ids, err := tok.Encode(preHashText, false, true)
	if err != nil {
		return ""
	}
	before, after := v.templateSpecials()
	all := append(append(append([]int(nil), before...), ids...), after...)
	parts := make([]string, len(all))
	for i, id := range all {
		parts[i] = strconv.Itoa(id)
	}
	sum := sha256.Sum256([]byte("[" + strings.Join(parts, ", ") + "]"))
	return hex.EncodeToString(sum[:])
}

// templateSpecials are the ids of the special tokens the post-processor
// puts before and after a single sequence: TemplateProcessing's "single"
// template (ids from its special_tokens map), Bert and Roberta
// processing's cls and sep, each part of a Sequence in turn.
func (v *hfView) templateSpecials() (before, after []int) {
	var walk func(pp any)
	walk = func(pp any) {
		switch getKey(pp, "type") {
		case "Sequence":
			list, _ := getKey(pp, "processors").([]any)
			for _, p := range list {
				walk(p)
			}
		case "TemplateProcessing":
			single, _ := getKey(pp, "single").([]any)
			specials := getKey(pp, "special_tokens")
			seen := false
			for _, item := range single {
				if getKey(item, "Sequence") != nil {
					seen = true
					continue
				}
				name, _ := getKey(getKey(item, "SpecialToken"), "id").(string)
				list, _ := getKey(getKey(specials, name), "ids").([]any)
				for _, x := range list {
					if id, ok := pyInt(x); ok {
						if seen {
							after = append(after, int(id))
						} else {
							before = append(before, int(id))
						}
					}
				}
			}
		case "BertProcessing", "RobertaProcessing":
			if cls, ok := getKey(pp, "cls").([]any); ok && len(cls) == 2 {
				if id, ok := pyInt(cls[1]); ok {
					before = append(before, int(id))
				}
			}
			if sep, ok := getKey(pp, "sep").([]any); ok && len(sep) == 2 {
				if id, ok := pyInt(sep[1]); ok {
					after = append(after, int(id))
				}
			}
		}
	}
	walk(v.postProcessor)
	return before, after
}

// phantomSpace is BertModel.set_vocab's phantom-space form: CONTROL tokens
// as they are, "##x" as "x", any other token t as "▁t".
func phantomSpace(tokens []string, types []int32) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		switch {
		case types[i] == typeControl:
			out[i] = tok
		case strings.HasPrefix(tok, "##"):
			out[i] = tok[2:]
		default:
			out[i] = "\u2581" + tok
		}
	}
	return out
}
