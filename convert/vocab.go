package convert

import (
	"fmt"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// vocabRoutines maps each model class's tokenizer routine to the loader
// that reproduces it.
var vocabRoutines = map[arch.VocabKind]func(string, load.Options) ([]gguf.KV, error){
	arch.VocabLlama:         load.Llama,
	arch.VocabGPT2:          load.GPT2,
	arch.VocabSentencePiece: load.SentencePiece,
	arch.VocabQwen2:         load.Qwen2,
	arch.VocabGemma:         load.Gemma,
	arch.VocabGemma2:        load.Gemma2,
	arch.VocabGemma3:        load.Gemma3,
	arch.VocabGemma4:        load.Gemma4,
	arch.VocabPhi3:          load.Phi3,
	arch.VocabBert:          load.Bert,
	arch.VocabT5:            load.T5,
	arch.VocabChatGLM:       load.ChatGLM,
	arch.VocabGLM4:          load.GLM4,
	arch.VocabGLM:           load.GLM,
	arch.VocabInternLM2:     load.InternLM2,
	arch.VocabInternLM3:     load.InternLM3,
	arch.VocabErnie4_5:      load.Ernie4_5,
	arch.VocabXLMRoberta:    load.XLMRoberta,
	arch.VocabNomicBertMoE:  load.NomicBertMoE,
	arch.VocabRoberta:       load.Roberta,
	arch.VocabRWKVWorld:     load.RWKVWorld,
	arch.VocabXverse:        load.Xverse,
	arch.VocabArctic:        load.Arctic,
}

// vocab returns the tokenizer metadata (set_vocab).
func (j *job) vocab() ([]gguf.KV, error) {
	kind := j.plugin.Vocab()
	f, ok := vocabRoutines[kind]
	if !ok {
		return nil, fmt.Errorf("convert: no tokenizer routine %q", kind)
	}
	opts := load.Options{Pre: j.opts.TokenizerPre}
	if n, ok, err := j.h.Int("vocab_size"); err != nil {
		return nil, fmt.Errorf("convert: %s: %w", j.model.Root, err)
	} else if ok {
		opts.VocabSize = int(n)
	}
	if s, ok := j.plugin.(arch.VocabSizer); ok {
		if n, ok := s.VocabSize(); ok {
			opts.VocabSize = int(n)
		}
	}
	if n, ok, err := j.h.Int("type_vocab_size"); err != nil {
		return nil, fmt.Errorf("convert: %s: %w", j.model.Root, err)
	} else if ok {
		opts.TypeVocabSize = int(n)
	}
	kvs, err := f(j.model.Root, opts)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: tokenizer: %w", j.model.Root, err)
	}
	if a, ok := j.plugin.(arch.VocabAdjuster); ok {
		if kvs, err = a.AdjustVocab(kvs); err != nil {
			return nil, fmt.Errorf("convert: %s: tokenizer: %w", j.model.Root, err)
		}
	}
	return kvs, nil
}
