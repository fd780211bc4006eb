package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Pooling is llama.cpp's llama_pooling_type: how an encoder's hidden states
// become one output.
type Pooling int

// The pooling types ({arch}.pooling_type; rank runs the classifier head).
const (
	PoolingUnspecified Pooling = -1
	PoolingNone        Pooling = 0
	PoolingMean        Pooling = 1
	PoolingCLS         Pooling = 2
	PoolingLast        Pooling = 3
	PoolingRank        Pooling = 4
)

func (p Pooling) String() string {
	switch p {
	case PoolingUnspecified:
		return "unspecified"
	case PoolingNone:
		return "none"
	case PoolingMean:
		return "mean"
	case PoolingCLS:
		return "cls"
	case PoolingLast:
		return "last"
	case PoolingRank:
		return "rank"
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// IsEncoder reports whether arch is run by Encoder rather than Model: the
// BERT graph of llama.cpp's src/models/bert.cpp (BERT, RoBERTa,
// XLM-RoBERTa, CamemBERT and DistilBERT conversions all have arch bert,
// and Nomic BERT's runs it with rotary positions and a SwiGLU
// feed-forward, Jina BERT v2's with ALiBi and a GeGLU one), EuroBERT's
// (src/models/eurobert.cpp), ModernBERT's (src/models/modern-bert.cpp) and
// NeoBERT's (src/models/neo-bert.cpp).
func IsEncoder(arch string) bool {
	switch arch {
	case "bert", archNomicBERT, archNomicBERTMoE, archJinaBERTv2, archEuroBERT, archModernBERT, archNeoBERT:
		return true
	}
	return false
}

// EncoderConfig holds the hyperparameters of a BERT-graph encoder as
// llama.cpp's llama_model_bert::load_arch_hparams reads them.
type EncoderConfig struct {
	Arch                              string
	Embd, Layers, CtxTrain, FF, Heads int
	TokenTypes                        int
	Eps                               float32
	// KVHeads, HeadDim and RopeBase are EuroBERT's and ModernBERT's
	// (rotary positions, grouped-query attention); Eps is then EuroBERT's
	// RMS norms' epsilon. Nomic BERT has HeadDim and RopeBase.
	KVHeads, HeadDim int
	RopeBase         float32
	// SWA marks ModernBERT's sliding-window layers, which attend within
	// SWAWindow/2 positions either side and rotate with RopeBaseSWA.
	SWA         []bool
	SWAWindow   int
	RopeBaseSWA float32
	// FFNOp is ModernBERT's gated activation, from hidden_activation.
	FFNOp glu
	// MoEEvery, Experts and ExpertsUsed are nomic-bert-moe's: every
	// MoEEvery-th block (il % MoEEvery == 1) routes its FFN to ExpertsUsed
	// of Experts experts.
	MoEEvery, Experts, ExpertsUsed int
	// Pooling is {arch}.pooling_type, PoolingUnspecified when absent.
	// ClsPooling is {arch}.classifier.pooling_type: the rank head reads the
	// tokens' mean when it is mean, else the first token.
	Pooling, ClsPooling Pooling
}

// ParseEncoderConfig reads an encoder's hyperparameters; it refuses what
// llama.cpp's loader refuses with ErrMetadata.
func ParseEncoderConfig(md Metadata) (*EncoderConfig, error) {
	r := &kvReader{md: md}
	if _, err := r.str(gguf.KeyGeneralArchitecture, &r.arch, true); err != nil {
		return nil, err
	}
	if !IsEncoder(r.arch) {
		return nil, fmt.Errorf("%w: architecture %q is not an encoder", ErrUnsupported, r.arch)
	}
	c := &EncoderConfig{Arch: r.arch, Pooling: PoolingUnspecified}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{
		{gguf.SuffixContextLength, &c.CtxTrain}, {gguf.SuffixEmbeddingLength, &c.Embd},
		{gguf.SuffixBlockCount, &c.Layers}, {gguf.SuffixFeedForwardLength, &c.FF},
		{gguf.SuffixHeadCount, &c.Heads},
	} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers {
		return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(gguf.SuffixBlockCount), c.Layers, maxLayers)
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"embedding_length", c.Embd}, {"feed_forward_length", c.FF}, {"head_count", c.Heads}, {"context_length", c.CtxTrain}} {
		if d.v <= 0 || d.v > maxDim {
			return nil, fmt.Errorf("%w: %s.%s = %d", ErrMetadata, r.arch, d.name, d.v)
		}
	}
	if c.Embd%c.Heads != 0 {
		return nil, fmt.Errorf("%w: embedding length %d is not a multiple of %d heads", ErrMetadata, c.Embd, c.Heads)
	}
	c.ClsPooling = PoolingUnspecified
	if err := readPooling(r, r.key("classifier.pooling_type"), &c.ClsPooling); err != nil {
		return nil, err
	}
	switch c.Arch {
	case archEuroBERT:
		if err := parseEuroBERT(r, c); err != nil {
			return nil, err
		}
	case archModernBERT:
		if err := parseModernBERT(r, c); err != nil {
			return nil, err
		}
	case archNeoBERT:
		if err := parseNeoBERT(r, c); err != nil {
			return nil, err
		}
	case archNomicBERT, archNomicBERTMoE:
		if err := parseBERT(r, c); err != nil {
			return nil, err
		}
		if err := parseNomicBERT(r, c); err != nil {
			return nil, err
		}
		if err := parseNomicBERTMoE(r, c); err != nil {
			return nil, err
		}
	default:
		if err := parseBERT(r, c); err != nil {
			return nil, err
		}
	}
	if err := readPooling(r, r.key("pooling_type"), &c.Pooling); err != nil {
		return nil, err
	}
	return c, nil
}

// parseBERT reads the BERT graph's layer-norm epsilon and token type count.
func parseBERT(r *kvReader, c *EncoderConfig) error {
	if _, err := r.f32(r.key("attention.layer_norm_epsilon"), &c.Eps, true); err != nil {
		return err
	}
	if _, err := r.u32(gguf.KeyTokenizerTokenTypeCount, &c.TokenTypes, false); err != nil {
		return err
	}
	if c.TokenTypes == 0 {
		return fmt.Errorf("%w: %s model needs to define token type count (%s)", ErrMetadata, r.arch, gguf.KeyTokenizerTokenTypeCount)
	}
	return nil
}

// readPooling reads an optional pooling type key into dst.
func readPooling(r *kvReader, key string, dst *Pooling) error {
	p := 0
	if ok, err := r.u32(key, &p, false); err != nil {
		return err
	} else if ok {
		if p > int(PoolingRank) {
			return fmt.Errorf("%w: %s = %d", ErrMetadata, key, p)
		}
		*dst = Pooling(p)
	}
	return nil
}

// encLayer is one block's weights, each matrix as out rows of in values.
// gate is Nomic BERT's SwiGLU gate (nil for BERT's GELU feed-forward);
// upGated marks Jina BERT v2's ffn_up holding the GeGLU gate (its first
// n_ff rows) and value together.
type encLayer struct {
	upGated                                  bool
	gateInp, upExps, downExps                []float32
	q, k, v, o, up, down, gate               []float32
	qb, kb, vb, ob, upb, downb               []float32
	attnNormW, attnNormB, outNormW, outNormB []float32
}

// Encoder is a BERT-graph encoder with its weights decoded to float32.
type Encoder struct {
	Config          *EncoderConfig
	tok, typ, pos   []float32
	normW, normB    []float32
	layers          []encLayer
	cls, clsB       []float32
	clsNorm         []float32
	clsOut, clsOutB []float32
	// ClsOut is the number of classifier outputs (0 without cls.output).
	ClsOut int
	// graph runs EuroBERT's, ModernBERT's or NeoBERT's blocks in tok and
	// layers' place.
	graph encoderGraph
	// alibi holds Jina BERT v2's per-head ALiBi slopes (nil: no bias).
	alibi []float32
}

// encoderGraph is an encoder graph other than BERT's: it returns each
// token's last hidden state.
type encoderGraph interface {
	hidden(ctx context.Context, c *EncoderConfig, ids []int) ([][]float32, error)
}

// LoadEncoder reads an encoder's weights (ErrWeights for a missing tensor
// or one of the wrong shape).
func LoadEncoder(c *EncoderConfig, w Weights) (*Encoder, error) {
	e := &Encoder{Config: c}
	l := &encLoader{w: w}
	switch c.Arch {
	case archEuroBERT:
		e.graph = loadEuroBERT(c, l)
	case archModernBERT:
		e.graph = loadModernBERT(c, l)
		e.loadClassifier(l)
	case archNeoBERT:
		e.graph = loadNeoBERT(c, l)
		e.loadClassifier(l)
	case archJinaBERTv2:
		if err := checkJinaBERTv2(c, w); err != nil {
			return nil, err
		}
		e.alibi = alibiSlopes(c.Heads, jinaMaxAlibiBias)
	}
	if e.graph != nil {
		if l.err != nil {
			return nil, l.err
		}
		return e, nil
	}
	n := c.Embd
	if tok, ok := w.Tensor("token_embd.weight"); ok && len(tok.Shape()) == 2 {
		e.tok = l.get("token_embd.weight", n, int(tok.Shape()[1]), true)
	} else {
		l.err = fmt.Errorf("%w: tensor token_embd.weight missing or not 2-D", ErrWeights)
	}
	e.typ = l.get("token_types.weight", n, c.TokenTypes, false)
	rotary, jina := c.Arch == archNomicBERT || c.Arch == archNomicBERTMoE, c.Arch == archJinaBERTv2
	if !rotary && !jina {
		e.pos = l.get("position_embd.weight", n, c.CtxTrain, true)
	}
	e.normW = l.get("token_embd_norm.weight", n, 1, true)
	e.normB = l.get("token_embd_norm.bias", n, 1, true)
	e.layers = make([]encLayer, c.Layers)
	for i := range e.layers {
		L := &e.layers[i]
		b := fmt.Sprintf("blk.%d.", i)
		if _, fused := w.Tensor(b + "attn_qkv.weight"); fused {
			// llama.cpp's build_qkv views the fused output as q, k, v in turn.
			qkv, qkvb := l.get(b+"attn_qkv.weight", n, 3*n, true), l.get(b+"attn_qkv.bias", 3*n, 1, false)
			if qkv != nil {
				L.q, L.k, L.v = qkv[:n*n], qkv[n*n:2*n*n], qkv[2*n*n:]
			}
			if qkvb != nil {
				L.qb, L.kb, L.vb = qkvb[:n], qkvb[n:2*n], qkvb[2*n:]
			}
		} else {
			L.q, L.qb = l.get(b+"attn_q.weight", n, n, true), l.get(b+"attn_q.bias", n, 1, false)
			L.k, L.kb = l.get(b+"attn_k.weight", n, n, true), l.get(b+"attn_k.bias", n, 1, false)
			L.v, L.vb = l.get(b+"attn_v.weight", n, n, true), l.get(b+"attn_v.bias", n, 1, false)
		}
		L.o, L.ob = l.get(b+"attn_output.weight", n, n, true), l.get(b+"attn_output.bias", n, 1, false)
		L.attnNormW, L.attnNormB = l.get(b+"attn_output_norm.weight", n, 1, true), l.get(b+"attn_output_norm.bias", n, 1, true)
		ffUp := c.FF
		if c.moeLayer(i) {
			ffUp = 0
		} else if up, ok := w.Tensor(b + "ffn_up.weight"); ok && jina && len(up.Shape()) == 2 && up.Shape()[1] == int64(2*c.FF) {
			// llama.cpp's up_contains_gate: ffn_up is n_ff gate rows, then
			// n_ff value rows (GeGLU, unless an ffn_gate is there).
			ffUp = 2 * c.FF
		}
		if ffUp > 0 {
			L.up, L.down = l.get(b+"ffn_up.weight", n, ffUp, true), l.get(b+"ffn_down.weight", c.FF, n, true)
		}
		switch {
		case c.moeLayer(i):
			// nomic-bert-moe's routed blocks: the router and the stacked
			// experts' up and down matrices, without biases.
			E, ff := c.Experts, c.FF
			L.up, L.down = nil, nil
			L.gateInp = l.get(b+"ffn_gate_inp.weight", n, E, true)
			L.upExps = l.getExperts(b+"ffn_up_exps.weight", n, ff, E)
			L.downExps = l.getExperts(b+"ffn_down_exps.weight", ff, n, E)
		case c.Arch == archNomicBERTMoE:
			L.upb, L.downb = l.get(b+"ffn_up.bias", c.FF, 1, false), l.get(b+"ffn_down.bias", n, 1, false)
		case rotary:
			// Nomic BERT's graph runs the SwiGLU feed-forward without biases.
			L.gate = l.get(b+"ffn_gate.weight", n, c.FF, true)
		case jina:
			L.upGated = ffUp != c.FF
			L.upb, L.downb = l.get(b+"ffn_up.bias", ffUp, 1, false), l.get(b+"ffn_down.bias", n, 1, true)
		default:
			L.upb, L.downb = l.get(b+"ffn_up.bias", c.FF, 1, false), l.get(b+"ffn_down.bias", n, 1, false)
		}
		L.outNormW, L.outNormB = l.get(b+"layer_output_norm.weight", n, 1, true), l.get(b+"layer_output_norm.bias", n, 1, true)
	}
	e.loadClassifier(l)
	if l.err != nil {
		return nil, l.err
	}
	return e, nil
}

// loadClassifier reads the optional classifier head (cls, cls.norm,
// cls.output).
func (e *Encoder) loadClassifier(l *encLoader) {
	n := e.Config.Embd
	e.cls, e.clsB = l.get("cls.weight", n, n, false), l.get("cls.bias", n, 1, false)
	e.clsNorm = l.get("cls.norm.weight", n, 1, false)
	if t, ok := l.w.Tensor("cls.output.weight"); ok {
		// One output is stored 1-D by llama-quantize (ggml drops a trailing 1).
		e.ClsOut = 1
		if s := t.Shape(); len(s) == 2 {
			e.ClsOut = int(s[1])
		}
		e.clsOut, e.clsOutB = l.get("cls.output.weight", n, e.ClsOut, true), l.get("cls.output.bias", e.ClsOut, 1, false)
	}
}

// encLoader reads tensors, keeping the first error.
type encLoader struct {
	w   Weights
	err error
}

// get reads a tensor of ne0 × ne1 values (ggml order; ne1 1 for a vector,
// stored 1-D or 2-D), nil when it is absent and optional.
func (l *encLoader) get(name string, ne0, ne1 int, required bool) []float32 {
	shape := []int{ne0, ne1}
	if t, ok := l.w.Tensor(name); ok && ne1 == 1 && len(t.Shape()) == 1 {
		shape = shape[:1]
	}
	return l.getN(name, shape, required)
}

// getN reads a tensor of the given ggml shape (any rank).
func (l *encLoader) getN(name string, shape []int, required bool) []float32 {
	t := l.shaped(name, shape, required)
	if t == nil {
		return nil
	}
	rows := 1
	for _, d := range shape[1:] {
		rows *= d
	}
	dst := make([]float32, rows*shape[0])
	if err := t.ReadRows(0, rows, dst); err != nil {
		l.err = fmt.Errorf("tensor %s: %w", name, err)
		return nil
	}
	return dst
}

// mat checks a weight of ne1 rows of ne0 values and returns it as a matrix
// the products read on use (Session.mul on its stored blocks), nil when it
// is absent and optional.
func (l *encLoader) mat(name string, ne0, ne1 int, required bool) *matrix {
	t := l.shaped(name, []int{ne0, ne1}, required)
	if t == nil {
		return nil
	}
	return &matrix{name: name, tensor: name, expert: -1, t: t, cols: ne0, rows: ne1}
}

// shaped returns the tensor name when it has the given ggml shape; nil
// when it is absent, l.err set too when it is required or of another
// shape.
func (l *encLoader) shaped(name string, shape []int, required bool) Tensor {
	if l.err != nil {
		return nil
	}
	t, ok := l.w.Tensor(name)
	if !ok {
		if required {
			l.err = fmt.Errorf("%w: tensor %s missing", ErrWeights, name)
		}
		return nil
	}
	s := t.Shape()
	okShape := len(s) == len(shape)
	for i := 0; okShape && i < len(s); i++ {
		okShape = s[i] == int64(shape[i])
	}
	if !okShape {
		l.err = fmt.Errorf("%w: tensor %s has shape %v, want %v", ErrWeights, name, s, shape)
		return nil
	}
	return t
}

// linear writes W·x + b for W of len(out) rows of len(x) values.
func linear(out []float32, w, b, x []float32) {
	n := len(x)
	for o := range out {
		out[o] = dot(w[o*n:(o+1)*n], x)
		if b != nil {
			out[o] += b[o]
		}
	}
}

// Hidden runs the encoder over ids (token type 0, positions from 0, every
// token attending to every other) and returns the last hidden state of
// each token: llama.cpp's result_embd. Nomic BERT's positions are NeoX
// rotations of each head's queries and keys instead of a learned table,
// Jina BERT v2's ALiBi biases of the attention scores.
func (e *Encoder) Hidden(ctx context.Context, ids []int) ([][]float32, error) {
	c := e.Config
	n := c.Embd
	T := len(ids)
	if T == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrUnsupported)
	}
	if e.graph != nil {
		return e.graph.hidden(ctx, c, ids)
	}
	if e.pos != nil && T > c.CtxTrain {
		return nil, fmt.Errorf("%w: %d tokens exceed the %d learned positions", ErrUnsupported, T, c.CtxTrain)
	}
	vocab := len(e.tok) / n
	x := make([][]float32, T)
	tmp := make([]float32, n)
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%w: token id %d outside the %d-token embedding", ErrUnsupported, id, vocab)
		}
		row := make([]float32, n)
		copy(row, e.tok[id*n:(id+1)*n])
		if e.typ != nil {
			for j := range row {
				row[j] += e.typ[j]
			}
		}
		if e.pos != nil {
			for j := range row {
				row[j] = e.pos[i*n+j] + row[j]
			}
		}
		layerNorm(tmp, row, e.normW, e.normB, c.Eps)
		copy(row, tmp)
		x[i] = row
	}
	hd := n / c.Heads
	var caches [][]float32
	if c.Arch == archNomicBERT || c.Arch == archNomicBERTMoE {
		rc := &Config{RopeAttnFactor: 1}
		caches = alloc2(T, hd)
		for p := range caches {
			ropeCache(caches[p], p, hd, c.RopeBase, 1, nil, rc)
		}
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	q, k, v := alloc2(T, n), alloc2(T, n), alloc2(T, n)
	attn := alloc2(T, n)
	scores := make([]float32, T)
	up, gate := make([]float32, 2*c.FF), make([]float32, c.FF)
	cur := make([]float32, n)
	for il := range e.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &e.layers[il]
		for t := 0; t < T; t++ {
			linear(q[t], L.q, L.qb, x[t])
			linear(k[t], L.k, L.kb, x[t])
			linear(v[t], L.v, L.vb, x[t])
			for h := 0; caches != nil && h < c.Heads; h++ {
				rope(q[t][h*hd:(h+1)*hd], caches[t], hd, ropeNeox)
				rope(k[t][h*hd:(h+1)*hd], caches[t], hd, ropeNeox)
			}
		}
		for t := 0; t < T; t++ {
			for h := 0; h < c.Heads; h++ {
				qh := q[t][h*hd : (h+1)*hd]
				for s := 0; s < T; s++ {
					scores[s] = dot(qh, k[s][h*hd:(h+1)*hd])
				}
				if e.alibi != nil {
					// ggml_soft_max_ext's ALiBi: scale, then the slope times
					// the mask's −|i − j|.
					for s := range scores {
						scores[s] = scores[s]*scale - e.alibi[h]*float32(max(t-s, s-t))
					}
					softmax(scores, 1)
				} else {
					softmax(scores, scale)
				}
				out := attn[t][h*hd : (h+1)*hd]
				clear(out)
				for s := 0; s < T; s++ {
					for j, vv := range v[s][h*hd : (h+1)*hd] {
						out[j] += scores[s] * vv
					}
				}
			}
		}
		for t := 0; t < T; t++ {
			linear(cur, L.o, L.ob, attn[t])
			for j := range cur {
				cur[j] += x[t][j]
			}
			layerNorm(tmp, cur, L.attnNormW, L.attnNormB, c.Eps)
			ffnIn := append([]float32(nil), tmp...)
			if L.gateInp != nil {
				moeFFN(cur, L, c, ffnIn, up[:c.FF])
				for j := range cur {
					cur[j] += ffnIn[j]
				}
				layerNorm(x[t], cur, L.outNormW, L.outNormB, c.Eps)
				continue
			}
			upOut := up[:len(L.up)/n]
			linear(upOut, L.up, L.upb, ffnIn)
			switch {
			case L.upGated:
				// ggml_geglu: GELU of the first half times the second.
				for j := range c.FF {
					upOut[j] = gelu(upOut[j]) * upOut[c.FF+j]
				}
			case L.gate != nil:
				linear(gate, L.gate, nil, ffnIn)
				for j, g := range gate {
					upOut[j] *= silu(g)
				}
			default:
				for j, u := range upOut {
					upOut[j] = gelu(u)
				}
			}
			linear(cur, L.down, L.downb, upOut[:c.FF])
			for j := range cur {
				cur[j] += ffnIn[j]
			}
			layerNorm(x[t], cur, L.outNormW, L.outNormB, c.Eps)
		}
	}
	return x, nil
}

func alloc2(rows, cols int) [][]float32 {
	m := make([][]float32, rows)
	for i := range m {
		m[i] = make([]float32, cols)
	}
	return m
}

// Pool reduces hidden states as llama.cpp's build_pooling does for p:
// none gives every token's state one after another, mean their average,
// cls the first, last the last, and rank the classifier head's scores on
// the first token, or on the mean when classifier.pooling_type is mean
// (cls, tanh — ModernBERT's GELU —, cls.norm, cls.output; each stage only
// when its tensor is there).
func (e *Encoder) Pool(hidden [][]float32, p Pooling) ([]float32, error) {
	if len(hidden) == 0 {
		return nil, fmt.Errorf("%w: no hidden states", ErrUnsupported)
	}
	switch p {
	case PoolingNone, PoolingUnspecified:
		var out []float32
		for _, h := range hidden {
			out = append(out, h...)
		}
		return out, nil
	case PoolingMean:
		return meanPool(hidden), nil
	case PoolingCLS:
		return append([]float32(nil), hidden[0]...), nil
	case PoolingLast:
		return append([]float32(nil), hidden[len(hidden)-1]...), nil
	case PoolingRank:
		cur := append([]float32(nil), hidden[0]...)
		if e.Config.ClsPooling == PoolingMean {
			cur = meanPool(hidden)
		}
		if e.cls != nil {
			next := make([]float32, len(cur))
			linear(next, e.cls, e.clsB, cur)
			for j, x := range next {
				if e.Config.Arch == archModernBERT {
					next[j] = gelu(x)
				} else {
					next[j] = float32(math.Tanh(float64(x)))
				}
			}
			if e.clsNorm != nil {
				layerNorm(cur, next, e.clsNorm, nil, e.Config.Eps)
			} else {
				cur = next
			}
		}
		if e.clsOut != nil {
			next := make([]float32, e.ClsOut)
			linear(next, e.clsOut, e.clsOutB, cur)
			cur = next
		}
		return cur, nil
	}
	return nil, fmt.Errorf("%w: pooling type %d", ErrUnsupported, int(p))
}

// meanPool is the average of the hidden states.
func meanPool(hidden [][]float32) []float32 {
	out := make([]float32, len(hidden[0]))
	inv := 1 / float32(len(hidden))
	for j := range out {
		var s float32
		for _, h := range hidden {
			s += h[j] * inv
		}
		out[j] = s
	}
	return out
}

// Cosine is the cosine similarity of a and b, in float64 (0 when either
// is zero or the lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// RelError is ‖a − b‖ / ‖b‖ in float64 (+Inf when b is zero and a is not,
// or the lengths differ).
func RelError(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d, n float64
	for i := range a {
		x := float64(a[i]) - float64(b[i])
		d += x * x
		n += float64(b[i]) * float64(b[i])
	}
	switch {
	case d == 0:
		return 0
	case n == 0:
		return math.Inf(1)
	}
	return math.Sqrt(d / n)
}
