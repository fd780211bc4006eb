package load

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// Xverse is XverseModel.set_vocab (conversion/xverse.py): tokenizer.json
// (required) read through AutoTokenizer; every id below hparams vocab_size
// (default: the full vocabulary's size) takes its token from the full
// vocabulary, typed BYTE for "\x00" (written as "<b'\x00'>") and for
// <0xXX>, CONTROL or USER_DEFINED for added tokens (by their special
// flag), NORMAL otherwise; model "llama", pre "default", no scores; then
// SpecialVocab.
func Xverse(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, xverse)
}

func xverse(f *folder, l *kvList, opts Options) error {
	if !f.isFile("tokenizer.json") {
		// assert (dir_model / "tokenizer.json").is_file()
		return notFound(f, "tokenizer.json")
	}
	v, err := newHFView(f)
	if err != nil {
		return err
	}
	full := v.fullVocab()
	n := opts.VocabSize
	if n == 0 {
		n = len(full)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return err
	}
	for tok, id := range full {
		if id >= n {
			return fmt.Errorf("%w: %s: token %q has id %d: vocabulary size exceeds expected maximum size %d", ErrFormat, v.file, tok, id, n)
		}
	}
	reverse := v.reverse()
	tokens := make([]string, n)
	types := make([]int32, n)
	for i := range n {
		tok, ok := reverse[i]
		if !ok {
			// reverse_vocab[token_id]: a KeyError.
			return fmt.Errorf("%w: %s: no token has id %d (vocab_size %d)", ErrFormat, v.file, i, n)
		}
		switch _, added := v.byContent[tok]; {
		case tok == "\x00":
			tok, types[i] = `<b'\x00'>`, typeByte
		case isByteToken(tok):
			types[i] = typeByte
		case added:
			a := v.added[i]
			if a == nil {
				// added_tokens_decoder[token_id]: a KeyError.
				return fmt.Errorf("%w: %s: token %q of id %d is also an added token of another id", ErrFormat, v.file, tok, i)
			}
			types[i] = typeUserDefined
			if a.Special {
				types[i] = typeControl
			}
		default:
			types[i] = typeNormal
		}
		tokens[i] = tok
	}
	l.str(gguf.KeyTokenizerModel, "llama")
	l.str(gguf.KeyTokenizerPre, "default")
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	return addSpecialVocab(f, l, false, len(tokens))
}
