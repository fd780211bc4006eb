package arch

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newStarcoder2, "Starcoder2ForCausalLM")
	register(newPhi3, "Phi3ForCausalLM")
	register(newGPT2, "GPT2LMHeadModel")
	register(newNeoX, "GPTNeoXForCausalLM")
	register(newBert, "BertModel", "BertForMaskedLM", "BertForSequenceClassification")
}

// starcoder2 is StarCoder2Model: TextModel unchanged.
type starcoder2 struct{ text }

func newStarcoder2(h HParams, dir string) (Model, error) {
	t, err := newText("starcoder2", h, dir)
	return &starcoder2{t}, err
}

func (m *starcoder2) Vocab() VocabKind { return VocabGPT2 }

func (m *starcoder2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

func (m *starcoder2) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}

// phi3 is Phi3MiniModel (conversion/phi.py).
type phi3 struct {
	text
	early []gguf.KV
}

func newPhi3(h HParams, dir string) (Model, error) {
	t, err := newText("phi3", h, dir)
	return &phi3{text: t}, err
}

func (m *phi3) Vocab() VocabKind { return VocabPhi3 }

// ropeDims is the rope dimension count of the Phi models (Phi2Model,
// Phi3MiniModel): int(partial_rotary_factor × n_embd) // n_head, with the
// embedding width and head count it is computed from.
func (t *text) ropeDims() (nEmbd, nHead, dims int64, err error) {
	if nEmbd, err = t.h.MustInt("hidden_size", "n_embd"); err != nil {
		return
	}
	if nHead, err = t.h.MustInt("num_attention_heads", "n_head"); err != nil {
		return
	}
	pct := 1.0
	if v, ok := t.rope["partial_rotary_factor"]; ok && v != nil {
		if pct, err = asFloat(v); err != nil {
			return
		}
	}
	if nHead <= 0 {
		return 0, 0, 0, &ConfigError{Key: "num_attention_heads", Value: nHead, Msg: "is not a head count"}
	}
	rot := math.Trunc(pct * float64(nEmbd))
	if !(rot >= 0 && rot <= 1<<53) {
		// int(partial_rotary_factor × n_embd) must be a size.
		return 0, 0, 0, &ConfigError{Key: "partial_rotary_factor", Value: t.rope["partial_rotary_factor"], Msg: fmt.Sprintf("gives %g rotary dimensions of %d", rot, nEmbd)}
	}
	dims = int64(rot) / nHead
	return
}

func (m *phi3) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	nEmbd, nHead, dims, err := m.ropeDims()
	if err != nil {
		return nil, err
	}
	nKV, _, ok := m.h.Find("num_key_value_heads", "n_head_kv")
	if !ok {
		return nil, fmt.Errorf("config.json: num_key_value_heads is missing")
	}
	eps, _, ok := m.h.Find("rms_norm_eps")
	if !ok {
		return nil, fmt.Errorf("config.json: rms_norm_eps is missing")
	}
	ctx, _, ok := m.h.Find("n_positions", "max_position_embeddings")
	if !ok {
		return nil, fmt.Errorf("config.json: max_position_embeddings is missing")
	}
	orig, ok := m.rope["original_max_position_embeddings"]
	if !ok {
		return nil, fmt.Errorf("config.json: original_max_position_embeddings is missing")
	}
	ffn, _, ok := m.h.Find("intermediate_size")
	if !ok {
		return nil, fmt.Errorf("config.json: intermediate_size is missing")
	}
	theta, ok := m.ropeParams()["rope_theta"]
	if !ok {
		return nil, fmt.Errorf("config.json: rope_theta is missing")
	}
	sw, _ := m.h["sliding_window"]
	if sw == nil {
		sw = 0
	}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", ctx, k.u32},
		{"rope.scaling.original_context_length", orig, k.u32},
		{"embedding_length", nEmbd, k.u32},
		{"feed_forward_length", ffn, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", nHead, k.u32OrArray},
		{"attention.head_count_kv", nKV, k.u32OrArray},
		{"attention.layer_norm_rms_epsilon", eps, k.f32},
		{"rope.dimension_count", dims, k.u32},
		{"rope.freq_base", theta, k.f32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Extra writes long-context rope factors (rope_factors_long/short) and
// records their attention factor.
func (m *phi3) Extra() ([]Output, error) {
	long, _ := m.rope["long_factor"].([]any)
	if len(long) == 0 {
		return nil, nil
	}
	short, _ := m.rope["short_factor"].([]any)
	_, _, dims, err := m.ropeDims()
	if err != nil {
		return nil, err
	}
	ctxV, _, _ := m.h.Find("n_positions", "max_position_embeddings")
	ctx, err := asFloat(ctxV)
	if err != nil {
		return nil, fmt.Errorf("config.json: max_position_embeddings: %w", err)
	}
	orig, err := asFloat(m.rope["original_max_position_embeddings"])
	if err != nil {
		return nil, fmt.Errorf("config.json: original_max_position_embeddings: %w", err)
	}
	if orig <= 0 {
		// The converter divides by it.
		return nil, &ConfigError{Key: "original_max_position_embeddings", Value: m.rope["original_max_position_embeddings"], Msg: "is not a context length"}
	}
	scale := ctx / orig
	typ, _ := m.rope["rope_type"].(string)
	attn := 1.0
	switch strings.ToLower(typ) {
	case "":
		return nil, fmt.Errorf("config.json: rope_scaling.type is missing")
	case "su", "longrope":
		if scale > 1 {
			attn = math.Sqrt(1 + math.Log(scale)/math.Log(orig))
		}
	case "yarn":
		if scale > 1 {
			attn = 0.1*math.Log(scale) + 1
		}
	default:
		return nil, fmt.Errorf("config.json: rope scaling type %q is not supported", typ)
	}
	if math.IsNaN(attn) || math.IsInf(attn, 0) {
		// log(original_max_position_embeddings) is 0: Python's division
		// by zero.
		return nil, &ConfigError{Key: "original_max_position_embeddings", Value: m.rope["original_max_position_embeddings"], Msg: fmt.Sprintf("gives attention factor %g", attn)}
	}
	m.early = append(m.early, gguf.KV{Key: m.arch + ".rope.scaling.attn_factor", Value: gguf.Float32(float32(attn))})
	if len(short) != len(long) || int64(2*len(long)) != dims {
		return nil, fmt.Errorf("config.json: rope long and short factors must have %d values each, have %d and %d", dims/2, len(long), len(short))
	}
	return m.ropeFactors(long, short)
}

// ropeFactors are the rope_factors_long and rope_factors_short tensors of
// long-context rope scaling (float32, from the config's lists).
func (t *text) ropeFactors(long, short []any) ([]Output, error) {
	var outs []Output
	for _, f := range []struct {
		kind Kind
		vals []any
	}{{"ROPE_FACTORS_LONG", long}, {"ROPE_FACTORS_SHORT", short}} {
		data := make([]float32, len(f.vals))
		for i, v := range f.vals {
			x, err := asFloat(v)
			if err != nil {
				return nil, fmt.Errorf("config.json: rope factors: %w", err)
			}
			data[i] = float32(x)
		}
		name, err := t.names.Format(f.kind, -1, ".weight")
		if err != nil {
			return nil, err
		}
		outs = append(outs, Output{Name: name, Shape: []int64{int64(len(data))}, Data: data, HFName: name, Bid: -1})
	}
	return outs, nil
}

// EarlyKVs are written right after general.architecture: the converter
// adds them while it generates the rope factor tensors, before the rest of
// the metadata.
func (m *phi3) EarlyKVs() []gguf.KV { return m.early }

func (m *phi3) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }

// gpt2 is GPT2Model: Conv1D weights transposed to linear layout.
type gpt2 struct{ text }

func newGPT2(h HParams, dir string) (Model, error) {
	t, err := newText("gpt2", h, dir)
	return &gpt2{t}, err
}

func (m *gpt2) Vocab() VocabKind { return VocabGPT2 }

func (m *gpt2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	nEmbd, err := m.h.MustInt("n_embd")
	if err != nil {
		return nil, err
	}
	steps := []struct {
		suffix string
		key    string
		add    func(string, any) error
	}{
		{"block_count", "", k.u32},
		{"context_length", "n_ctx", k.u32},
		{"embedding_length", "n_embd", k.u32},
		{"feed_forward_length", "*4", k.u32OrArray},
		{"attention.head_count", "n_head", k.u32OrArray},
		{"attention.layer_norm_epsilon", "layer_norm_epsilon", k.f32},
	}
	for _, s := range steps {
		var v any
		switch s.key {
		case "":
			v = m.blocks
		case "*4":
			v = 4 * nEmbd
		default:
			var ok bool
			if v, ok = m.h[s.key]; !ok {
				return nil, fmt.Errorf("config.json: %s is missing", s.key)
			}
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

func (m *gpt2) Modify(in Input, bid int) ([]Output, error) {
	for _, s := range []string{".c_attn.weight", ".c_proj.weight", ".c_fc.weight"} {
		if strings.HasSuffix(in.Name, s) {
			if len(in.Shape) != 2 {
				return nil, fmt.Errorf("%s: expected a matrix, shape %v", in.Name, in.Shape)
			}
			out, err := m.mapped(in, in.Name, bid, transpose(in.Shape))
			if err != nil {
				return nil, err
			}
			out[0].Shape = []int64{in.Shape[1], in.Shape[0]}
			return out, nil
		}
	}
	return m.mapped(in, in.Name, bid, nil)
}

// transpose swaps the two dimensions of a matrix.
func transpose(shape []int64) func([][]float32) ([]float32, error) {
	r, c := shape[0], shape[1]
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, len(src))
		for i := range r {
			for j := range c {
				dst[j*r+i] = src[i*c+j]
			}
		}
		return dst, nil
	}
}

// neox is GPTNeoXModel: Bloom-style interleaved QKV reordered to Q, K, V.
type neox struct{ text }

func newNeoX(h HParams, dir string) (Model, error) {
	t, err := newText("gptneox", h, dir)
	return &neox{t}, err
}

func (m *neox) Vocab() VocabKind { return VocabGPT2 }

// Params is GPTNeoXModel.set_gguf_parameters, which writes no
// general.file_type.
func (m *neox) Params(gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	hidden, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	heads, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	if heads <= 0 {
		return nil, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a head count"}
	}
	pct, ok, err := m.h.Float("rotary_pct")
	if err != nil || !ok {
		return nil, fmt.Errorf("config.json: rotary_pct: missing or invalid")
	}
	for _, s := range []struct {
		suffix, key string
		add         func(string, any) error
	}{
		{"context_length", "max_position_embeddings", k.u32},
		{"embedding_length", "hidden_size", k.u32},
	} {
		v, ok := m.h[s.key]
		if !ok {
			return nil, fmt.Errorf("config.json: %s is missing", s.key)
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	if err := k.u32("block_count", m.blocks); err != nil {
		return nil, err
	}
	ffn, ok := m.h["intermediate_size"]
	if !ok {
		return nil, fmt.Errorf("config.json: intermediate_size is missing")
	}
	if err := k.u32OrArray("feed_forward_length", ffn); err != nil {
		return nil, err
	}
	rot := math.Trunc(pct * float64(hidden/heads))
	if !(rot >= 0 && rot <= 1<<32-1) {
		return nil, &ConfigError{Key: "rotary_pct", Value: m.h["rotary_pct"], Msg: fmt.Sprintf("gives %g rotary dimensions", rot)}
	}
	if err := k.u32("rope.dimension_count", int64(rot)); err != nil {
		return nil, err
	}
	if err := k.u32OrArray("attention.head_count", heads); err != nil {
		return nil, err
	}
	parallel := true
	if v, ok := m.h["use_parallel_residual"].(bool); ok {
		parallel = v
	}
	k.l.Set(k.key("use_parallel_residual"), gguf.Bool(parallel))
	eps, ok := m.h["layer_norm_eps"]
	if !ok {
		return nil, fmt.Errorf("config.json: layer_norm_eps is missing")
	}
	if err := k.f32("attention.layer_norm_epsilon", eps); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

var (
	neoxQKVWeight = regexp.MustCompile(`^gpt_neox\.layers\.\d+\.attention\.query_key_value\.weight`)
	neoxQKVBias   = regexp.MustCompile(`^gpt_neox\.layers\.\d+\.attention\.query_key_value\.bias`)
)

func (m *neox) Modify(in Input, bid int) ([]Output, error) {
	if neoxQKVWeight.MatchString(in.Name) || neoxQKVBias.MatchString(in.Name) {
		heads, err := m.h.MustInt("n_head", "num_attention_heads")
		if err != nil {
			return nil, err
		}
		embd, err := m.h.MustInt("hidden_size", "n_embed")
		if err != nil {
			return nil, err
		}
		if heads <= 0 || embd%heads != 0 || len(in.Shape) == 0 || in.Shape[0] != 3*embd {
			return nil, fmt.Errorf("%s: shape %v does not hold %d heads of a %d-wide QKV", in.Name, in.Shape, heads, embd)
		}
		return m.mapped(in, in.Name, bid, qkvPerHeadToBlocks(in.Shape, heads, embd/heads))
	}
	return m.mapped(in, in.Name, bid, nil)
}

// qkvPerHeadToBlocks reorders rows stored head by head as (q, k, v) into
// all Q rows, then all K, then all V.
func qkvPerHeadToBlocks(shape []int64, heads, headDim int64) func([][]float32) ([]float32, error) {
	rowLen := numel(shape[1:])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, len(src))
		for p := range int64(3) {
			for h := range heads {
				for i := range headDim {
					out := p*heads*headDim + h*headDim + i
					in := h*3*headDim + p*headDim + i
					copy(dst[out*rowLen:(out+1)*rowLen], src[in*rowLen:(in+1)*rowLen])
				}
			}
		}
		return dst, nil
	}
}

// bert is BertModel (conversion/bert.py): an encoder for embeddings.
type bert struct {
	text
	labels []string
}

func newBert(h HParams, dir string) (Model, error) {
	m, err := newBertArch("bert", h, dir)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newBertArch is BertModel.__init__ under a subclass's architecture: the
// classifier labels of id2label, AutoConfig's two placeholders excepted.
func newBertArch(arch string, h HParams, dir string) (*bert, error) {
	t, err := newText(arch, h, dir)
	if err != nil {
		return nil, err
	}
	m := &bert{text: t}
	if id2label, ok := h["id2label"].(map[string]any); ok && len(id2label) > 0 {
		// AutoConfig's two placeholder labels are no labels.
		if !(len(id2label) == 2 && id2label["0"] == "LABEL_0") {
			keys := make([]int, 0, len(id2label))
			for k := range id2label {
				n, err := strconv.Atoi(k)
				if err != nil {
					return nil, fmt.Errorf("config.json: id2label key %q", k)
				}
				keys = append(keys, n)
			}
			sort.Ints(keys)
			for _, k := range keys {
				s, _ := id2label[strconv.Itoa(k)].(string)
				m.labels = append(m.labels, s)
			}
		}
	}
	return m, nil
}

func (m *bert) Vocab() VocabKind { return VocabBert }

func (m *bert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	k.l.Set(k.key("attention.causal"), gguf.Bool(false))
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	if len(m.labels) > 0 {
		k.l.Set(k.key("classifier.output_labels"), gguf.Array(m.labels))
	}
	return k.l.KVs(), nil
}

// Filter is BertModel.filter_tensors: "bert." prefix, gamma/beta names,
// and the pooler and pre-training heads dropped.
func (m *bert) Filter(name string) (string, bool) {
	name = strings.TrimPrefix(name, "bert.")
	if s, ok := strings.CutSuffix(name, ".gamma"); ok {
		name = s + ".weight"
	}
	if s, ok := strings.CutSuffix(name, ".beta"); ok {
		name = s + ".bias"
	}
	switch name {
	case "embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias":
		return "", false
	}
	if strings.HasPrefix(name, "cls.predictions") || strings.HasPrefix(name, "cls.seq_relationship") {
		return "", false
	}
	return m.text.Filter(name)
}

func (m *bert) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	if len(m.labels) > 0 {
		switch name {
		case "classifier.weight":
			name = "classifier.out_proj.weight"
		case "classifier.bias":
			name = "classifier.out_proj.bias"
		}
	}
	return m.mapped(in, name, bid, nil)
}
