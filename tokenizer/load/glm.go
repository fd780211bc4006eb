package load

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// The GLM tokenizer routines: the GPT-2 style vocabulary of get_vocab_base,
// then SpecialVocab (with merges) given special-token ids looked up among
// the tokenizer's added tokens (tokenizer.get_added_vocab()[content]). The
// three routines differ only in which types they set to which token.

// addedSpecial is one _set_special_token(typ, get_added_vocab()[content])
// call of a GLM set_vocab.
type addedSpecial struct{ typ, content string }

var (
	// chatGLMSpecials are ChatGLMModel.set_vocab's (conversion/chatglm.py,
	// the branch for every model but THUDM/chatglm3-6b).
	chatGLMSpecials = []addedSpecial{{"eos", "<|endoftext|>"}, {"eot", "<|user|>"}, {"unk", "<|endoftext|>"}}
	// glm4Specials are Glm4Model.set_vocab's (conversion/glm.py) and
	// _set_vocab_glmedge's.
	glm4Specials = []addedSpecial{{"eos", "<|endoftext|>"}, {"eot", "<|user|>"}, {"unk", "<|endoftext|>"}, {"bos", "<|endoftext|>"}}
	// glmSpecials are _set_vocab_glm's (conversion/base.py), the routine of
	// Glm4MoeModel (GLM-4.5 and later).
	glmSpecials = []addedSpecial{{"bos", "[gMASK]"}, {"eot", "<|user|>"}, {"unk", "<|endoftext|>"}, {"eom", "<|observation|>"}}
)

// ChatGLM is ChatGLMModel.set_vocab (conversion/chatglm.py) for the
// Hugging Face GLM models (GlmForCausalLM, GLM-4 ChatGLMModel
// checkpoints with a tokenizer.json): GPT2's vocabulary, then eos and unk
// set to <|endoftext|> and eot to <|user|> where the tokenizer files name
// none. The converter's SentencePiece branch for THUDM/chatglm3-6b (its
// _name_or_path) needs that model's remote tokenizer code and is
// ErrUnsupported.
func ChatGLM(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		cfg, err := f.jsonObject("config.json")
		if err != nil {
			return err
		}
		if p, _ := cfg["_name_or_path"].(string); strings.Contains(p, "THUDM/chatglm3-6b") {
			return fmt.Errorf("%w: %s: ChatGLM3's SentencePiece vocabulary (set_vocab_chatglm3) needs its remote tokenizer code", ErrUnsupported, f.dir)
		}
		return gpt2AddedSpecials(f, l, opts, chatGLMSpecials)
	})
}

// GLM4 is Glm4Model.set_vocab (conversion/glm.py, GLM-4-0414): GPT2's
// vocabulary, then eos, unk and bos set to <|endoftext|> and eot to
// <|user|> where the tokenizer files name none.
func GLM4(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		return gpt2AddedSpecials(f, l, opts, glm4Specials)
	})
}

// GLM is _set_vocab_glm (conversion/base.py), Glm4MoeModel's (GLM-4.5,
// GLM-4.6): GPT2's vocabulary, then bos set to [gMASK], eot to <|user|>,
// unk to <|endoftext|> and eom to <|observation|> where the tokenizer
// files name none.
func GLM(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		return gpt2AddedSpecials(f, l, opts, glmSpecials)
	})
}

// gpt2AddedSpecials is get_vocab_base, the gpt2 model and pre-tokenizer
// keys, then SpecialVocab(load_merges=True) with specials set by
// _set_special_token (which keeps an id the files already gave) before
// add_to_gguf. An added token the routine looks up and the tokenizer does
// not have is the converter's KeyError.
func gpt2AddedSpecials(f *folder, l *kvList, opts Options, specials []addedSpecial) error {
	tokens, types, pre, err := getVocabBase(f, opts, "gpt2")
	if err != nil {
		return err
	}
	v, err := newHFView(f)
	if err != nil {
		return err
	}
	l.str(gguf.KeyTokenizerModel, "gpt2")
	l.str(gguf.KeyTokenizerPre, pre)
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	sv, err := newSpecialVocab(f, true, nil, -1)
	if err != nil {
		return err
	}
	for _, s := range specials {
		id, ok := v.byContent[s.content]
		if !ok {
			return fmt.Errorf("%w: %s: the tokenizer has no added token %q (the %s token of this model class)", ErrFormat, v.file, s.content, s.typ)
		}
		if err := sv.setSpecialID(s.typ, int64(id)); err != nil {
			return err
		}
	}
	return sv.addTo(l)
}
