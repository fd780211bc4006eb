package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// byteTokens returns <0x00> … <0xFF>, typed BYTE.
func byteTokens() ([]string, []TokenType) {
	var toks []string
	var types []TokenType
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, TypeByte)
	}
	return toks, types
}

// smallVocab builds a vocabulary of one model from its tokens, all NORMAL
// unless types says otherwise.
func smallVocab(model string, tokens []string, types []TokenType) *Vocab {
	v := &Vocab{Model: model, Tokens: tokens, IDs: map[Special]int{}, Flags: map[string]bool{}}
	v.Types = make([]TokenType, len(tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
	}
	copy(v.Types, types)
	v.Scores = make([]float32, len(tokens))
	return v
}

// TestHostileVocab loads vocabularies a crafted or broken GGUF could carry:
// each must give an ErrVocab, never a panic.
func TestHostileVocab(t *testing.T) {
	bytesToks, bytesTypes := byteTokens()
	plamoTooLong := smallVocab("plamo2", append(append([]string{}, bytesToks...), strings.Repeat("x", 2000)), bytesTypes)
	tests := []struct {
		name string
		v    *Vocab
		o    Options
		want string
	}{
		{"no tokens", smallVocab("llama", nil, nil), Options{}, "missing or empty"},
		{"unknown model", smallVocab("sentencepiece", []string{"a"}, nil), Options{}, `unknown tokenizer model "sentencepiece"`},
		{"BPE without merges", smallVocab("gpt2", []string{"a"}, nil), Options{}, "needs tokenizer.ggml.merges"},
		{"unknown pre", func() *Vocab {
			v := smallVocab("gpt2", []string{"a"}, nil)
			v.Merges, v.Pre = []string{}, "my-new-pre"
			return v
		}(), Options{}, `unknown pre-tokenizer type "my-new-pre"`},
		{"duplicate token", smallVocab("llama", []string{"a", "b", "a"}, nil), Options{}, `token 2 "a" repeats token 0`},
		{"short scores", func() *Vocab {
			v := smallVocab("llama", []string{"a", "b"}, nil)
			v.Scores = v.Scores[:1]
			return v
		}(), Options{}, "fewer scores"},
		{"short byte token", smallVocab("llama", []string{"<unk>", "<0"}, []TokenType{TypeUnknown, TypeByte}), Options{}, "too short"},
		{"WordPiece byte token", smallVocab("bert", []string{"[UNK]", "<0x41>"}, []TokenType{TypeControl, TypeByte}), Options{}, "llama.cpp aborts"},
		{"BPE token beyond U+10FFFF", func() *Vocab {
			v := smallVocab("gpt2", []string{"a", "\xf5\x80\x80\x80"}, nil)
			v.Merges = []string{}
			return v
		}(), Options{}, "invalid codepoint U+140000"},
		{"charsmap shorter than its header", func() *Vocab {
			v := smallVocab("t5", []string{"<pad>", "</s>", "<unk>"}, nil)
			v.PrecompiledCharsmap = []byte{1, 0}
			return v
		}(), Options{}, "too small"},
		{"charsmap blob overrun", func() *Vocab {
			v := smallVocab("t5", []string{"<pad>", "</s>", "<unk>"}, nil)
			v.PrecompiledCharsmap = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0}
			return v
		}(), Options{}, "overruns"},
		{"Phi-3 without </s>", smallVocab("llama", []string{"<unk>", "<s>", "x"}, nil), Options{ModelName: "Phi-3-mini"}, `token "</s>" is missing`},
		{"PLaMo-2 without byte tokens", smallVocab("plamo2", []string{"a", "b"}, nil), Options{}, "byte token for <0x00>"},
		{"PLaMo-2 token too long", plamoTooLong, Options{}, "too long to index"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := NewWithOptions(tc.v, tc.o)
			if !errors.Is(err, ErrVocab) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewWithOptions = %v, %v; want an ErrVocab containing %q", tok, err, tc.want)
			}
		})
	}
}

// TestHostileVocabEncode tokenizes with vocabularies that load (as they do
// in llama.cpp) but cannot encode some text: each must give an
// ErrTokenize, never a panic, an id out of range or an endless loop.
func TestHostileVocabEncode(t *testing.T) {
	bpe := func(pre string, tokens ...string) *Vocab {
		v := smallVocab("gpt2", tokens, nil)
		v.Pre, v.Merges = pre, []string{"a b", "nomerge", "", "a", "ab c d"}
		return v
	}
	rwkv := smallVocab("rwkv", []string{"ab", `\x41`, "abcd"}, nil)
	tests := []struct {
		name       string
		v          *Vocab
		text       string
		addSpecial bool
		want       string // "" = must succeed
	}{
		// The default BOS id 11 of a gpt2 vocabulary is out of range here,
		// so it is dropped; llama-bpe asks for a BOS all the same.
		{"BOS out of range", bpe("llama-bpe", "a", "b", "ab"), "ab", true, "needs a BOS token"},
		{"special id out of range ignored", func() *Vocab {
			v := bpe("gpt-2", "a", "b", "ab")
			v.IDs[SpecialBOS], v.IDs[SpecialEOS] = 1<<40, -5
			return v
		}(), "ab", false, ""},
		{"malformed merges skipped", bpe("gpt-2", "a", "b", "ab", "c"), "abc", false, ""},
		{"SPM byte without a token", smallVocab("llama", []string{"<unk>", "<s>", "</s>", "▁"}, []TokenType{TypeUnknown, TypeControl, TypeControl}), "é", false, "byte 0xC3 has no token"},
		{"SPM add_bos with BOS out of range", smallVocab("llama", []string{"<unk>"}, []TokenType{TypeUnknown}), "", true, "needs a BOS token"},
		{"WordPiece without unknown token", smallVocab("bert", []string{"▁a"}, nil), "a b", false, "no unknown token"},
		{"WordPiece needs SEP", func() *Vocab {
			v := smallVocab("bert", []string{"[UNK]", "[CLS]", "▁a"}, []TokenType{TypeControl, TypeControl})
			v.IDs[SpecialUNK], v.IDs[SpecialBOS] = 0, 1
			return v
		}(), "a", true, "needs a SEP token"},
		{"Unigram without unknown token", func() *Vocab {
			v := smallVocab("t5", []string{"▁a"}, nil)
			return v
		}(), "b", false, "unknown token"},
		{"RWKV byte without a token", rwkv, "ab\x01", false, "no unknown token"},
		// llama.cpp loops forever here: "a" starts a trie path but is no
		// token.
		{"RWKV endless loop", rwkv, "aba", false, "loops forever"},
		{"RWKV", rwkv, "abAabcd", false, ""},
		{"no vocabulary", smallVocab("none", nil, nil), "a", false, "has no tokenizer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := New(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := tok.Encode(tc.text, tc.addSpecial, false)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, ErrTokenize) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Encode = %v, %v; want an ErrTokenize containing %q", ids, err, tc.want)
			}
			for _, id := range ids {
				if id < 0 || id >= tok.NumTokens() {
					t.Errorf("id %d out of range", id)
				}
			}
		})
	}
}

// kvMap is a GGUF's metadata as a map.
type kvMap map[string]gguf.Value

func (m kvMap) KV(key string) (gguf.Value, bool) {
	v, ok := m[key]
	return v, ok
}

// TestFromKVsBadTypes gives each tokenizer key a value of the wrong type.
func TestFromKVsBadTypes(t *testing.T) {
	base := func() kvMap {
		return kvMap{
			gguf.KeyTokenizerModel:  gguf.String("llama"),
			gguf.KeyTokenizerTokens: gguf.Array([]string{"a", "b"}),
		}
	}
	tests := []struct {
		name string
		key  string
		val  gguf.Value
		want string
	}{
		{"model", gguf.KeyTokenizerModel, gguf.Uint32(1), "want string"},
		{"tokens", gguf.KeyTokenizerTokens, gguf.Uint32(1), "not a string array"},
		{"scores length", gguf.KeyTokenizerScores, gguf.Array([]float32{1}), "must hold 2"},
		{"types length", gguf.KeyTokenizerTokenType, gguf.Array([]int32{1, 1, 1}), "must hold 2"},
		{"merges", gguf.KeyTokenizerMerges, gguf.Array([]float32{1}), "not a string array"},
		{"bos", "tokenizer.ggml.bos_token_id", gguf.String("1"), "want an integer"},
		{"flag", "tokenizer.ggml.add_bos_token", gguf.Uint32(1), "want bool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kvs := base()
			kvs[tc.key] = tc.val
			_, err := Load(kvs)
			if !errors.Is(err, ErrVocab) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v; want an ErrVocab containing %q", err, tc.want)
			}
		})
	}
	t.Run("no model", func(t *testing.T) {
		kvs := base()
		delete(kvs, gguf.KeyTokenizerModel)
		if _, err := Load(kvs); !errors.Is(err, ErrVocab) {
			t.Fatalf("Load = %v; want an ErrVocab", err)
		}
	})
}

// TestRegexBudget shows the pre-tokenizer regex engine stops, with
// ErrRegexBudget, once its budget is spent on a quadratic search.
func TestRegexBudget(t *testing.T) {
	re, err := compileECMA(decodeLenient(`\s+$`))
	if err != nil {
		t.Fatal(err)
	}
	text := decodeLenient(strings.Repeat(" ", 2000) + "1")
	got, err := re.split(text, []int{len(text)}, 1<<30)
	if err != nil || len(got) != 1 {
		t.Fatalf("with a large budget: %v, %v", got, err)
	}
	if _, err := re.split(text, []int{len(text)}, 100000); !errors.Is(err, ErrRegexBudget) || !errors.Is(err, ErrTokenize) {
		t.Fatalf("with a small budget: %v, want ErrRegexBudget", err)
	}
}
