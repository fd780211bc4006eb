// Package load turns the tokenizer files of a Hugging Face model folder
// into the tokenizer.* metadata of a GGUF exactly as llama.cpp's converter
// (convert_hf_to_gguf.py, conversion/*.py, gguf-py) writes them: the same
// keys, value types, values and order.
//
// There is one function per vocabulary routine of the converter, named
// after it:
//
//	LlamaModel.set_vocab (Llama, Mistral, Mixtral)    Llama
//	Qwen2Model.set_vocab (Qwen2, Qwen3)               Qwen2
//	TextModel.set_vocab = _set_vocab_gpt2             GPT2 (GPT-2, GPT-NeoX, Starcoder2,
//	                                                  Qwen2-MoE, Qwen3-MoE)
//	_set_vocab_sentencepiece                          SentencePiece
//	_set_vocab_llama_hf                               LlamaHF
//	GemmaModel / Gemma2Model / Gemma3Model.set_vocab  Gemma, Gemma2, Gemma3
//	Phi3MiniModel.set_vocab                           Phi3
//	BertModel.set_vocab                               Bert
//	T5Model.set_vocab                                 T5
//	ChatGLMModel.set_vocab (GlmForCausalLM)            ChatGLM
//	Glm4Model.set_vocab (Glm4ForCausalLM)             GLM4
//	_set_vocab_glm (Glm4MoeForCausalLM)               GLM
//	InternLM2Model / InternLM3Model.set_vocab         InternLM2, InternLM3
//
// Each returns the KVs its routine adds, in the order it adds them, with
// gguf-py's GGUFWriter semantics (a key set twice keeps its first place
// and its last value; empty strings and arrays are not written). The
// converter calls set_vocab after the model's hyperparameters and
// general.quantization_version, so the caller appends these KVs last.
//
// The converter reads several files through the transformers and
// sentencepiece libraries; this package reads the same files directly
// (tokenizer.json, tokenizer.model protobuf, vocab.json + merges.txt,
// vocab.txt, added_tokens.json, tokenizer_config.json,
// special_tokens_map.json, chat_template.jinja/.json, config.json) and
// reproduces what those libraries report. The BPE pre-tokenizer name,
// which llama.cpp derives from a hash of the library's tokenization of a
// fixed text, is found here by the same hash, computed with ggufkit's own
// encoder under the pre-tokenizers the tokenizer's structure calls for
// (identifyByHash), else from a table of structures (identifyPre).
package load

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Options are the converter inputs a vocabulary routine reads besides the
// tokenizer files.
type Options struct {
	// VocabSize is hparams["vocab_size"]: config.json's vocab_size after
	// the converter merged text_config into the top level (with the
	// transformers config class default when the file has none, as
	// AutoConfig reports it). 0 means absent. SentencePiece vocabularies
	// are padded to it with [PAD{i}]; BPE and WordPiece vocabularies get
	// [PAD{i}] for every id below it that no token has.
	VocabSize int
	// TypeVocabSize is hparams["type_vocab_size"] (BERT), written as
	// tokenizer.ggml.token_type_count; 0 means absent (1 is written).
	TypeVocabSize int
	// Pre, when set, is written as tokenizer.ggml.pre instead of the
	// identified pre-tokenizer (the CLI's --tokenizer-pre). It must be a
	// name llama.cpp's loader accepts.
	Pre string
	// MaxFileSize bounds every file read (DefaultMaxFileSize when 0).
	MaxFileSize int64
}

// MaxVocabSize bounds the number of tokens a vocabulary may have (real
// ones have at most a few hundred thousand); it keeps a hostile
// vocab_size or token id from allocating without bound.
const MaxVocabSize = 1 << 23

// Token types as gguf-py's TokenType (and sentencepiece's piece types)
// number them.
const (
	typeNormal      int32 = 1
	typeUnknown     int32 = 2
	typeControl     int32 = 3
	typeUserDefined int32 = 4
	typeUnused      int32 = 5
	typeByte        int32 = 6
)

// Llama is LlamaModel.set_vocab (conversion/llama.py), the routine of
// LlamaForCausalLM, MistralForCausalLM and MixtralForCausalLM: a
// tokenizer_config.json add_prefix_space is written first; then a
// SentencePiece tokenizer.model, else a Llama-style BPE tokenizer.json with
// byte fallback (LlamaHF), else a GPT-2 style BPE (GPT2, e.g. Llama 3).
// A vocab_size of 32016 (CodeLlama) adds the EOT id 32010; one of 49152
// (Granite) sets add_bos_token false. Mistral's native tekken.json is not
// supported.
func Llama(dir string, opts Options) ([]gguf.KV, error) {
	f := newFolder(dir, opts.MaxFileSize)
	l := newKVList()
	if f.isFile("tekken.json") && !f.isFile("tokenizer.json") {
		return nil, fmt.Errorf("%w: %s has a Mistral tekken.json and no tokenizer.json", ErrUnsupported, dir)
	}
	tc, err := f.jsonObject("tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	if x, ok := tc["add_prefix_space"]; ok && x != nil {
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, truthy(x))
	}
	if tc["tokenizer_class"] == "HybridDNATokenizer" {
		return nil, fmt.Errorf("%w: %s: HybridDNATokenizer", ErrUnsupported, dir)
	}
	err = sentencePiece(f, l, opts)
	if errors.Is(err, ErrNotFound) {
		err = llamaHF(f, l)
		if errors.Is(err, ErrNotFound) || errors.Is(err, errLlama3) {
			err = gpt2(f, l, opts)
		}
	}
	if err != nil {
		return nil, err
	}
	switch opts.VocabSize {
	case 32016: // CodeLlama: its fill-in-the-middle ids; only eot has a GGUF key.
		sv, err := newSpecialVocab(f, false, []string{"prefix", "suffix", "middle", "eot"}, -1)
		if err != nil {
			return nil, err
		}
		for _, s := range []struct {
			typ string
			id  int64
		}{{"prefix", 32007}, {"suffix", 32008}, {"middle", 32009}, {"eot", 32010}} {
			if err := sv.setSpecialID(s.typ, s.id); err != nil {
				return nil, err
			}
		}
		if err := sv.addTo(l); err != nil {
			return nil, err
		}
	case 49152: // Granite small models.
		l.boolean(gguf.KeyTokenizerAddBOS, false)
	}
	return l.list(), nil
}

// Qwen2 is Qwen2Model.set_vocab (conversion/qwen.py), also Qwen3's: a
// SentencePiece tokenizer.model when there is one, else GPT2.
func Qwen2(dir string, opts Options) ([]gguf.KV, error) {
	f := newFolder(dir, opts.MaxFileSize)
	l := newKVList()
	err := sentencePiece(f, l, opts)
	if errors.Is(err, ErrNotFound) {
		err = gpt2(f, l, opts)
	}
	if err != nil {
		return nil, err
	}
	return l.list(), nil
}

// SentencePiece is _set_vocab_sentencepiece (conversion/base.py): the
// pieces of tokenizer.model with their scores and types, padded to
// Options.VocabSize, then added_tokens.json and tokenizer_config.json's
// added_tokens_decoder written over their ids; model "llama", pre
// "default"; then SpecialVocab. A folder without tokenizer.model is
// ErrNotFound.
func SentencePiece(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, sentencePiece)
}

// LlamaHF is _set_vocab_llama_hf (gguf-py LlamaHfVocab): a BPE
// tokenizer.json with byte fallback and a Sequence decoder, as Llama 2
// style models save it, written as a "llama" vocabulary with score -1000
// for every token. Other tokenizers are ErrNotFound; Llama 3 style (BPE
// with ignore_merges and no byte fallback) is ErrUnsupported.
func LlamaHF(dir string, opts Options) ([]gguf.KV, error) {
	kvs, err := run(dir, opts, func(f *folder, l *kvList, _ Options) error { return llamaHF(f, l) })
	if errors.Is(err, errLlama3) {
		return nil, fmt.Errorf("%w: %s: a Llama 3 style tokenizer.json must be converted with GPT2", ErrUnsupported, dir)
	}
	return kvs, err
}

// GPT2 is _set_vocab_gpt2 (conversion/base.py), the default set_vocab of
// the converter's TextModel (GPT2LMHeadModel, GPTNeoXForCausalLM,
// Starcoder2ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM): the
// vocabulary as transformers' AutoTokenizer sees it (tokenizer.json, or
// vocab.json + merges.txt), model "gpt2", the identified pre-tokenizer
// (or Options.Pre), the tokens and their types, then SpecialVocab with
// the merges.
func GPT2(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, gpt2)
}

// Gemma is GemmaModel.set_vocab (conversion/gemma.py): SentencePiece,
// then the CodeGemma EOT id 107 (the other fill-in-the-middle ids it sets
// have no GGUF key), then add_space_prefix false.
func Gemma(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		if err := sentencePiece(f, l, opts); err != nil {
			return err
		}
		sv, err := newSpecialVocab(f, false, []string{"prefix", "suffix", "middle", "fsep", "eot"}, -1)
		if err != nil {
			return err
		}
		for _, s := range []struct {
			typ string
			id  int64
		}{{"prefix", 67}, {"suffix", 69}, {"middle", 68}, {"fsep", 70}, {"eot", 107}} {
			if err := sv.setSpecialID(s.typ, s.id); err != nil {
				return err
			}
		}
		sv.chatTemplate = nil // "do not add it twice"
		if err := sv.addTo(l); err != nil {
			return err
		}
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, false)
		return nil
	})
}

// Gemma2 is Gemma2Model.set_vocab: SentencePiece, then add_space_prefix
// false.
func Gemma2(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		if err := sentencePiece(f, l, opts); err != nil {
			return err
		}
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, false)
		return nil
	})
}

// Gemma3 is Gemma3Model.set_vocab: with a tokenizer.model, SentencePiece
// then add_space_prefix false; without, GPT2.
func Gemma3(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		if !f.isFile("tokenizer.model") {
			return gpt2(f, l, opts)
		}
		if err := sentencePiece(f, l, opts); err != nil {
			return err
		}
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, false)
		return nil
	})
}

// Gemma3VocabRows is the number of token-embedding rows Gemma3Model keeps
// (its modify_tensors cuts embed_tokens.weight to the real vocabulary):
// with a tokenizer.model, the length of the SentencePiece token list
// (Options.VocabSize, or the number of pieces when absent); else the
// number of tokenizer.json model vocabulary entries plus its added tokens.
func Gemma3VocabRows(dir string, opts Options) (int, error) {
	f := newFolder(dir, opts.MaxFileSize)
	if f.isFile("tokenizer.model") {
		t, err := createVocabSentencePiece(f, opts)
		if err != nil {
			return 0, err
		}
		return len(t.tokens), nil
	}
	tok, err := f.tokenizerJSON()
	if err != nil {
		return 0, err
	}
	if tok == nil {
		return 0, notFound(f, "tokenizer.model", "tokenizer.json")
	}
	n := len(tok.Model.Vocab) + len(tok.Model.Pieces)
	return n + len(tok.AddedTokens), nil
}

// Phi3 is Phi3MiniModel.set_vocab (conversion/phi.py): GPT2 when
// tokenizer_config.json names GPT2Tokenizer (Phi-4); otherwise the pieces
// of tokenizer.model padded to Options.VocabSize, with added_tokens.json,
// tokenizer_config.json's added_tokens_decoder and tokenizer.json's
// added_tokens written over their ids (score -1000, CONTROL when special,
// else USER_DEFINED), model "llama", pre "default", then SpecialVocab.
func Phi3(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, phi3)
}

// Bert is BertModel.set_vocab (conversion/bert.py), WordPiece: the
// vocabulary as AutoTokenizer sees it (tokenizer.json, or vocab.txt),
// token_type_count (Options.TypeVocabSize, default 1) written first, every
// token that is not CONTROL in llama.cpp's phantom-space form ("##x"
// becomes "x", any other "t" becomes "▁t"), model "bert", the identified
// pre-tokenizer, then SpecialVocab.
func Bert(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, bert)
}

// T5 is T5Model.set_vocab (conversion/t5.py), Unigram: the pieces of
// tokenizer.model (or spiece.model) padded to Options.VocabSize, with
// added_tokens.json written over their ids, model "t5", pre "default",
// add_space_prefix and remove_extra_whitespaces from the model's
// normalizer spec, its precompiled charsmap, then SpecialVocab. A BPE
// tokenizer.model goes through SentencePiece instead.
func T5(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, t5)
}

// run applies one routine to a fresh folder and KV list.
func run(dir string, opts Options, routine func(*folder, *kvList, Options) error) ([]gguf.KV, error) {
	f := newFolder(dir, opts.MaxFileSize)
	l := newKVList()
	if err := routine(f, l, opts); err != nil {
		return nil, err
	}
	return l.list(), nil
}

// checkPre validates a --tokenizer-pre name.
func checkPre(name string) error {
	if knownPre[name] {
		return nil
	}
	names := make([]string, 0, len(knownPre))
	for n := range knownPre {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%w: pre-tokenizer %q is not one llama.cpp knows; known: %s", ErrUnsupported, name, strings.Join(names, ", "))
}

// knownPre holds every tokenizer.ggml.pre value llama.cpp's loader accepts
// (src/llama-vocab.cpp, llama_vocab::impl::load, L2155-2430); any other
// value makes it refuse the model.
var knownPre = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`default minicpm5 llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral
		midm-2.0 lfm2 jina-v5-nano deepseek-llm deepseek-coder deepseek-v3 spark2_5 youtu falcon mpt starcoder
		gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert jais-2 gemma4
		granite-embed-multi-311m sarvam-moe jina-v1-en jina-v2-code roberta-bpe whitespace refact command-r
		qwen2 deepseek-r1-qwen kormo f2llmv2 qwen35 stablelm2 olmo dbrx smaug-bpe poro-chat chatglm-bpe glm4
		glm5 viking jais tekken smollm codeshell bloom gpt3-finnish exaone exaone4 exaone-moe chameleon
		minerva-7b megrez gpt-4o llama4 kanana2 talkie granite-embed-multi-97m tiny_aya cohere2moe superbpe
		trillion granite-docling bailingmoe bailingmoe2 llada-moe seed-coder hunyuan hunyuan-dense hy_v4
		joyai-llm kimi-k2 ufakzeka grok-2 afmoe laguna minimax-m2 solar-open mellum2`) {
		m[n] = true
	}
	return m
}()

// gemma4Visible are the tokens Gemma4Model.set_vocab makes USER_DEFINED
// whatever the tokenizer says, so that llama.cpp always renders them (the
// chat parser reads them).
var gemma4Visible = map[string]bool{
	"<|channel>": true, "<channel|>": true, "<|tool_call>": true, "<tool_call|>": true,
	"<|tool_response>": true, "<tool_response|>": true, `<|"|>`: true,
}

// Gemma4 is Gemma4Model.set_vocab (conversion/gemma.py): gguf-py's
// LlamaHfVocab token list (a BPE tokenizer.json with byte fallback) under
// tokenizer model "gemma4" with no pre-tokenizer key, the chat-format
// tokens of gemma4Visible made USER_DEFINED, then SpecialVocab with the
// merges, add_space_prefix false and add_bos_token true.
func Gemma4(dir string, opts Options) ([]gguf.KV, error) {
	kvs, err := run(dir, opts, func(f *folder, l *kvList, _ Options) error {
		t, err := llamaHFTable(f)
		if err != nil {
			return err
		}
		for i, s := range t.tokens {
			if gemma4Visible[s] {
				t.types[i] = typeUserDefined
			}
		}
		l.str(gguf.KeyTokenizerModel, "gemma4")
		array(l, gguf.KeyTokenizerTokens, t.tokens)
		array(l, gguf.KeyTokenizerScores, t.scores)
		array(l, gguf.KeyTokenizerTokenType, t.types)
		if err := addSpecialVocab(f, l, true, len(t.tokens)); err != nil {
			return err
		}
		l.boolean(gguf.KeyTokenizerAddSpacePrefix, false)
		l.boolean(gguf.KeyTokenizerAddBOS, true)
		return nil
	})
	if errors.Is(err, errLlama3) {
		return nil, fmt.Errorf("%w: %s: LlamaHfVocab refuses a Llama 3 style tokenizer.json", ErrUnsupported, dir)
	}
	return kvs, err
}

// Ernie4_5 is Ernie4_5Model.set_vocab (conversion/ernie.py), also
// Ernie4_5MoeModel's: SentencePiece, then, when tokenizer_config.json has
// an add_prefix_space key, add_space_prefix set to it. gguf-py packs the
// value with struct's "?" format, which takes any value's truth: a null
// is written as false.
func Ernie4_5(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, func(f *folder, l *kvList, opts Options) error {
		if err := sentencePiece(f, l, opts); err != nil {
			return err
		}
		if !f.isFile("tokenizer_config.json") {
			return nil
		}
		tc, err := f.jsonObject("tokenizer_config.json")
		if err != nil {
			return err
		}
		if x, ok := tc["add_prefix_space"]; ok {
			l.boolean(gguf.KeyTokenizerAddSpacePrefix, truthy(x))
		}
		return nil
	})
}
