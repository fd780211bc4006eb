package arch

// Remote-code class names llama.cpp's converter registers on a converter
// class ggufkit already has: IQuest-Coder-V1 on LlamaModel
// (conversion/llama.py), KORMo on Qwen2Model (conversion/qwen.py, its
// pre_attention_layernorm / pre_mlp_layernorm names are in the tensor map).
func init() {
	register(newLlama, "IQuestCoderForCausalLM")
	register(newQwen2("qwen2"), "KORMoForCausalLM")
}
