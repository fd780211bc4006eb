package forward

import (
	"fmt"
	"math"
	"runtime"

	"github.com/ggufkit/ggufkit/gguf"
)

// Options configure a Model.
type Options struct {
	// Threads is the number of goroutines for matrix products and attention;
	// 0 means runtime.NumCPU().
	Threads int
	// Observe, when set, sees the input rows of every matrix product before
	// it runs (what llama-imatrix's graph callback sees of src1): the
	// weight's GGUF name, and for one expert of a stacked expert tensor its
	// index and the expert count (expert −1, experts 0 for a plain matrix).
	// It is called from one goroutine at a time and must not keep x.
	Observe func(tensor string, expert, experts int, x [][]float32) error
	// KVCacheF16 keeps keys and values rounded to fp16, as llama.cpp's
	// default cache does (its CPU flash-attention kernel then works in
	// float32 on prompt batches, as attention here does). Off, the cache is
	// float32 (what verify compares with transformers).
	KVCacheF16 bool
}

// Model is a loaded model: its configuration, its small vectors (norms,
// biases, RoPE factors) as float32 and its matrices as Tensors read on use.
// It is immutable; run it through a Session.
type Model struct {
	cfg     *Config
	threads int
	observe func(tensor string, expert, experts int, x [][]float32) error
	kvF16   bool

	tokEmbd, posEmbd   Tensor
	outNorm, outNormB  []float32
	output             *matrix
	outputB            []float32
	ropeFreqs          []float32
	ropeLong, ropeShrt []float32
	layers             []layer
	// g4 holds gemma4's weights (gemma4.go) instead of layers.
	g4 *gemma4Weights
	// g3n holds gemma3n's weights beyond layers (gemma3n.go).
	g3n *gemma3nWeights
	// ssm holds mamba's and mamba2's blocks (ssm.go) instead of layers.
	ssm []ssmLayer
	// rwkv and rwkv6 hold rwkv7's and rwkv6's blocks (rwkv7.go, rwkv6.go)
	// instead of layers, tokNorm and tokNormB their embedding norm.
	rwkv              []rwkv7Layer
	rwkv6             []rwkv6Layer
	tokNorm, tokNormB []float32
	// alibi holds the per-head ALiBi slopes (nil: no bias).
	alibi []float32
}

// layer holds one block's weights; nil means the model has no such tensor.
type layer struct {
	index               int // the block number
	attnNorm, attnNormB []float32
	attnGate            *matrix
	wq, wk, wv, wqkv    *matrix
	bq, bk, bv, bqkv    []float32
	qNorm, kNorm        []float32
	wo                  *matrix
	bo                  []float32
	attnPost            []float32
	ffnNorm, ffnNormB   []float32
	ffnNormExps         []float32 // arctic's experts' norm
	gate, up, down      *matrix
	bGate, bUp, bDown   []float32
	ffnPost             []float32
	// Mixture of experts: the router, each expert's matrices, and
	// qwen2moe's shared expert with its gate vector.
	gateInp                      *matrix
	gateExps, upExps, downExps   []*matrix
	gateShared, upShared, downSh *matrix
	gateInpShared                []float32
	// deepseek2: the query LoRA, the latent key/value projection and norm,
	// the per-head decompressions k_b and v_b, the selection bias.
	wqA, wqB, wkvA  *matrix
	qANorm, kvANorm []float32
	wkB, wvB        []*matrix
	// minicpm3: the whole decompression of the latent into each head's
	// non-rotated key and value (attn_kv_b).
	wkvB      *matrix
	expProbsB []float32
	// gpt-oss: the attention sinks (one logit per head), the router bias
	// and the experts' biases (n_expert rows each).
	sinks                         []float32
	bGateInp                      []float32
	bGateExps, bUpExps, bDownExps []float32

	// Falcon-40B's separate norm of the attention input.
	attnNorm2, attnNorm2B []float32

	// rec holds a hybrid's recurrent block (ssm.go, hybrid.go).
	rec *ssmLayer
}

// Config returns the model's configuration.
func (m *Model) Config() *Config { return m.cfg }

// loader reads the tensors ExpectedTensors lists, checking their shapes.
type loader struct {
	w     Weights
	specs map[string]TensorSpec
}

func (l *loader) tensor(name string) (Tensor, error) {
	spec, ok := l.specs[name]
	if !ok {
		return nil, nil // not part of this architecture
	}
	t, ok := l.w.Tensor(name)
	if !ok {
		if spec.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: missing tensor %s", ErrWeights, name)
	}
	if !gguf.SameShape(t.Shape(), spec.Shape) {
		return nil, fmt.Errorf("%w: tensor %s has shape %v, expected %v", ErrWeights, name, t.Shape(), spec.Shape)
	}
	return t, nil
}

func (l *loader) vec(name string) ([]float32, error) {
	t, err := l.tensor(name)
	if t == nil || err != nil {
		return nil, err
	}
	n := 1
	for _, d := range t.Shape() {
		n *= int(d)
	}
	v := make([]float32, n)
	// Every row: a 2-D bias holds one row per expert.
	if err := t.ReadRows(0, n/max(1, int(t.Shape()[0])), v); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: tensor %s has a non-finite value at %d", ErrWeights, name, i)
		}
	}
	return v, nil
}

// experts splits a stacked [ne0, ne1, n_expert] tensor into one matrix per
// expert.
func (l *loader) experts(name string) ([]*matrix, error) {
	t, err := l.tensor(name)
	if t == nil || err != nil {
		return nil, err
	}
	s := t.Shape()
	if len(s) != 3 {
		return nil, fmt.Errorf("%w: tensor %s has shape %v, expected 3 dimensions", ErrWeights, name, s)
	}
	out := make([]*matrix, s[2])
	for e := range out {
		out[e] = &matrix{name: fmt.Sprintf("%s[%d]", name, e), tensor: name, expert: e, experts: len(out), t: t, cols: int(s[0]), rows: int(s[1]), off: e * int(s[1])}
	}
	return out, nil
}

// gateUpExperts splits a fused ffn_gate_up_exps into each expert's gate
// and up matrices (its first and second n_ff rows), as build_moe_ffn views
// the product of the fused weight; nil when the model has none. Only the
// gate half is observed (Options.Observe): both halves take the same input,
// which llama.cpp's one product of the fused weight sees once.
func (l *loader) gateUpExperts(name string) (gate, up []*matrix, err error) {
	all, err := l.experts(name)
	if all == nil || err != nil {
		return nil, nil, err
	}
	for _, m := range all {
		if m.rows%2 != 0 {
			return nil, nil, fmt.Errorf("%w: tensor %s has an odd row count %d", ErrWeights, name, m.rows)
		}
		g, u := *m, *m
		g.rows, u.rows = m.rows/2, m.rows/2
		u.off += m.rows / 2
		g.name, u.name = m.name+".gate", m.name+".up"
		u.tensor = ""
		gate, up = append(gate, &g), append(up, &u)
	}
	return gate, up, nil
}

func (l *loader) mat(name string) (*matrix, error) {
	t, err := l.tensor(name)
	if t == nil || err != nil {
		return nil, err
	}
	s := t.Shape()
	return &matrix{name: name, tensor: name, expert: -1, t: t, cols: int(s[0]), rows: int(s[1])}, nil
}

// Load checks weights against the tensors cfg expects (every required one
// present, every shape right) and prepares the model. Tensors the
// architecture does not use are ignored here; verify reports them.
func Load(cfg *Config, w Weights, opts Options) (*Model, error) {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if cfg.g4 != nil {
		m, err := loadGemma4(cfg, w, threads)
		if m != nil {
			m.observe, m.kvF16 = opts.Observe, opts.KVCacheF16
		}
		return m, err
	}
	if cfg.ssm != nil {
		return loadSSM(cfg, w, threads)
	}
	if cfg.rwkv != nil && cfg.rwkv.v6 {
		return loadRWKV6(cfg, w, threads)
	}
	if cfg.rwkv != nil {
		return loadRWKV7(cfg, w, threads)
	}
	l := &loader{w: w, specs: map[string]TensorSpec{}}
	for _, s := range cfg.ExpectedTensors(func(name string) bool { _, ok := w.Tensor(name); return ok }) {
		l.specs[s.Name] = s
	}
	m := &Model{cfg: cfg, threads: threads, observe: opts.Observe, kvF16: opts.KVCacheF16}
	var err error
	set := func(dst any, name string) {
		if err != nil {
			return
		}
		switch d := dst.(type) {
		case *[]float32:
			*d, err = l.vec(name)
		case **matrix:
			*d, err = l.mat(name)
		case *Tensor:
			*d, err = l.tensor(name)
		case *[]*matrix:
			*d, err = l.experts(name)
		}
	}
	set(&m.tokEmbd, "token_embd.weight")
	set(&m.posEmbd, "position_embd.weight")
	set(&m.outNorm, "output_norm.weight")
	if m.outNorm == nil {
		set(&m.outNorm, "token_embd_norm.weight") // LLM_TENSOR_OUTPUT_NORM_LFM2
	}
	set(&m.outNormB, "output_norm.bias")
	set(&m.output, "output.weight")
	set(&m.outputB, "output.bias")
	set(&m.ropeFreqs, "rope_freqs.weight")
	set(&m.ropeLong, "rope_factors_long.weight")
	set(&m.ropeShrt, "rope_factors_short.weight")
	if cfg.arch.tokNorm {
		set(&m.tokNorm, "token_embd_norm.weight")
		set(&m.tokNormB, "token_embd_norm.bias")
	}
	if cfg.MaxAlibiBias > 0 {
		m.alibi = alibiSlopes(cfg.Heads, float64(cfg.MaxAlibiBias))
	}
	if err != nil {
		return nil, err
	}
	if m.output == nil {
		// Tied embeddings: the output reuses token_embd (TENSOR_DUPLICATED).
		s := m.tokEmbd.Shape()
		m.output = &matrix{name: "token_embd.weight", t: m.tokEmbd, cols: int(s[0]), rows: int(s[1])}
	}
	m.layers = make([]layer, cfg.Layers)
	for il := range m.layers {
		ly := &m.layers[il]
		ly.index = il
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		set(&ly.attnNorm, b("attn_norm.weight"))
		set(&ly.attnNormB, b("attn_norm.bias"))
		set(&ly.attnNorm2, b("attn_norm_2.weight"))
		set(&ly.attnNorm2B, b("attn_norm_2.bias"))
		set(&ly.wq, b("attn_q.weight"))
		set(&ly.wk, b("attn_k.weight"))
		set(&ly.wv, b("attn_v.weight"))
		set(&ly.wqkv, b("attn_qkv.weight"))
		set(&ly.bq, b("attn_q.bias"))
		set(&ly.bk, b("attn_k.bias"))
		set(&ly.bv, b("attn_v.bias"))
		set(&ly.bqkv, b("attn_qkv.bias"))
		set(&ly.qNorm, b("attn_q_norm.weight"))
		set(&ly.kNorm, b("attn_k_norm.weight"))
		set(&ly.wo, b("attn_output.weight"))
		if cfg.arch.attnGate {
			set(&ly.attnGate, b("attn_gate.weight"))
		}
		set(&ly.bo, b("attn_output.bias"))
		if cfg.arch.ffnNormPostAttn {
			set(&ly.ffnNorm, b("post_attention_norm.weight"))
		} else {
			set(&ly.attnPost, b("post_attention_norm.weight"))
			set(&ly.ffnNorm, b("ffn_norm.weight"))
			if ly.ffnNorm == nil {
				set(&ly.ffnNorm, b("ffn_norm")) // falcon-h1's, without .weight
			}
			if ly.ffnNorm == nil {
				set(&ly.ffnNorm, b("attn_output_norm.weight")) // dbrx's attn_out_norm
			}
		}
		set(&ly.ffnNormB, b("ffn_norm.bias"))
		set(&ly.ffnNormExps, b("ffn_norm_exps.weight"))
		set(&ly.gate, b("ffn_gate.weight"))
		set(&ly.up, b("ffn_up.weight"))
		set(&ly.down, b("ffn_down.weight"))
		set(&ly.bGate, b("ffn_gate.bias"))
		set(&ly.bUp, b("ffn_up.bias"))
		set(&ly.bDown, b("ffn_down.bias"))
		set(&ly.ffnPost, b("post_ffw_norm.weight"))
		if cfg.arch.outNorms {
			set(&ly.attnPost, b("attn_output_norm.weight"))
			set(&ly.ffnPost, b("layer_output_norm.weight"))
		}
		set(&ly.gateInp, b("ffn_gate_inp.weight"))
		set(&ly.gateExps, b("ffn_gate_exps.weight"))
		set(&ly.upExps, b("ffn_up_exps.weight"))
		set(&ly.downExps, b("ffn_down_exps.weight"))
		if ly.gateExps == nil && ly.upExps == nil && err == nil {
			ly.gateExps, ly.upExps, err = l.gateUpExperts(b("ffn_gate_up_exps.weight"))
		}
		set(&ly.gateInpShared, b("ffn_gate_inp_shexp.weight"))
		set(&ly.gateShared, b("ffn_gate_shexp.weight"))
		set(&ly.upShared, b("ffn_up_shexp.weight"))
		set(&ly.downSh, b("ffn_down_shexp.weight"))
		set(&ly.wqA, b("attn_q_a.weight"))
		set(&ly.qANorm, b("attn_q_a_norm.weight"))
		set(&ly.wqB, b("attn_q_b.weight"))
		set(&ly.wkvA, b("attn_kv_a_mqa.weight"))
		set(&ly.kvANorm, b("attn_kv_a_norm.weight"))
		set(&ly.wkB, b("attn_k_b.weight"))
		set(&ly.wvB, b("attn_v_b.weight"))
		set(&ly.wkvB, b("attn_kv_b.weight"))
		set(&ly.expProbsB, b("exp_probs_b.bias"))
		set(&ly.sinks, b("attn_sinks.weight"))
		set(&ly.bGateInp, b("ffn_gate_inp.bias"))
		set(&ly.bGateExps, b("ffn_gate_exps.bias"))
		set(&ly.bUpExps, b("ffn_up_exps.bias"))
		set(&ly.bDownExps, b("ffn_down_exps.bias"))
		if err == nil && cfg.recurrent(il) {
			ly.rec = &ssmLayer{}
			err = l.recurrentLayer(il, ly.rec)
		}
		if err != nil {
			return nil, err
		}
	}
	if cfg.g3n != nil {
		if m.g3n, err = loadGemma3n(l, cfg); err != nil {
			return nil, err
		}
	}
	return m, nil
}
