package mix

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Model holds the hyperparameters the rules look at (llama-quant.cpp reads
// them from the loaded model).
type Model struct {
	// Arch is general.architecture ("llama", "falcon" …).
	Arch string
	// Layers is {arch}.block_count (n_layer_all).
	Layers int
	// Heads and HeadsKV are the attention head counts of layer 0.
	Heads, HeadsKV int
	// Experts is {arch}.expert_count (0 for dense models).
	Experts int
	// Is70B marks llama.cpp's LLM_TYPE_70B, which gives attn_v more bits.
	Is70B bool
}

// GQA is n_head/n_head_kv of layer 0 (0 when n_head_kv is 0).
func (m *Model) GQA() int {
	if m.HeadsKV == 0 {
		return 0
	}
	return m.Heads / m.HeadsKV
}

// is70BByLayers lists the architectures whose 80-layer (jais2: 68-layer)
// models llama.cpp types as 70B (src/models/*.cpp load_arch_hparams).
var is70BByLayers = map[string]int{"llama": 80, "deci": 80, "olmo": 80, "qwen2": 80, "jais2": 68}

// ModelFromKVs reads the hyperparameters from a GGUF's metadata.
func ModelFromKVs(kv func(key string) (gguf.Value, bool)) (Model, error) {
	var m Model
	v, ok := kv(gguf.KeyGeneralArchitecture)
	if !ok {
		return m, fmt.Errorf("mix: %s is missing", gguf.KeyGeneralArchitecture)
	}
	m.Arch, _ = v.Str()
	geti := func(suffix string) int {
		v, ok := kv(gguf.ArchKey(m.Arch, suffix))
		if !ok {
			return 0
		}
		if n, ok := v.Int(); ok {
			return int(n)
		}
		if ns, ok := v.Ints(); ok && len(ns) > 0 {
			return int(ns[0]) // per-layer arrays: layer 0
		}
		return 0
	}
	m.Layers = geti(gguf.SuffixBlockCount)
	m.Heads = geti(gguf.SuffixHeadCount)
	m.HeadsKV = geti(gguf.SuffixHeadCountKV)
	m.Experts = geti(gguf.SuffixExpertCount)
	if n, ok := is70BByLayers[m.Arch]; ok && m.Layers == n && m.Experts != 8 {
		m.Is70B = m.Arch != "llama" || m.Heads != m.HeadsKV
	}
	return m, nil
}

// TypeOverride is a --tensor-type rule: tensors whose name matches Pattern
// (searched anywhere in the name, like std::regex_search) get Type.
type TypeOverride struct {
	Pattern *regexp.Regexp
	Type    gguf.Type
}

// ParseTypeOverride parses "PATTERN=TYPE" as llama-quantize does: the
// pattern is lower-cased, the type is a ggml type name.
func ParseTypeOverride(s string) (TypeOverride, error) {
	pat, typ, ok := strings.Cut(s, "=")
	if !ok || pat == "" || typ == "" {
		return TypeOverride{}, fmt.Errorf("mix: malformed tensor type %q, want PATTERN=TYPE", s)
	}
	t, err := gguf.ParseType(typ)
	if err != nil {
		return TypeOverride{}, fmt.Errorf("mix: tensor type %q: %w", s, err)
	}
	re, err := regexp.Compile(strings.ToLower(pat))
	if err != nil {
		return TypeOverride{}, fmt.Errorf("mix: tensor type %q: %w", s, err)
	}
	return TypeOverride{Pattern: re, Type: t}, nil
}

// Options are the choices of a quantization run that affect tensor types.
type Options struct {
	// FileType is the preset's llama_ftype.
	FileType gguf.FileType
	// Pure gives every quantizable tensor the default type (no mix rules).
	Pure bool
	// Copy is llama-quantize's COPY: nothing is quantized.
	Copy bool
	// LeaveOutput keeps output.weight in its type (--leave-output-tensor).
	LeaveOutput bool
	// OutputType and TokenEmbdType, when not nil, force those tensors' types.
	OutputType, TokenEmbdType *gguf.Type
	// Overrides are --tensor-type rules; the first match wins.
	Overrides []TypeOverride
	// HasImatrix is whether importance weights were given.
	HasImatrix bool
}

// Tensor is one tensor as the planner sees it.
type Tensor struct {
	Name  string
	Type  gguf.Type
	Shape []uint64 // GGUF order
}

// Decision is the planner's verdict for one tensor.
type Decision struct {
	// Type is the output type (the input type when not quantized).
	Type gguf.Type
	// Quantizable is tensor_allows_quantization's answer.
	Quantizable bool
	// RequiresImatrix is tensor_requires_imatrix's answer for Type.
	RequiresImatrix bool
	// Fallback is set when the row length forced a fallback type.
	Fallback bool
	// Override is set when a --tensor-type rule chose the type.
	Override bool
}

// planner is quantize_state_impl: the running counters the rules use.
type planner struct {
	model       Model
	opts        *Options
	defaultType gguf.Type
	tied        bool
	nAttnV      int
	nFFN        int
	iAttnV      int
	iFFNDown    int
	iFFNGate    int
	iFFNUp      int
}

// Plan decides every tensor's type, in llama-quantize's order (Sort them
// first: the counters depend on it). defaultType is the preset's default
// (DefaultType) or, for a plain ggml type target, that type with
// opts.Pure set.
func Plan(m Model, tensors []Tensor, defaultType gguf.Type, opts *Options) ([]Decision, error) {
	p := &planner{model: m, opts: opts, defaultType: defaultType, tied: true, nFFN: m.Layers}
	for _, t := range tensors {
		c := CategoryOf(t.Name)
		if c.isAttnVLike() {
			p.nAttnV++
		}
		if c == Output {
			p.tied = false
		}
	}
	out := make([]Decision, len(tensors))
	for i, t := range tensors {
		d, err := p.decide(t)
		if err != nil {
			return nil, fmt.Errorf("mix: tensor %q: %w", t.Name, err)
		}
		d.RequiresImatrix = RequiresImatrix(t.Name, d.Type, opts.FileType)
		out[i] = d
	}
	return out, nil
}

// decide is llama_tensor_get_type.
func (p *planner) decide(t Tensor) (Decision, error) {
	d := Decision{Type: t.Type}
	if !AllowsQuantization(p.model.Arch, t.Name, t.Shape, p.opts) {
		return d, nil
	}
	d.Quantizable = true
	cat := CategoryOf(t.Name)

	if p.opts.TokenEmbdType != nil && cat == TokenEmbd {
		// per_layer_token_embd may instead be named by an explicit --tensor-type.
		if t.Name != "per_layer_token_embd.weight" || p.override(t.Name) == nil {
			d.Type = *p.opts.TokenEmbdType
			return d, nil
		}
	}
	if p.opts.OutputType != nil && cat == Output {
		d.Type = *p.opts.OutputType
		return d, nil
	}
	d.Type = p.defaultType
	if !p.defaultType.Quantized() {
		return d, nil
	}
	if o := p.override(t.Name); o != nil {
		d.Type, d.Override = o.Type, true
	} else if !p.opts.Pure {
		var err error
		if d.Type, err = p.rules(d.Type, t, cat); err != nil {
			return d, err
		}
	}
	var err error
	d.Type, d.Fallback, err = Fallback(d.Type, t.Shape[0])
	return d, err
}

func (p *planner) override(name string) *TypeOverride {
	for i := range p.opts.Overrides {
		if p.opts.Overrides[i].Pattern.MatchString(name) {
			return &p.opts.Overrides[i]
		}
	}
	return nil
}

// layer returns the layer of an FFN tensor: the running counter for dense
// models, the number in "blk.N." for MoE models (whose expert tensors are
// not in layer order).
func (p *planner) layer(counter int, name string) (int, error) {
	if max(1, p.model.Experts) <= 1 {
		return counter, nil
	}
	l, ok := blockNumber(name)
	if !ok {
		return 0, fmt.Errorf("failed to determine the layer")
	}
	if l < 0 || l >= p.nFFN {
		return 0, fmt.Errorf("bad layer %d, must be in [0, %d)", l, p.nFFN)
	}
	return l, nil
}

// blockNumber parses "blk.%d." the way sscanf does (optional spaces and
// sign, then digits; the trailing dot is not required).
func blockNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	rest = strings.TrimLeft(rest, " \t\n\v\f\r")
	neg := false
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	n, digits := 0, 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		n = n*10 + int(rest[digits]-'0')
		if n > 1<<30 {
			n = 1 << 30
		}
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// Sort orders tensors as llama.cpp's model loader does (weight_name_comparer):
// by the layer number of "blk.N." (names without one first), then by name.
func Sort(tensors []Tensor) {
	sort.SliceStable(tensors, func(i, j int) bool { return Less(tensors[i].Name, tensors[j].Name) })
}

// Less is the loader's name order: layer number of "blk.N." first (names
// without one before all layers), then byte-wise name.
func Less(a, b string) bool {
	la, ok := blockNumber(a)
	if !ok {
		la = -1
	}
	lb, ok := blockNumber(b)
	if !ok {
		lb = -1
	}
	if la != lb {
		return la < lb
	}
	return a < b
}
