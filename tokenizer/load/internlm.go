package load

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// InternLM2 is InternLM2Model.set_vocab (conversion/internlm.py): the
// pieces of tokenizer.model (vocab_size of them, default the piece count;
// a "\x00" piece becomes "🐉", a piece starting with "[UNUSED" is UNUSED),
// added_tokens.json appended, tokenizer_config.json's added_tokens_decoder
// and tokenizer.json's added_tokens written over their ids (score -1000,
// CONTROL when special, else USER_DEFINED), model "llama", pre "default",
// add_space_prefix from the model's normalizer, then SpecialVocab with eos
// replaced by "<|im_end|>" when an added token has that text.
func InternLM2(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, internLM2)
}

// InternLM3 is InternLM3Model.set_vocab: _create_vocab_sentencepiece,
// model "llama", pre "default", then add_space_prefix when
// tokenizer_config.json has the key, then SpecialVocab, to which every
// special added_tokens_decoder entry is given under its own text as the
// type (only a text that is a special-token type name has a GGUF key), and
// whose eos becomes "<|im_end|>"'s id when it has an eos.
func InternLM3(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, internLM3)
}

const internLMChatEOS = "<|im_end|>"

func internLM2(f *folder, l *kvList, opts Options) error {
	m, err := loadSPM(f, "tokenizer.model")
	if err != nil {
		return err
	}
	n := opts.VocabSize // hparams.get('vocab_size', tokenizer.vocab_size())
	if n == 0 {
		n = len(m.Pieces)
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return err
	}
	if n > len(m.Pieces) {
		// IdToPiece fails on an id past the model's pieces.
		return fmt.Errorf("%w: %s has %d pieces, fewer than vocab_size %d", ErrFormat, f.path("tokenizer.model"), len(m.Pieces), n)
	}
	t := &tokenTable{}
	for _, p := range m.Pieces[:n] {
		text := p.Piece
		if text == "\x00" {
			text = "🐉"
		}
		typ := spmType(p)
		if strings.HasPrefix(p.Piece, "[UNUSED") {
			typ = typeUnused
		}
		t.tokens = append(t.tokens, text)
		t.scores = append(t.scores, p.Score)
		t.types = append(t.types, typ)
	}
	if f.isFile("added_tokens.json") {
		b, err := f.bytes("added_tokens.json")
		if err != nil {
			return err
		}
		entries, err := parseIDObject(b, f.path("added_tokens.json"))
		if err != nil {
			return err
		}
		// for key in added_tokens_json: appended in the file's key order,
		// whatever their ids.
		for _, e := range entries {
			t.tokens = append(t.tokens, e.Content)
			t.scores = append(t.scores, -1000)
			t.types = append(t.types, typeUserDefined)
		}
	}
	chatEOS := int64(-1)
	set := func(file string, id int, content string, special any) error {
		if id < 0 || id >= len(t.tokens) {
			return fmt.Errorf("%w: %s: added token %q has id %d, outside the %d tokens", ErrFormat, file, content, id, len(t.tokens))
		}
		if content == internLMChatEOS {
			chatEOS = int64(id)
		}
		typ := typeUserDefined
		if truthy(special) {
			typ = typeControl
		}
		t.set(id, content, -1000, typ)
		return nil
	}
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return err
	}
	decoder, err := addedTokensDecoder(f, tc)
	if err != nil {
		return err
	}
	if err := eachAddedToken(f, decoder, set); err != nil {
		return err
	}
	t.writeLlama(l, "llama")
	l.boolean(gguf.KeyTokenizerAddSpacePrefix, m.AddDummyPrefix)
	sv, err := newSpecialVocab(f, false, nil, len(t.tokens))
	if err != nil {
		return err
	}
	if !sv.ids.has("eos") {
		// old_eos = special_token_ids["eos"]: a KeyError in the converter.
		return fmt.Errorf("%w: %s: no eos token (InternLM2's vocabulary routine needs one)", ErrFormat, f.dir)
	}
	if chatEOS >= 0 {
		sv.ids.set("eos", chatEOS)
	}
	return sv.addTo(l)
}

func internLM3(f *folder, l *kvList, opts Options) error {
	t, err := createVocabSentencePiece(f, opts)
	if err != nil {
		return err
	}
	t.writeLlama(l, "llama")
	sv, err := newSpecialVocab(f, false, nil, len(t.tokens))
	if err != nil {
		return err
	}
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return err
	}
	if v, ok := tc["add_prefix_space"]; ok {
		// add_add_space_prefix(None) packs None as a false bool.
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, truthy(v))
	}
	decoder, err := addedTokensDecoder(f, tc)
	if err != nil {
		return err
	}
	for _, d := range decoder {
		if !truthy(d.raw["special"]) {
			continue
		}
		if err := sv.setSpecialID(d.content, int64(d.id)); err != nil {
			return err
		}
		if d.content == internLMChatEOS && sv.ids.has("eos") {
			sv.ids.set("eos", int64(d.id))
		}
	}
	return sv.addTo(l)
}
