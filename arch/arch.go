// Package arch holds one plugin per model architecture of llama.cpp's
// converter (convert_hf_to_gguf.py and its conversion/ modules): the GGUF
// metadata of a model's hyperparameters and, for every output tensor, its
// GGUF name, shape, sources and transform. Plugins are keyed by
// config.json's architectures[0]; shared pieces (the name tables, the Q/K
// permutation, expert stacking) are helpers they compose.
//
// A plugin only plans: it never reads tensor data. The convert package runs
// the plan.
package arch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

// Input is a source tensor as the plugin sees it, after the converter's
// name filters.
type Input struct {
	// Name is the tensor's name after filtering (filter_tensors).
	Name string
	// Source is its name in the checkpoint.
	Source string
	// Shape in PyTorch order.
	Shape []int64
	DType readers.DType
}

// Output is one GGUF tensor and how to compute it from its sources.
type Output struct {
	// Name is the GGUF tensor name.
	Name string
	// Shape in PyTorch order (row length last), as the converter's numpy
	// array has it; the GGUF shape is its reverse.
	Shape []int64
	// Sources are the inputs it is computed from, in order.
	Sources []Input
	// Build computes the tensor from its sources' float32 values (each in
	// PyTorch row-major order). Nil means the single source unchanged.
	Build func(srcs [][]float32) ([]float32, error)
	// Data holds the values of a generated tensor (no sources).
	Data []float32
	// RowOrder, when set, says Build only reorders the rows (along the
	// first dimension) of its single source: row i is source row
	// RowOrder[i]. The converter may then convert the stored rows straight
	// to the output type in that order instead of calling Build.
	RowOrder []int64
	// Stacked, when set, says Build only stacks its sources, unchanged
	// and in order, along a new first dimension (experts); a LoRA adapter
	// then stacks its factors without probing Build.
	Stacked bool
	// PadValues is the number of zero values Build appends after its
	// sources' (Gemma 3n's token embeddings padded to the full
	// vocabulary); the convert package allows at most as many as the
	// sources hold.
	PadValues int64
	// HFName is the source name the converter's type rules see (the name
	// modify_tensors was called with), and Bid its block number (-1: none).
	HFName string
	Bid    int
	// Packed, when set, makes a prequantized tensor, one the converter
	// hands to add_tensor with a raw_dtype: its bytes, already in
	// PackedType, computed from its sources' stored bytes (in Sources
	// order), and written as PackedType whatever the outtype. Shape counts
	// values, not bytes.
	Packed     func(srcs [][]byte) ([]byte, error)
	PackedType gguf.Type
	// DropIfZero marks a source the converter checks and leaves out: it
	// must hold only zeros (any other value is an error) and no tensor is
	// written for it (Cohere2Model's biases).
	DropIfZero bool
	// DropIfEqual, when set, leaves the output out if its single source
	// holds the same values as this input (torch.equal): MambaModel omits
	// an output equal to the token embedding.
	DropIfEqual *Input
}

// InputsExtra is implemented by a model whose generate_extra_tensors reads
// the checkpoint's tensors (gpt-oss repacks its MXFP4 experts there): its
// outputs come after Extra's and before every Modify output, and are
// given the filtered inputs in the converter's order.
type InputsExtra interface {
	ExtraFrom(inputs []Input) ([]Output, error)
}

// SelfDequantizer is implemented by a model whose class overrides
// dequant_model to read its own quantized tensors (gpt-oss's MXFP4
// experts): when OwnsQuantization is true, convert leaves the checkpoint's
// quantization_config to the model instead of dequantizing or refusing it.
type SelfDequantizer interface {
	OwnsQuantization() bool
}

// VocabKind names the tokenizer routine of a model class (its set_vocab).
type VocabKind string

// The tokenizer routines of llama.cpp's converter used by wave-1 models.
const (
	VocabLlama         VocabKind = "llama"         // LlamaModel.set_vocab: sentencepiece, llama_hf, gpt2
	VocabGPT2          VocabKind = "gpt2"          // _set_vocab_gpt2
	VocabSentencePiece VocabKind = "sentencepiece" // _set_vocab_sentencepiece
	VocabQwen2         VocabKind = "qwen2"         // Qwen2Model.set_vocab
	VocabGemma         VocabKind = "gemma"         // GemmaModel.set_vocab
	VocabGemma2        VocabKind = "gemma2"        // Gemma2Model.set_vocab
	VocabGemma3        VocabKind = "gemma3"        // Gemma3Model.set_vocab
	VocabGemma4        VocabKind = "gemma4"        // Gemma4Model.set_vocab
	VocabPhi3          VocabKind = "phi3"          // Phi3MiniModel.set_vocab
	VocabBert          VocabKind = "bert"          // BertModel.set_vocab (WordPiece)
	VocabT5            VocabKind = "t5"            // T5Model.set_vocab (SentencePiece Unigram)
	VocabChatGLM       VocabKind = "chatglm"       // ChatGLMModel.set_vocab
	VocabGLM4          VocabKind = "glm4"          // Glm4Model.set_vocab
	VocabGLM           VocabKind = "glm"           // _set_vocab_glm (Glm4MoeModel)
	VocabInternLM2     VocabKind = "internlm2"     // InternLM2Model.set_vocab
	VocabInternLM3     VocabKind = "internlm3"     // InternLM3Model.set_vocab
	VocabErnie4_5      VocabKind = "ernie4_5"      // Ernie4_5Model.set_vocab
)

// Model is one model class of the converter bound to a model's hparams.
type Model interface {
	// Arch is the GGUF architecture name (general.architecture).
	Arch() string
	// Names is the tensor name map.
	Names() *NameMap
	// BlockCount is the number of blocks.
	BlockCount() int
	// Params returns the hyperparameter metadata (set_gguf_parameters),
	// which includes general.file_type.
	Params(ft gguf.FileType) ([]gguf.KV, error)
	// Vocab names the tokenizer routine.
	Vocab() VocabKind
	// Filter renames a checkpoint tensor or drops it (ok false).
	Filter(name string) (string, bool)
	// Extra returns the generated tensors (generate_extra_tensors).
	Extra() ([]Output, error)
	// Modify maps one source tensor to zero or more outputs; it is called
	// in the converter's tensor order and may hold tensors back until a
	// group is complete (experts).
	Modify(in Input, bid int) ([]Output, error)
	// Finish reports tensors still held back after the last Modify.
	Finish() error
	// ForceType is tensor_force_quant: a type this model imposes on a
	// tensor (OutType for its True: the outtype's, past the F32 rules),
	// if any.
	ForceType(out *Output, nDims int) (gguf.Type, bool)
}

// OutType is the type ForceType returns for tensor_force_quant's True: the
// outtype's type, even where the converter would otherwise keep F32.
const OutType gguf.Type = 1<<32 - 1

// TensorIndexer is implemented by a Model whose hyperparameters depend on
// the checkpoint's tensor names (ModelBase.index_tensors, e.g. the MTP
// layer count of Qwen3-Next): IndexTensors gets every tensor name of the
// checkpoint before Params and Modify are called.
type TensorIndexer interface {
	IndexTensors(names []string) error
}

// Constructor builds a Model from hparams and the model's folder (some
// classes read extra files there, e.g. sentence-transformers' modules.json).
type Constructor func(h HParams, dir string) (Model, error)

var registry = map[string]Constructor{}

// rawConfig holds the names registered with registerRaw.
var rawConfig = map[string]bool{}

// registerRaw is register for a model class whose hparams are config.json
// as it is, not AutoConfig's dictionary (MambaModel, Mamba2Model).
func registerRaw(c Constructor, names ...string) {
	register(c, names...)
	for _, n := range names {
		rawConfig[n] = true
	}
}

// register adds a constructor under every Hugging Face architecture name.
func register(c Constructor, names ...string) {
	for _, n := range names {
		if _, dup := registry[n]; dup {
			panic("arch: duplicate registration of " + n)
		}
		registry[n] = c
	}
}

// Supported lists the Hugging Face architecture names, sorted.
func Supported() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnsupportedError is returned for an architecture without a plugin.
type UnsupportedError struct {
	Arch string
	// Reason says why ggufkit does not convert it, when that is known
	// (see refused).
	Reason string
}

func (e *UnsupportedError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("arch: model architecture %q is not supported: %s", e.Arch, e.Reason)
	}
	return fmt.Sprintf("arch: model architecture %q is not supported; supported: %s", e.Arch, strings.Join(Supported(), ", "))
}

// Tokenizer reasons shared by refused entries.
const (
	kimiTiktoken = "Kimi's tokenizer is tiktoken.model read through its remote code (tokenization_kimi.py, " +
		"TikTokenTokenizer), which DeepseekV2Model.set_vocab loads with trust_remote_code and names by hashing its " +
		"output (\"kimi-k2\" only for the real 163,840-rank vocabulary); ggufkit has no reader for it (and with the tokenization_kimi.py " +
		"at hand, the converter itself fails under transformers 5.24: cannot import name 'bytes_to_unicode')"
)

// baichuanRecursion is why Baichuan is refused.
const baichuanRecursion = "llama.cpp's converter fails on every Baichuan checkpoint: BaichuanModel.modify_tensors " +
	"passes each tensor other than W_pack back to itself under its mapped GGUF name, which maps to itself again " +
	"(RecursionError: maximum recursion depth exceeded)"

// jaisMetaItem is why Jais 1 is refused.
const jaisMetaItem = "llama.cpp's converter fails on every Jais checkpoint: JaisModel.modify_tensors reads the " +
	"first ALiBi slope of transformer.relative_pe.slopes with .item(), which its default lazy mode cannot do " +
	"(RuntimeError: Tensor.item() cannot be called on meta tensors)"

// refused names converter classes ggufkit knowingly does not convert, with
// the reason an unsupported-architecture error gives.
var refused = map[string]string{
	"HunYuanMoEV1ForCausalLM": "HunYuanMoEModel.set_vocab always reads the remote-code tokenizer (tokenization_hy.py " +
		"over hy.tiktoken, whose 127,957 ranks the code requires) and names its pre-tokenizer by hashing that " +
		"tokenizer's output, which only the real Hunyuan-A13B vocabulary gives; ggufkit has no reader for it",
	"KimiK25ForConditionalGeneration": kimiTiktoken,
	"KimiVLForConditionalGeneration":  kimiTiktoken,
	"DeepseekV32ForCausalLM": "DeepseekV32Model.set_vocab asserts the tokenizer's add_bos_token, which transformers " +
		"5.24 drops whenever the folder has a tokenizer.json, so llama.cpp's converter fails on every DeepSeek-V3.2 " +
		"checkpoint",
	"ModernBertForMaskedLM": "llama.cpp's converter fails on every ModernBertForMaskedLM checkpoint (Can not map " +
		"tensor 'decoder.bias': the masked-LM decoder's bias, which ModernBertConfig's decoder_bias true gives, has no " +
		"GGUF name); convert the encoder saved as ModernBertModel",
	"DeepseekV4DSparkModel": "a DeepSeek-V4 DSpark (DFlash) draft model, converted by llama.cpp with " +
		"--target-model-dir; ggufkit converts DeepseekV4ForCausalLM only",
	"BaichuanForCausalLM": baichuanRecursion,
	"BaiChuanForCausalLM": baichuanRecursion,
	"JAISLMHeadModel":     jaisMetaItem,
	"ExaoneForCausalLM": "llama.cpp's converter fails on every EXAONE 3 / 3.5 checkpoint: transformers 5.24 has an " +
		"ExaoneConfig for their model_type exaone, which reads activation_function as hidden_act and drops it, so " +
		"ExaoneModel.set_gguf_parameters stops with KeyError: 'activation_function'",
	"QWenLMHeadModel": "Qwen (1)'s tokenizer is qwen.tiktoken read through its remote code (tokenization_qwen.py, " +
		"QWenTokenizer), which QwenModel.set_vocab loads with trust_remote_code for its mergeable_ranks and special " +
		"tokens, rebuilding the merges by BPE over the ranks, and names its pre-tokenizer by hashing that tokenizer's " +
		"output; ggufkit has no reader for it",
	"UltravoxModel": "Ultravox has no text decoder of its own (it uses a Llama or another model's); convert its " +
		"audio encoder with --mmproj",
}

// New builds the plugin of the model in dir described by h, from its
// architectures[0], after the keys its transformers config class derives
// (see autoConfig) are set as the converter sees them.
func New(h HParams, dir string) (Model, error) {
	v, present := h["architectures"]
	if cfg, ok := h["ssm_cfg"].(map[string]any); (!present || v == nil) && ok {
		// get_model_architecture: a mamba_ssm checkpoint without
		// architectures is its ssm_cfg layer's "ForCausalLM" class.
		layer, isStr := cfg["layer"].(string)
		if _, has := cfg["layer"]; !has {
			layer, isStr = "Mamba", true
		}
		if !isStr {
			return nil, &ConfigError{Key: "ssm_cfg.layer", Value: cfg["layer"], Msg: "is not a layer name"}
		}
		v, present = []any{layer + "ForCausalLM"}, true
	}
	archs, isList := v.([]any)
	switch {
	case !present || v == nil:
		return nil, fmt.Errorf("arch: config.json has no \"architectures\"")
	case !isList || len(archs) == 0:
		return nil, &ConfigError{Key: "architectures", Value: v, Msg: "is not a list of model class names"}
	}
	name, ok := archs[0].(string)
	if !ok {
		return nil, &ConfigError{Key: "architectures[0]", Value: archs[0], Msg: "is not a model class name"}
	}
	c, ok := registry[name]
	if !ok {
		return nil, &UnsupportedError{Arch: name, Reason: refused[name]}
	}
	if rawConfig[name] {
		return c(h, dir)
	}
	h, err := autoConfig(h)
	if err != nil {
		return nil, err
	}
	return c(h, dir)
}

// BlockID is the converter's block id: the first dot-separated part of the
// name that is all decimal digits, or -1.
func BlockID(name string) int {
	for part := range strings.SplitSeq(name, ".") {
		if part != "" && strings.Trim(part, "0123456789") == "" {
			n := 0
			for _, c := range part {
				n = n*10 + int(c-'0')
				if n > 1<<30 {
					return -1
				}
			}
			return n
		}
	}
	return -1
}

// numel is the element count of a shape.
func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// identity is the output of one source unchanged, under a GGUF name.
func identity(in Input, name string, bid int) Output {
	return Output{Name: name, Shape: slices.Clone(in.Shape), Sources: []Input{in}, HFName: in.Name, Bid: bid}
}
