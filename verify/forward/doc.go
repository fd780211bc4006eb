// Package forward holds small, readable float32 reference implementations of
// the transformer graphs llama.cpp builds for the llama (dense and mixture of
// experts), llama4, mistral3, apertus, qwen2, qwen2moe, qwen3, qwen3moe, gemma, gemma2,
// gemma3, phi3, gptneox, starcoder2, gpt2, gpt-oss and deepseek2 (and mistral4) architectures,
// the attention + MLP/MoE families olmoe, granite, granitemoe, ernie4_5,
// ernie4_5-moe, minimax-m2, dots1, hunyuan-dense, arcee, exaone4, smollm3 and
// seed_oss (arch_attnmoe.go), the mixtures of experts phimoe, dbrx, afmoe,
// cohere2moe, arctic, bailingmoe2 and grok (arch_moe2.go), and olmo, olmo2,
// command-r, phi2, stablelm, falcon, starcoder, chatglm and gemma3n, the
// older decoders nemotron, minicpm, orion and xverse (arch_classic.go), the
// unabsorbed latent-attention minicpm3 and plm (latent.go), the code models
// codeshell, refact and pangu-embedded (arch_gptcode.go), granite_swa,
// nanbeige, mellum and maincoder (arch_graniteswa.go, arch_nanbeige.go,
// arch_mellum.go, arch_maincoder.go), the state-space models mamba
// and mamba2 (ssm.go), the recurrent rwkv6, rwkv6qwen2, rwkv7 and arwkv7
// (rwkv6.go, rwkv7.go), the hybrids of attention and recurrent blocks lfm2, lfm2moe,
// granitehybrid, jamba and falcon-h1 (hybrid.go), nemotron_h_moe
// (nemotronh.go), qwen3next, qwen35 and qwen35moe (deltanet.go), kimi-linear
// (kda.go), and the encoders (encoder.go: bert, nomic-bert,
// nomic-bert-moe, jina-bert-v2, eurobert, modern-bert, neo-bert)
// (src/models/*.cpp of llama.cpp commit 0c1e570), so that verify can run a
// GGUF and its source side by side. vision.go runs the vision towers of
// multimodal projector files (tools/mtmd/models/*.cpp: Gemma 3, Qwen2-VL,
// Qwen2.5-VL, Qwen3-VL, Pixtral / Mistral 3, SmolVLM, LFM2-VL, InternVL,
// GLM-4.1V / GLM-4.5V, Gemma 4) on a preprocessed image, and audio.go the
// Whisper-style encoders of Qwen2-Audio and Voxtral (whisper-enc.cpp), and
// gemma4audio.go Gemma 4's conformer (gemma4a.cpp), on a log-mel input. Their linears (attention, feed-forward, projector, GLM-4V's
// merger convolution) are the text models' products on the stored blocks
// (below), every token of the image or input in one batch; only their small
// tensors (norms, biases, position tables, the patch and audio convolution
// kernels, Gemma 3's transposed input projection) are decoded to float32.
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
// Matrix products run on the stored blocks as ggml's CPU backend runs them
// (vecdot.go): each input row converted to the weight type's vec_dot
// partner (Q8_0 for Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4; Q8_K for Q4_K, Q5_K,
// Q6_K and IQ4_XS; fp16 or bf16 values for F16 and BF16), integer sums per
// block, the scales applied in float32 (AVX2 kernels on amd64, the Go forms
// with the purego tag); other types are decoded to float32 a chunk of rows
// at a time. F32 products accumulate in float32 with several partial sums,
// so logits of an F32 model agree with llama.cpp's F32 build to about 1e-6
// relative, not bit for bit. A weight held in memory rather than in a GGUF
// (a reference checkpoint) is multiplied in float32, its inputs rounded as
// for the type a ProductTyped tensor names.
package forward
