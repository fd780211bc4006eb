package tokenizer

import (
	"slices"
	"sort"
	"strings"
)

// Matching a Hugging Face tokenizer.json's split regexes to llama.cpp's
// pre-tokenizer types.
//
// llama.cpp gives each pre type the regex list of the tokenizer.json it
// was written for (llm_tokenizer_bpe, llama-vocab.cpp L280-575), rewritten
// where its regex engine needed it; its comments keep the original of each
// rewritten one ("original regex from tokenizer.json"). A tokenizer.json
// whose split regexes are one of those lists, in order, splits text as
// that pre type does, and only then can the converter's pre-tokenizer hash
// be computed with ggufkit's encoder (the caller then looks the hash up:
// the name is the converter's, never a guess from the regexes alone).
// Where llama.cpp's rewrite only approximates the original (GPT-4o's and
// Tekken's \p{Lu}/\p{Ll} classes become ASCII-case lookaheads without
// \p{M}), its splitting — and so ggufkit's hash — can differ from the
// library's on the check text (o200k: its Khmer), and the hash names
// nothing; such tokenizers need an entry of the structure table.

// hfRegexForms are the tokenizer.json originals of the regex sets llama.cpp
// rewrote, by pre type, as llama-vocab.cpp's comments give them (commit
// 0c1e570): GPT-4o/o200k (gpt-4o, llama4, minimax-m2, kanana2, talkie),
// Tekken, Tiny Aya, Bailing MoE's possessive quantifiers.
var hfRegexForms = map[preType][][]string{
	preGpt4o: {{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}},
	preTekken: {{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}},
	preBailingmoe: {{
		`'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`,
	}},
}

func init() {
	// MiniMax-M2 shares GPT-4o's set (llama-vocab.cpp: one case for both).
	hfRegexForms[preMinimaxM2] = hfRegexForms[preGpt4o]
}

// caseFreeContractions is the contraction group as tokenizer.json files
// write it, and as llama.cpp spells it without the (?i:) flag its regex
// engine lacks.
const (
	caseFreeContractions = `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
	spelledContractions  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`
)

// normRegex writes a split regex in one spelling: the escapes \r and \n as
// the characters they match (tokenizer.json files use either), the
// case-insensitive contraction group spelled out as llama.cpp does.
func normRegex(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'r':
				b.WriteByte('\r')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			}
			i++
			continue
		}
		b.WriteByte(c)
	}
	return strings.ReplaceAll(b.String(), caseFreeContractions, spelledContractions)
}

// GPT2Regex is the split a ByteLevel pre-tokenizer with use_regex applies
// (tokenizers' byte_level.rs), in llama.cpp's spelling (its GPT2 set).
const GPT2Regex = reGPT2

// PreNamesForSplits returns the tokenizer.ggml.pre names whose pre type
// splits text with exactly the regexes given (a tokenizer.json's Split
// regexes in order, GPT2Regex for a ByteLevel split), in llama.cpp's
// spelling or in the original one its comments name: one name per
// distinct tokenizer setting (pre type, ignore_merges), sorted. nil when
// no pre type has that list.
func PreNamesForSplits(exprs []string) []string {
	want := make([]string, len(exprs))
	for i, e := range exprs {
		want[i] = normRegex(e)
	}
	same := func(list []string) bool {
		if len(list) != len(want) {
			return false
		}
		for i, e := range list {
			if normRegex(e) != want[i] {
				return false
			}
		}
		return true
	}
	types := map[preType]bool{}
	for _, set := range preRegexSets {
		if set.rawUTF8 {
			continue // SPM-style BPE: not a byte-level tokenizer.json split
		}
		for _, typ := range set.types {
			if same(set.exprs) || slices.ContainsFunc(hfRegexForms[typ], same) {
				types[typ] = true
			}
		}
	}
	if len(types) == 0 {
		return nil
	}
	names := make([]string, 0, len(preNames))
	for n := range preNames {
		names = append(names, n)
	}
	sort.Strings(names)
	type setting struct {
		typ          preType
		ignoreMerges bool
	}
	seen := map[setting]bool{}
	var out []string
	for _, n := range names {
		pf := preNames[n]
		s := setting{pf.typ, pf.ignoreMerges}
		if !types[pf.typ] || seen[s] || pf.escapeSpaces {
			continue
		}
		seen[s] = true
		out = append(out, n)
	}
	return out
}
