package perplexity

import (
	"context"
	"fmt"

	"github.com/ggufkit/ggufkit/tokenizer"
	"github.com/ggufkit/ggufkit/verify"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// forwardModel evaluates chunks with verify/forward, a fresh session each.
type forwardModel struct{ m *forward.Model }

func (f forwardModel) Logits(ctx context.Context, tokens []int) ([][]float32, error) {
	s, err := f.m.NewSession(len(tokens))
	if err != nil {
		return nil, err
	}
	return s.Eval(ctx, tokens, true)
}

// Loaded is a GGUF ready to be scored: its forward pass, its tokenizer and
// the Options those imply (Vocab, BOS, AddBOS).
type Loaded struct {
	Model     Model
	Tokenizer *tokenizer.Tokenizer
	Options   Options
	// CtxTrain is the model's training context length.
	CtxTrain int
	file     *verify.File
}

// Load opens a GGUF (or the first file of a gguf-split set) for scoring
// with the forward pass's options (threads; an activation observer for
// llama-imatrix's statistics), with llama.cpp's default fp16 KV cache.
// Close releases it.
func Load(path string, fopts forward.Options) (*Loaded, error) {
	f, err := verify.Open(path)
	if err != nil {
		return nil, err
	}
	l, err := load(f, fopts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

func load(f *verify.File, fopts forward.Options) (*Loaded, error) {
	kvs := forward.KVMap(f.KVs)
	tok, err := tokenizer.Load(kvs)
	if err != nil {
		return nil, err
	}
	if tok.AddEOS() {
		return nil, fmt.Errorf("the vocabulary adds an EOS token after the text, which cannot be scored (llama-perplexity and llama-imatrix refuse it too)")
	}
	cfg, err := forward.ParseConfig(kvs)
	if err != nil {
		return nil, err
	}
	fopts.KVCacheF16 = true
	m, err := forward.Load(cfg, forward.GGUFWeights(f), fopts)
	if err != nil {
		return nil, err
	}
	return &Loaded{
		Model:     forwardModel{m},
		Tokenizer: tok,
		Options:   Options{Vocab: tok.NumTokens(), BOS: tok.BOS(), AddBOS: tok.AddBOS()},
		CtxTrain:  cfg.CtxTrain,
		file:      f,
	}, nil
}

// Close releases the file.
func (l *Loaded) Close() error { return l.file.Close() }
