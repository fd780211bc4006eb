package load

import "github.com/ggufkit/ggufkit/gguf"

// Arctic is ArcticModel.set_vocab (conversion/arctic.py): the pieces of
// tokenizer.model padded to Options.VocabSize, then tokenizer_config.json's
// added_tokens_decoder written over their ids (Snowflake Arctic redefines
// ids 31998 and 31999 as BOS and EOS): a special token is UNKNOWN when it
// is the unk_token, else CONTROL, with score 0; any other USER_DEFINED
// with score -10000; ids past the vocabulary are skipped. Model "llama",
// pre "default", then SpecialVocab.
func Arctic(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, arctic)
}

func arctic(f *folder, l *kvList, opts Options) error {
	t, err := paddedPieces(f, opts)
	if err != nil {
		return err
	}
	n := len(t.tokens)
	if f.isFile("tokenizer_config.json") {
		tc, err := f.jsonObject("tokenizer_config.json")
		if err != nil {
			return err
		}
		decoder, err := addedTokensDecoder(f, tc)
		if err != nil {
			return err
		}
		for _, d := range decoder {
			if d.id >= n {
				continue
			}
			typ, score := typeUserDefined, float32(-10000)
			if truthy(d.raw["special"]) {
				unk, ok := tc["unk_token"]
				if !ok {
					return errorf(ErrFormat, f.path("tokenizer_config.json"), "unk_token", "is missing (the converter reads it for a special added token)")
				}
				typ, score = typeControl, 0
				if unk == d.content {
					typ = typeUnknown
				}
			}
			t.set(d.id, d.content, score, typ)
		}
	}
	t.writeLlama(l, "llama")
	return addSpecialVocab(f, l, false, len(t.tokens))
}
