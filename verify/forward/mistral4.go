package forward

// mistral4 is llama_model_mistral4 (Mistral Small 4): llama_model_deepseek2's
// hyperparameters, tensors and graph under its own architecture name. Its
// converter writes the experts fused (ffn_gate_up_exps), which deepseek2's
// loader accepts as well; llama_context's YaRN mscale exception is
// deepseek2's alone (see Config.yarnAttn).
func init() {
	m := *archs["deepseek2"]
	archs["mistral4"] = &m
}
