package arch

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// The RoBERTa family and DistilBERT (conversion/bert.py): BertModel's GGUF
// (arch bert) with their own names, vocabularies and position offsets.
// CamembertModel is BertModel's routine unchanged: llama.cpp registers it
// there, so its position table is not cut and its vocabulary is read with
// get_vocab_base.
func init() {
	register(newRoberta(VocabXLMRoberta), "XLMRobertaModel", "XLMRobertaForSequenceClassification")
	register(newRoberta(VocabRoberta), "RobertaModel", "RobertaForSequenceClassification")
	register(newBert, "CamembertModel")
	register(newDistilBert, "DistilBertModel", "DistilBertForMaskedLM", "DistilBertForSequenceClassification")
}

// roberta is RobertaModel and XLMRobertaModel: the "roberta." prefix
// dropped and the position table cut by the rows before padding_idx + 1
// (RoBERTa counts positions from there), the context length with it.
type roberta struct {
	*bert
	vocab VocabKind
	// offset is pad_token_id + 1, or -1 without a pad_token_id.
	offset int64
}

func newRoberta(vocab VocabKind) Constructor {
	return func(h HParams, dir string) (Model, error) {
		if l, ok := h["lora_adaptations"].([]any); ok && len(l) > 0 {
			return nil, &UnsupportedError{Arch: "XLMRobertaModel with lora_adaptations (jina-embeddings-v3)",
				Reason: "llama.cpp converts it as jina-bert-v3 with one LoRA GGUF per task, which ggufkit does not write"}
		}
		m := &roberta{vocab: vocab, offset: -1}
		pad, ok, err := h.Int("pad_token_id")
		if err != nil {
			return nil, err
		}
		if ok && h["pad_token_id"] != nil {
			m.offset = pad + 1
			if v, has := h["max_position_embeddings"]; has {
				n, err := asInt(v)
				if err != nil {
					return nil, &ConfigError{Key: "max_position_embeddings", Value: v, Msg: "is not an integer"}
				}
				h = maps.Clone(h)
				h["max_position_embeddings"] = n - m.offset
			}
		}
		b, err := newBert(h, dir)
		if err != nil {
			return nil, err
		}
		m.bert = b.(*bert)
		return m, nil
	}
}

func (m *roberta) Vocab() VocabKind { return m.vocab }

// Filter is RobertaModel.filter_tensors (XLMRobertaModel's without
// jina-embeddings-v3's LoRA parametrizations, whose lora_adaptations make
// another architecture).
func (m *roberta) Filter(name string) (string, bool) {
	return m.bert.Filter(strings.TrimPrefix(name, "roberta."))
}

func (m *roberta) Modify(in Input, bid int) ([]Output, error) {
	if in.Name != "embeddings.position_embeddings.weight" || m.offset < 0 {
		return m.bert.Modify(in, bid)
	}
	if len(in.Shape) != 2 || in.Shape[0] < m.offset {
		return nil, fmt.Errorf("%w: %s: shape %v has fewer than pad_token_id + 1 = %d rows", ErrConfig, in.Source, in.Shape, m.offset)
	}
	out, err := m.bert.Modify(in, bid)
	if err != nil || len(out) != 1 {
		return out, err
	}
	rows, width, off := in.Shape[0], in.Shape[1], m.offset
	out[0].Shape = []int64{rows - off, width}
	out[0].RowOrder = make([]int64, rows-off)
	for i := range out[0].RowOrder {
		out[0].RowOrder[i] = off + int64(i)
	}
	out[0].Build = func(srcs [][]float32) ([]float32, error) {
		return append([]float32(nil), srcs[0][off*width:]...), nil
	}
	return out, nil
}

// distilBert is DistilBertModel: the "distilbert." prefix and the
// masked-LM head (vocab_*) dropped, and a LayerNorm epsilon of 1e-12 (the
// config has none) written before the rest of the metadata.
type distilBert struct{ *bert }

func newDistilBert(h HParams, dir string) (Model, error) {
	b, err := newBert(h, dir)
	if err != nil {
		return nil, err
	}
	return &distilBert{b.(*bert)}, nil
}

func (m *distilBert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.bert.Params(ft)
	if err != nil {
		return nil, err
	}
	var l gguf.KVList
	l.Set(m.arch+".attention.layer_norm_epsilon", gguf.Float32(1e-12))
	l.Append(kvs...)
	return l.KVs(), nil
}

func (m *distilBert) Filter(name string) (string, bool) {
	name = strings.TrimPrefix(name, "distilbert.")
	if strings.HasPrefix(name, "vocab_") {
		return "", false
	}
	return m.bert.Filter(name)
}

// The vocabulary routines of the RoBERTa family.
const (
	VocabXLMRoberta VocabKind = "xlmroberta" // XLMRobertaModel.set_vocab (SentencePiece Unigram, fairseq ids)
	VocabRoberta    VocabKind = "roberta"    // RobertaModel.set_vocab (GPT-2 BPE, else WordPiece)
)
