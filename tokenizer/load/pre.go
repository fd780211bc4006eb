package load

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pre-tokenizer identification by structure, the fallback when the
// converter's hash cannot be computed or is not in its table
// (prehash.go).
//
// llama.cpp's converter names the pre-tokenizer (tokenizer.ggml.pre) by
// tokenizing a fixed text with the Hugging Face library and looking the
// sha256 of the ids up in a table (get_vocab_base_pre, conversion/base.py
// L1629-1959). The ids depend on the normalizer, the pre-tokenizer, the
// post-processor (a BOS is part of the hash) and the vocabulary. Without
// that library, ggufkit identifies the same names from the tokenizer's
// structure: the canonical form of its normalizer and pre-tokenizer (with
// the exact split regexes), whether the post-processor adds a leading
// special token, and a handful of tokens at fixed ids that tell apart the
// vocabularies sharing one structure. A tokenizer that matches no entry is
// an *UnknownPreError naming its signature — never a silent default; the
// caller can name the pre-tokenizer (Options.Pre, --tokenizer-pre).
//
// The table below holds the tokenizers of the supported families whose
// names could be checked against llama.cpp: by running its converter on
// the real files (gpt-2, jina-v2-en, llama-bpe) or against the vocab GGUFs
// llama.cpp ships (qwen2, starcoder, olmo: tokens from
// models/ggml-vocab-*.gguf). When the converter's table maps one hash to
// several names, the last one wins (its "if" chain has no "else"), so
// bge-small-en-v1.5 is "jina-v2-en", not "bert-bge", and the GPT-NeoX-20B
// vocabulary (MPT, Pythia, OLMo 1) is "olmo", not "mpt".

// The split regexes as they appear in tokenizer.json files.
const (
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Regex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// o200kRegex is o200k_base's split (tiktoken_ext/openai_public.py), as
	// Hugging Face's TikTokenConverter writes it into tokenizer.json.
	o200kRegex = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// preRule is one entry of the identification table.
type preRule struct {
	name string // the tokenizer.ggml.pre value
	ref  string // the model llama.cpp's table names for it
	// model, normalizer and pre are canonical signatures (see canon).
	model, normalizer, pre string
	// bos is the special token the post-processor must put first ("" =
	// none may be added, "*" = any or none).
	bos string
	// tokens must sit at these ids of the full vocabulary; "" means the
	// id must be unused.
	tokens map[int]string
}

var preRules = []preRule{
	{
		name: "llama-bpe", ref: "meta-llama/Meta-Llama-3-8B", model: ModelBPE, normalizer: "none",
		pre:    canon(seqPre(splitIsolated(llama3Regex), byteLevel(false, false))),
		bos:    "<|begin_of_text|>",
		tokens: map[int]string{0: "!", 127999: "éĶ¦", 128000: "<|begin_of_text|>", 128001: "<|end_of_text|>"},
	},
	{
		name: "qwen2", ref: "Qwen/Qwen1.5-7B", model: ModelBPE, normalizer: "NFC",
		pre:    canon(seqPre(splitIsolated(qwen2Regex), byteLevel(false, false))),
		bos:    "",
		tokens: map[int]string{0: "!", 151642: "â½Ĺ", 151643: "<|endoftext|>"},
	},
	{
		name: "gpt-2", ref: "openai-community/gpt2", model: ModelBPE, normalizer: "none",
		pre:    canon(byteLevel(false, true)),
		bos:    "",
		tokens: map[int]string{0: "!", 50255: "Ġgazed", 50256: "<|endoftext|>", 50257: ""},
	},
	{
		name: "olmo", ref: "allenai/OLMo-1.7-7B-hf (same hash as mosaicml/mpt-7b)", model: ModelBPE, normalizer: "NFC",
		pre:    canon(byteLevel(false, true)),
		bos:    "",
		tokens: map[int]string{0: "<|endoftext|>", 1: "<|padding|>", 50253: "ĠOutcomes", 50276: "  "},
	},
	{
		name: "starcoder", ref: "bigcode/starcoder2-3b", model: ModelBPE, normalizer: "none",
		pre:    canon(seqPre(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(false, true))),
		bos:    "",
		tokens: map[int]string{0: "<|endoftext|>", 1: "<fim_prefix>", 2: "<fim_middle>", 49151: "sdb"},
	},
	{
		// The o200k_base ranks (GPT-4o, gpt-oss) under their own split. The
		// hash cannot be computed here: llama.cpp's GPT4O regex is an ASCII
		// approximation of \p{Lu}/\p{Ll} without \p{M}, and splits the check
		// text's Khmer otherwise than the library does. transformers 5.24.0
		// gives this structure on these ranks the table's gpt-4o hash
		// (ccc2ef01…; TestO200kPre, testdata/README.md).
		name: "gpt-4o", ref: "Xenova/gpt-4o (o200k_base ranks; openai/gpt-oss-* share them)", model: ModelBPE, normalizer: "none",
		pre:    canon(seqPre(splitIsolated(o200kRegex), byteLevel(false, false))),
		bos:    "",
		tokens: map[int]string{0: "!", 100000: "Ġdew", 199997: "Ġcocos", 199999: "<|endoftext|>"},
	},
	{
		name: "jina-v2-en", ref: "BAAI/bge-small-en-v1.5 (same hash as jinaai/jina-embeddings-v2-base-en)", model: ModelWordPiece,
		normalizer: canon(map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "lowercase": true, "strip_accents": nil}),
		pre:        canon(map[string]any{"type": "BertPreTokenizer"}),
		bos:        "[CLS]",
		tokens:     map[int]string{0: "[PAD]", 100: "[UNK]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]", 1996: "the", 30521: "##～"},
	},
}

// Constructors of the pre-tokenizer JSON objects the table is written with.
func byteLevel(prefix, regex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": prefix, "use_regex": regex}
}

func splitIsolated(regex string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false}
}

func seqPre(parts ...any) map[string]any {
	return map[string]any{"type": "Sequence", "pretokenizers": parts}
}

// preSignature is the structure of a tokenizer that the table matches.
type preSignature struct {
	model, normalizer, pre string
	bos                    string // the leading special token the post-processor adds, "" if none
}

// String writes the signature as UnknownPreError reports it.
func (s preSignature) String() string {
	b := s.bos
	if b == "" {
		b = "none"
	}
	return fmt.Sprintf("model=%s normalizer=%s pre_tokenizer=%s bos=%s", s.model, s.normalizer, s.pre, b)
}

func (v *hfView) signature() preSignature {
	return preSignature{model: v.modelType, normalizer: canon(v.normalizer), pre: canon(v.preTokenizer), bos: leadingSpecial(v.postProcessor)}
}

// identifyPre names the pre-tokenizer of v from the table.
func identifyPre(v *hfView) (string, error) {
	sig := v.signature()
	var reverse map[int]string
	var candidates []string
	for _, r := range preRules {
		if r.model != sig.model || r.normalizer != sig.normalizer || r.pre != sig.pre {
			continue
		}
		if r.bos != "*" && r.bos != sig.bos {
			continue
		}
		if reverse == nil {
			reverse = v.reverse()
		}
		ok := true
		for id, want := range r.tokens {
			if got, present := reverse[id]; got != want || (want == "" && present) {
				ok = false
				break
			}
		}
		if ok {
			return r.name, nil
		}
		candidates = append(candidates, r.name)
	}
	return "", &UnknownPreError{Signature: sig.String(), Candidates: candidates}
}

// leadingSpecial returns the special token a post-processor puts before
// the sequence (TemplateProcessing, alone or in a Sequence; Bert and
// Roberta processing put their cls token first), or "".
func leadingSpecial(pp any) string {
	switch getKey(pp, "type") {
	case "Sequence":
		list, _ := getKey(pp, "processors").([]any)
		for _, p := range list {
			if s := leadingSpecial(p); s != "" {
				return s
			}
		}
	case "TemplateProcessing":
		single, _ := getKey(pp, "single").([]any)
		if len(single) > 0 {
			id, _ := getKey(getKey(single[0], "SpecialToken"), "id").(string)
			return id
		}
	case "BertProcessing", "RobertaProcessing":
		if cls, ok := getKey(pp, "cls").([]any); ok && len(cls) > 0 {
			s, _ := cls[0].(string)
			return s
		}
	}
	return ""
}

// ignoredKeys do not change how text is split (offsets only).
var ignoredKeys = map[string]bool{"trim_offsets": true, "type": true}

// canon writes a normalizer or pre-tokenizer as a canonical signature:
// Type(key=value,…) with keys sorted and offset-only keys left out,
// Sequence[…] for sequences, "none" for null. ByteLevel's use_regex, which
// old files omit, defaults to true as in tokenizers. A precompiled
// charsmap is written as its length only.
func canon(x any) string {
	if x == nil {
		return "none"
	}
	m, ok := x.(map[string]any)
	if !ok {
		return canonValue(x)
	}
	typ, _ := m["type"].(string)
	switch typ {
	case "Sequence":
		list, _ := m["pretokenizers"].([]any)
		if l, ok := m["normalizers"].([]any); ok {
			list = l
		}
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = canon(e)
		}
		return "Sequence[" + strings.Join(parts, ",") + "]"
	case "ByteLevel":
		if _, ok := m["use_regex"]; !ok {
			m = withKey(m, "use_regex", true)
		}
	case "Precompiled":
		s, _ := m["precompiled_charsmap"].(string)
		return fmt.Sprintf("Precompiled(%d)", len(s))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !ignoredKeys[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return typ
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + canonValue(m[k])
	}
	return typ + "(" + strings.Join(parts, ",") + ")"
}

func withKey(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// canonValue writes a scalar or a pattern object ({"Regex": …} or
// {"String": …}) of a signature.
func canonValue(x any) string {
	switch t := x.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(t)
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return t.String()
	case map[string]any:
		if len(t) == 1 {
			for k, v := range t {
				if k == "Regex" || k == "String" {
					s, _ := v.(string)
					return k + "=" + strconv.Quote(s)
				}
			}
		}
		return canon(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = canonValue(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(x)
}
