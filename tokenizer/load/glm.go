package load

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// GLM is _set_vocab_glm (conversion/base.py), the set_vocab of the GLM-4
// MoE classes (Glm4MoeModel, Glm4MoeLiteModel): the GPT2 routine's
// vocabulary with SpecialVocab's merges, then bos, eot, unk and eom set to
// the added tokens [gMASK], <|user|>, <|endoftext|> and <|observation|>
// (each only when SpecialVocab has not found that type already, as
// _set_special_token does). A tokenizer without one of those added tokens
// is an error, as the converter's KeyError is.
func GLM(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, glm)
}

// glmSpecials are _set_vocab_glm's special tokens, in its order.
var glmSpecials = []struct{ typ, content string }{
	{"bos", "[gMASK]"}, {"eot", "<|user|>"}, {"unk", "<|endoftext|>"}, {"eom", "<|observation|>"},
}

func glm(f *folder, l *kvList, opts Options) error {
	v, err := newHFView(f)
	if err != nil {
		return err
	}
	sv, err := newSpecialVocab(f, true, nil, -1)
	if err != nil {
		return err
	}
	tokens, types, pre, err := getVocabBase(f, opts, "gpt2")
	if err != nil {
		return err
	}
	l.str(gguf.KeyTokenizerModel, "gpt2")
	l.str(gguf.KeyTokenizerPre, pre)
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	for _, s := range glmSpecials {
		id, ok := v.byContent[s.content]
		if !ok {
			return fmt.Errorf("%w: %s: GLM's %s token %q is not an added token of the tokenizer", ErrFormat, v.file, s.typ, s.content)
		}
		if err := sv.setSpecialID(s.typ, int64(id)); err != nil {
			return err
		}
	}
	return sv.addTo(l)
}
