// Package forward holds small, readable float32 reference implementations of
// the transformer graphs llama.cpp builds for the llama (dense and mixture of
// experts), llama4, mistral3, apertus, qwen2, qwen2moe, qwen3, qwen3moe, gemma, gemma2,
// gemma3, phi3, gptneox, starcoder2, gpt2, gpt-oss and deepseek2 architectures,
// the attention + MLP/MoE families olmoe, granite, granitemoe, ernie4_5,
// ernie4_5-moe, minimax-m2, dots1, hunyuan-dense, arcee, exaone4, smollm3 and
// seed_oss (arch_attnmoe.go), and olmo, olmo2, command-r, phi2, stablelm,
// falcon, starcoder, chatglm and gemma3n, and the state-space models mamba
// and mamba2 (ssm.go) (src/models/*.cpp of llama.cpp commit 0c1e570), so
// that verify can run a GGUF and its source side by side.
//
// A model is described by GGUF metadata (ParseConfig reads it the way
// llama_model_base::load_hparams and each load_arch_hparams do, with the same
// type-strict key lookups) and by weights under GGUF names in ggml element
// order (the Weights interface), so the same code runs on a GGUF's
// dequantized tensors and on a source checkpoint mapped through the
// conversion plan. ExpectedTensors lists the tensors and shapes llama.cpp's
// load_arch_tensors creates for the configuration; it is the one table both
// the loader here and verify's structural checks use.
//
// Numerics follow ggml's CPU backend where the choice is visible: RMS norm
// sums squares in float64, GELU goes through ggml's fp16 lookup (the input
// and output are rounded to fp16), soft-max sums in float64, RoPE builds its
// sin/cos cache with float32 theta multiplied by theta_scale step by step.
// Matrix products accumulate in float32 with several partial sums, so logits
// agree with llama.cpp's F32 build to about 1e-6 relative, not bit for bit.
package forward
