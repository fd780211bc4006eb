package load

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// XLMRoberta is XLMRobertaModel.set_vocab, BertModel._xlmroberta_set_vocab
// (conversion/bert.py): the SentencePiece Unigram model
// sentencepiece.bpe.model padded to vocab_size, then realigned to fairseq's
// ids as transformers' XLMRobertaTokenizer does (<s> <pad> </s> <unk>,
// then pieces 3 and up shifted by one, the last entry dropped), written as
// a "t5" (UGM) vocabulary with the model's normalizer settings. A folder
// with only a tokenizer.json (the converter's other branch, which asks
// transformers for the pieces) is refused.
func XLMRoberta(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error { return xlmRoberta(f, l, opts, -1) })
}

// nomicMoEMask is the id _xlmroberta_set_vocab gives <mask> for a
// nomic-bert-moe model: nomic-embed-text-v2-moe's sentencepiece.bpe.model
// lacks it.
const nomicMoEMask = 250001

// NomicBertMoE is _xlmroberta_set_vocab for a nomic-bert-moe model
// (NomicBertModel with moe_every_n_layers and a Unigram tokenizer.json):
// XLMRoberta's vocabulary with <mask> written as a control token at id
// 250001, which a vocabulary of fewer ids cannot hold (the converter's
// IndexError).
func NomicBertMoE(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		return xlmRoberta(f, l, opts, nomicMoEMask)
	})
}

// xlmRoberta writes XLM-R's vocabulary; mask, when not negative, is the id
// <mask> is set at.
func xlmRoberta(f *folder, l *kvList, opts Options, mask int) error {
	const name = "sentencepiece.bpe.model"
	m, err := loadSPM(f, name)
	if isNotFound(err) && f.isFile("tokenizer.json") {
		return fmt.Errorf("%w: %s has no %s: the converter's tokenizer.json branch for XLM-RoBERTa is not supported", ErrUnsupported, f.dir, name)
	}
	if err != nil {
		return err
	}
	if m.ModelType != SPMUnigram {
		// The converter asserts trainer_spec.model_type == 1.
		return fmt.Errorf("%w: %s: SentencePiece model type %d, want UNIGRAM", ErrUnsupported, f.path(name), m.ModelType)
	}
	n := max(opts.VocabSize, len(m.Pieces))
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return err
	}
	if n < 4 {
		return fmt.Errorf("%w: %s: vocabulary of %d ids, fewer than XLM-R's 4 special tokens", ErrFormat, f.path(name), n)
	}
	t := newPadTable(n)
	for id, p := range m.Pieces {
		t.set(id, p.Piece, p.Score, spmType(p))
	}
	// Realign: fairseq's four specials, then pieces 3..n-2 one id up.
	copy(t.tokens[4:], t.tokens[3:n-1])
	copy(t.scores[4:], t.scores[3:n-1])
	copy(t.types[4:], t.types[3:n-1])
	for i, tok := range []string{"<s>", "<pad>", "</s>", "<unk>"} {
		t.set(i, tok, 0, typeControl)
	}
	t.types[3] = typeUnknown
	if mask >= 0 {
		if mask >= n {
			return fmt.Errorf("%w: %s: vocabulary of %d ids has no id %d for <mask>", ErrFormat, f.path(name), n, mask)
		}
		t.set(mask, "<mask>", 0, typeControl)
	}
	t.writeLlama(l, "t5")
	l.boolean(gguf.KeyTokenizerAddSpacePrefix, m.AddDummyPrefix)
	if err := l.u32(gguf.KeyTokenizerTokenTypeCount, typeCount(opts)); err != nil {
		return err
	}
	l.boolean(gguf.KeyTokenizerRemoveExtraSpaces, m.RemoveExtraWhitespaces)
	array(l, gguf.KeyTokenizerPrecompiledCharmap, m.PrecompiledCharsmap)
	return addSpecialVocab(f, l, false, len(t.tokens))
}

// Roberta is RobertaModel.set_vocab (conversion/bert.py): a tokenizer.json
// is read as a GPT-2 style BPE (_set_vocab_gpt2) followed by the token
// type count; without one, BertModel's WordPiece routine (Bert).
func Roberta(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		if !f.isFile("tokenizer.json") {
			return bert(f, l, opts)
		}
		if err := gpt2(f, l, opts); err != nil {
			return err
		}
		return l.u32(gguf.KeyTokenizerTokenTypeCount, typeCount(opts))
	})
}

// typeCount is hparams.get("type_vocab_size", 1).
func typeCount(opts Options) int64 {
	if opts.TypeVocabSize == 0 {
		return 1
	}
	return int64(opts.TypeVocabSize)
}
