package arch

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

func init() {
	register(newJinaBert, "JinaBertModel", "JinaBertForMaskedLM")
}

// jinaBert is JinaBertV2Model (conversion/bert.py): BertModel under the
// jina-bert-v2 architecture (ALiBi, GeGLU gated_layers written whole as
// ffn_up). Its set_vocab follows tokenizer_config.json's tokenizer_class;
// ggufkit converts the BertTokenizer (WordPiece) branch and refuses the
// RobertaTokenizer one (jina-embeddings-v2-base-code, -de, -es).
type jinaBert struct {
	*bert
}

func newJinaBert(h HParams, dir string) (Model, error) {
	b, err := readSmall(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("JinaBertModel reads tokenizer_config.json: %w", err)
	}
	var tc map[string]any
	if err := json.Unmarshal(b, &tc); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	cls, ok := tc["tokenizer_class"]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: tokenizer_config.json has no tokenizer_class", ErrConfig)
	case cls == "RobertaTokenizer":
		return nil, fmt.Errorf("%w: tokenizer_config.json: JinaBertModel with a RobertaTokenizer vocabulary is not supported", ErrConfig)
	case cls != "BertTokenizer":
		return nil, fmt.Errorf("%w: tokenizer_config.json: tokenizer %s is not supported for JinaBertModel", ErrConfig, describe(cls))
	}
	m, err := newBertArch("jina-bert-v2", h, dir)
	if err != nil {
		return nil, err
	}
	return &jinaBert{m}, nil
}
