package arch

func init() {
	register(newLlamaEmbed, "LlamaBidirectionalModel")
}

// newLlamaEmbed is LlamaEmbedNemotronModel (conversion/llama.py): LlamaModel
// unchanged under the llama-embed architecture (nvidia's bidirectional
// Llama embedders).
func newLlamaEmbed(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("llama-embed", h, dir)
	if err != nil {
		return nil, err
	}
	return l, nil
}
