package tokenizer

import (
	"slices"
	"testing"
)

// TestPreNamesForSplits checks the tokenizer.json split regexes of the
// families whose llama.cpp pre type is known, as the files (or
// llama-vocab.cpp's "original regex from tokenizer.json" comments) write
// them, against the names whose splitting they call for.
func TestPreNamesForSplits(t *testing.T) {
	const (
		gpt4o   = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		tekken  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		llama3  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		qwen2   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		qwen35  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		seed    = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
		dsv3Big = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
	)
	tests := []struct {
		name  string
		exprs []string
		has   []string // among the names returned
		not   []string
	}{
		{"gpt-4o / o200k", []string{gpt4o}, []string{"gpt-4o", "minimax-m2"}, []string{"tekken", "llama-bpe"}},
		{"tekken", []string{tekken}, []string{"tekken"}, []string{"gpt-4o"}},
		{"llama3 (GLM-4.x too)", []string{llama3}, []string{"chatglm-bpe", "glm4", "llama-bpe", "dbrx"}, []string{"qwen2"}},
		{"qwen2 (grok-2, hunyuan too)", []string{qwen2}, []string{"grok-2", "hunyuan", "qwen2"}, []string{"qwen35", "llama-bpe"}},
		{"qwen35", []string{qwen35}, []string{"qwen35"}, []string{"qwen2"}},
		{"seed-coder, literal CR LF", []string{seed}, []string{"seed-coder"}, nil},
		{"deepseek-v3", []string{`\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`, dsv3Big}, []string{"deepseek-v3", "hunyuan-dense"}, []string{"spark2_5"}},
		{"gpt-2 ByteLevel", []string{GPT2Regex}, []string{"gpt-2"}, nil},
		{"starcoder digits", []string{`\p{N}`, GPT2Regex}, []string{"starcoder"}, []string{"gpt-2"}},
		{"order matters", []string{dsv3Big, `\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`}, nil, []string{"deepseek-v3"}},
		{"unknown", []string{`\w+`}, nil, []string{"gpt-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PreNamesForSplits(tt.exprs)
			for _, n := range tt.has {
				if !slices.Contains(got, n) {
					// One name per setting: n may be represented by another
					// name of the same pre type and ignore_merges.
					pf := preNames[n]
					if !slices.ContainsFunc(got, func(g string) bool {
						return preNames[g].typ == pf.typ && preNames[g].ignoreMerges == pf.ignoreMerges
					}) {
						t.Errorf("%q (or a name of its setting) missing from %q", n, got)
					}
				}
			}
			for _, n := range tt.not {
				if preNames[n].typ != "" && slices.ContainsFunc(got, func(g string) bool { return preNames[g].typ == preNames[n].typ }) {
					t.Errorf("%q's pre type is among %q", n, got)
				}
			}
			if len(tt.has) == 0 && got != nil {
				t.Errorf("got %q, want none", got)
			}
		})
	}
}
