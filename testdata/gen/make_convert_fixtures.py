#!/usr/bin/env python3
"""Make the convert fixtures in testdata/convert/.

Each fixture is a tiny random-weight Hugging Face checkpoint of one model family,
instantiated with transformers from a SHRUNKEN copy of the config.json of a real
model of that family: the same keys (sorted, as save_pretrained writes them, in
the transformers-4.x spelling the Hub files use: rope_theta / rope_scaling /
torch_dtype), only sizes and a few ids changed (see SHRUNK below), so tensor names
and layouts are the real ones. Weights are saved with save_pretrained (safetensors)
in the dtype the real model ships in, except where a big vocabulary forces 16-bit
storage to keep the fixture small (noted per fixture).

The tokenizer is not stored per fixture: testdata/convert/tokenizers/<name>/ holds
each tokenizer once and fixture manifest.json says which one to place beside the
weights (and which fixture-local files override it).

Weights (our choice, deterministic, independent of transformers' own init):
for each fixture a torch.Generator seeded with `seed`, then in named_parameters()
order (tied parameters appear once):
  - 2-D+ weights: N(0,1) / sqrt(fan_in) (fan_in = last dim); embeddings N(0,1);
  - norm weights: 1 + 0.1 N(0,1)  (Gemma-family norms store an offset: 0.1 N(0,1));
  - biases and any other 1-D parameter: 0.1 N(0,1).
The float32 values are then cast to the storage dtype.

Also written per fixture:
  logits.f32 + logits.json  transformers' float32 forward pass (eager attention) of a
                            fixed prompt, loaded back from the saved folder;
  manifest.json             class, source model, tokenizer, dtype, files, seed.

Run (from the repository root):
  python testdata/gen/make_convert_fixtures.py --out testdata/convert
Versions used: see testdata/convert/README.md.
"""
import argparse
import hashlib
import json
import os
import shutil
import tempfile
from collections import OrderedDict

import numpy as np
import torch
import transformers
from safetensors import safe_open

# ---------------------------------------------------------------------------
# Tokenizers: each stored once under <out>/tokenizers/<name>/.
# The source paths are relative to the shared reference data folder (--shared).
TOKENIZERS = {
    "tok512": {
        "from": "reference/stories260K/source",
        "files": ["tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"],
        "note": "llama2.c's tok512 SentencePiece BPE model (512 pieces) as used by stories260K",
    },
    "gpt2": {
        "from": "data/hf-gpt2/fake_gpt2",
        "files": ["tokenizer.json", "tokenizer_config.json"],
        "note": "OpenAI GPT-2 BPE (50257 tokens), HF tokenizer.json",
    },
    "bert-base-uncased": {
        "from": "data/tokenizers/bert",
        "files": ["vocab.txt"],
        "note": "bert-base-uncased WordPiece vocab.txt (30522); tokenizer_config.json and "
                "special_tokens_map.json are ours (written below, the bge-small-en-v1.5 settings)",
    },
}

# tokenizer_config.json / special_tokens_map.json for bert-base-uncased (ours: the
# BertTokenizer settings of BAAI/bge-small-en-v1.5).
BERT_TOKENIZER_CONFIG = {
    "clean_up_tokenization_spaces": True,
    "cls_token": "[CLS]",
    "do_basic_tokenize": True,
    "do_lower_case": True,
    "mask_token": "[MASK]",
    "model_max_length": 512,
    "never_split": None,
    "pad_token": "[PAD]",
    "sep_token": "[SEP]",
    "strip_accents": None,
    "tokenize_chinese_chars": True,
    "tokenizer_class": "BertTokenizer",
    "unk_token": "[UNK]",
}
BERT_SPECIAL_TOKENS_MAP = {
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
    "pad_token": "[PAD]",
    "sep_token": "[SEP]",
    "unk_token": "[UNK]",
}

# The GPT-2 tokenizer placed in a non-GPT-2 model folder: transformers would pick the
# family's tokenizer class from config.json's model_type (Qwen2Tokenizer rebuilds the
# pre-tokenizer with Qwen's regex, GPTNeoXTokenizer adds a pad token), so these
# fixtures carry a tokenizer_config.json (ours) that names GPT2Tokenizer.
GPT2_CLASS_OVERRIDE = {"model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer"}

# Fixed prompts (ids are asserted against the tokenizer in check_prompt()).
PROMPTS = {
    "tok512": {"text": "Once upon a time", "ids": [1, 403, 407, 261, 378]},
    "gpt2": {"text": "Hello, my dog is cute", "ids": [15496, 11, 616, 3290, 318, 13779]},
    "bert-base-uncased": {"text": "hello world", "ids": [101, 7592, 2088, 102]},
}

# Logits of every prompt position are stored when the vocabulary is small; above this
# only the last position's row is stored (logits.json then has per-position top-5).
FULL_LOGITS_MAX_VOCAB = 4096

# ---------------------------------------------------------------------------
# Fixtures. `config` is the real model's config.json with SHRUNK values; comments
# give the real value of every key we changed.
FIXTURES = OrderedDict()

FIXTURES["llama3tied"] = dict(
    cls="LlamaForCausalLM", source="meta-llama/Llama-3.2-1B", tokenizer="tok512",
    dtype="bfloat16", seed=101, norm="one", pytorch_copy=True,
    why="tied embeddings + llama3 rope scaling (rope_freqs), GQA, explicit head_dim",
    config={
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,            # 128000 (tok512 ids)
        "eos_token_id": 2,            # 128001
        "head_dim": 16,               # 64
        "hidden_act": "silu",
        "hidden_size": 64,            # 2048
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 8192
        "max_position_embeddings": 131072,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": 4,     # 32
        "num_hidden_layers": 2,       # 16
        "num_key_value_heads": 2,     # 8
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {
            "factor": 32.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "rope_theta": 500000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.45.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 128256
    })

FIXTURES["llama1"] = dict(
    cls="LlamaForCausalLM", source="huggyllama/llama-7b", tokenizer="tok512",
    dtype="float16", seed=117, norm="one",
    why="a transformers-4.28 LLaMA config: no rope_theta, num_key_value_heads or head_dim, which the converter "
        "then has from LlamaConfig's defaults and derivations (rope base 10000, kv heads = heads, head_dim = "
        "hidden/heads); F16 source, untied",
    config={
        "architectures": ["LlamaForCausalLM"],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 64,            # 4096
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 11008
        "max_position_embeddings": 2048,
        "max_sequence_length": 2048,
        "model_type": "llama",
        "num_attention_heads": 4,     # 32
        "num_hidden_layers": 2,       # 32
        "pad_token_id": 0,
        "rms_norm_eps": 1e-06,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.28.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 32000
    })

FIXTURES["mistral"] = dict(
    cls="MistralForCausalLM", source="mistralai/Mistral-7B-v0.1", tokenizer="tok512",
    dtype="bfloat16", seed=102, norm="one", shard_size="150KB",
    why="sliding_window, GQA, untied; stored SHARDED (2 safetensors + index) like the real checkpoint",
    config={
        "architectures": ["MistralForCausalLM"],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 64,            # 4096
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 14336
        "max_position_embeddings": 32768,
        "model_type": "mistral",
        "num_attention_heads": 4,     # 32
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 2,     # 8
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.34.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 32000
    })

FIXTURES["mixtral"] = dict(
    cls="MixtralForCausalLM", source="mistralai/Mixtral-8x7B-v0.1", tokenizer="tok512",
    dtype="bfloat16", seed=103, norm="one",
    why="sparse MoE, per-expert w1/w2/w3 tensors (block_sparse_moe) to be stacked, router gate",
    config={
        "architectures": ["MixtralForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 64,            # 4096
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 14336
        "max_position_embeddings": 32768,
        "model_type": "mixtral",
        "num_attention_heads": 4,     # 32
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 2,     # 8
        "num_local_experts": 4,       # 8
        "output_router_logits": False,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.02,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.36.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 32000
    })

FIXTURES["qwen2"] = dict(
    cls="Qwen2ForCausalLM", source="Qwen/Qwen2.5-0.5B", tokenizer="tok512",
    dtype="bfloat16", seed=104, norm="one",
    why="q/k/v biases, GQA, tied embeddings; Qwen2Model.set_vocab's SentencePiece branch (tokenizer.model "
        "present; qwen3 covers its GPT-2 branch). Not the GPT-2 vocab: transformers 5.24 forces Qwen2Tokenizer "
        "(Qwen's regex) on model_type qwen2 whatever tokenizer_config.json says, and llama.cpp then does not "
        "recognise the pre-tokenizer of GPT-2's vocab under Qwen's regex",
    config={
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 1,            # 151643 (tok512 ids)
        "eos_token_id": 2,            # 151643
        "hidden_act": "silu",
        "hidden_size": 64,            # 896
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 4864
        "max_position_embeddings": 32768,
        "max_window_layers": 2,       # 24
        "model_type": "qwen2",
        "num_attention_heads": 4,     # 14
        "num_hidden_layers": 2,       # 24
        "num_key_value_heads": 2,     # 2
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "sliding_window": 32768,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.40.1",
        "use_cache": True,
        "use_mrope": False,
        "use_sliding_window": False,
        "vocab_size": 512,            # 151936
    })

FIXTURES["qwen2moe"] = dict(
    cls="Qwen2MoeForCausalLM", source="Qwen/Qwen1.5-MoE-A2.7B", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=105, norm="one",
    why="routed experts (per-expert gate/up/down) + shared expert + shared_expert_gate, qkv bias, untied",
    config={
        "architectures": ["Qwen2MoeForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 50256,        # 151643
        "decoder_sparse_step": 1,
        "eos_token_id": 50256,        # 151643
        "hidden_act": "silu",
        "hidden_size": 4,             # 2048 (4 = 2 heads x 2: the untied 50257-token embedding and output dominate the size)
        "initializer_range": 0.02,
        "intermediate_size": 64,      # 5632
        "max_position_embeddings": 8192,
        "max_window_layers": 2,       # 21
        "model_type": "qwen2_moe",
        "moe_intermediate_size": 32,  # 1408
        "norm_topk_prob": False,
        "num_attention_heads": 2,     # 16
        "num_experts": 4,             # 60
        "num_experts_per_tok": 2,     # 4
        "num_hidden_layers": 2,       # 24
        "num_key_value_heads": 2,     # 16
        "output_router_logits": False,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001,
        "shared_expert_intermediate_size": 64,  # 5632
        "sliding_window": 32768,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.40.0.dev0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 50257,          # 151936
    })

FIXTURES["qwen3"] = dict(
    cls="Qwen3ForCausalLM", source="Qwen/Qwen3-0.6B", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=106, norm="one",
    why="q_norm/k_norm, head_dim independent of hidden (q_proj out 32 > hidden 8), GQA, tied",
    config={
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 50256,        # 151643
        "eos_token_id": 50256,        # 151645
        "head_dim": 16,               # 128
        "hidden_act": "silu",
        "hidden_size": 8,             # 1024
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 3072
        "max_position_embeddings": 40960,
        "max_window_layers": 2,       # 28
        "model_type": "qwen3",
        "num_attention_heads": 2,     # 16
        "num_hidden_layers": 2,       # 28
        "num_key_value_heads": 1,     # 8
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 50257,          # 151936
    })

FIXTURES["qwen3moe"] = dict(
    cls="Qwen3MoeForCausalLM", source="Qwen/Qwen3-30B-A3B", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=107, norm="one",
    why="routed experts without shared expert, q_norm/k_norm, explicit head_dim, norm_topk_prob, untied",
    config={
        "architectures": ["Qwen3MoeForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 50256,        # 151643
        "decoder_sparse_step": 1,
        "eos_token_id": 50256,        # 151645
        "head_dim": 16,               # 128
        "hidden_act": "silu",
        "hidden_size": 4,             # 2048 (the untied 50257-token embedding and output dominate the size)
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 6144
        "max_position_embeddings": 40960,
        "max_window_layers": 2,       # 48
        "mlp_only_layers": [],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": 32,  # 768
        "norm_topk_prob": True,
        "num_attention_heads": 2,     # 32
        "num_experts": 4,             # 128
        "num_experts_per_tok": 2,     # 8
        "num_hidden_layers": 2,       # 48
        "num_key_value_heads": 1,     # 4
        "output_router_logits": False,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 50257,          # 151936
    })

FIXTURES["qwen3moefused"] = dict(
    FIXTURES["qwen3moe"],
    fused_experts=True,
    why="qwen3moe's weights (same seed) in transformers 5's own layout, which some checkpoints ship: the "
        "model's state_dict() saved as it is, each block's experts fused into mlp.experts.gate_up_proj "
        "[experts, 2*ff, hidden] (the converter splits it) and a 3-D mlp.experts.down_proj",
)

FIXTURES["gemma"] = dict(
    cls="GemmaForCausalLM", source="google/gemma-2b", tokenizer="tok512",
    dtype="bfloat16", seed=108, norm="offset",
    why="norms stored as offsets (converter adds 1), MQA, head_dim 48 != hidden/heads, tied, embedding scaled by sqrt(hidden)",
    config={
        "architectures": ["GemmaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,            # 2 (tok512 ids)
        "eos_token_id": 2,            # 1
        "head_dim": 48,               # 256
        "hidden_act": "gelu",
        "hidden_size": 64,            # 2048
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 16384
        "max_position_embeddings": 8192,
        "model_type": "gemma",
        "num_attention_heads": 2,     # 8
        "num_hidden_layers": 2,       # 18
        "num_key_value_heads": 1,
        "pad_token_id": 0,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.38.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 256000
    })

FIXTURES["gemma2"] = dict(
    cls="Gemma2ForCausalLM", source="google/gemma-2-2b", tokenizer="tok512",
    dtype="float32", seed=109, norm="offset", pytorch_copy=True,
    why="attn/final logit soft-capping, sliding window, pre+post norms, query_pre_attn_scalar; F32 source like the real one",
    config={
        "architectures": ["Gemma2ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": 50.0,
        "bos_token_id": 1,            # 2
        "cache_implementation": "hybrid",
        "eos_token_id": 2,            # 1
        "final_logit_softcapping": 30.0,
        "head_dim": 48,               # 256
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 64,            # 2304
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 9216
        "max_position_embeddings": 8192,
        "model_type": "gemma2",
        "num_attention_heads": 2,     # 8
        "num_hidden_layers": 2,       # 26
        "num_key_value_heads": 1,     # 4
        "pad_token_id": 0,
        "query_pre_attn_scalar": 48,  # 256 (= head_dim)
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "torch_dtype": "float32",
        "transformers_version": "4.42.4",
        "use_cache": True,
        "vocab_size": 512,            # 256000
    })

FIXTURES["gemma3"] = dict(
    cls="Gemma3ForCausalLM", source="google/gemma-3-1b-it", tokenizer="tok512",
    dtype="bfloat16", seed=110, norm="offset",
    why="q_norm/k_norm, local (sliding) + global layers with two rope bases, pre+post norms, MQA",
    config={
        "architectures": ["Gemma3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": None,
        "bos_token_id": 1,            # 2
        "cache_implementation": "hybrid",
        "eos_token_id": [2, 106],     # [1, 106]
        "final_logit_softcapping": None,
        "head_dim": 48,               # 256
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 64,            # 1152
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 6912
        "max_position_embeddings": 32768,
        "model_type": "gemma3_text",
        "num_attention_heads": 2,     # 4
        "num_hidden_layers": 2,       # 26
        "num_key_value_heads": 1,
        "pad_token_id": 0,
        "query_pre_attn_scalar": 48,  # 256 (= head_dim)
        "rms_norm_eps": 1e-06,
        "rope_local_base_freq": 10000,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": 512,
        "sliding_window_pattern": 2,  # 6 (so that the 2nd of 2 layers is global)
        "torch_dtype": "bfloat16",
        "transformers_version": "4.50.0.dev0",
        "use_cache": True,
        "vocab_size": 512,            # 262144
    })

FIXTURES["phi3"] = dict(
    cls="Phi3ForCausalLM", source="microsoft/Phi-3-mini-128k-instruct", tokenizer="tok512",
    dtype="bfloat16", seed=111, norm="one",
    why="fused qkv_proj and gate_up_proj, longrope scaling (rope_factors_long/short), sliding_window, untied",
    config={
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 2,            # 32000
        "hidden_act": "silu",
        "hidden_size": 64,            # 3072
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 8192
        "max_position_embeddings": 131072,
        "model_type": "phi3",
        "num_attention_heads": 4,     # 32
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 4,     # 32
        "original_max_position_embeddings": 4096,
        "pad_token_id": 2,            # 32000 (= eos)
        "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {             # real lists have head_dim/2 = 48 entries
            "long_factor": [1.07, 1.12, 1.15, 1.42, 1.57, 1.8, 2.13, 2.66],
            "short_factor": [1.05, 1.05, 1.05, 1.1, 1.1, 1.15, 1.2, 1.25],
            "type": "longrope",
        },
        "rope_theta": 10000.0,
        "sliding_window": 262144,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.40.2",
        "use_cache": True,
        "vocab_size": 512,            # 32064
    })

FIXTURES["gpt2"] = dict(
    cls="GPT2LMHeadModel", source="openai-community/gpt2", tokenizer="gpt2",
    dtype="float16", seed=112, norm="one",
    why="Conv1D weights stored [in, out] (converter transposes), fused c_attn, learned positions, LayerNorm biases, tied; "
        "F16 (the real one is F32) and hidden 8 because of the 50257-token vocab",
    config={
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": 1024,
        "n_embd": 8,                  # 768
        "n_head": 2,                  # 12
        "n_layer": 2,                 # 12
        "n_positions": 1024,
        "resid_pdrop": 0.1,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": 50257,
    })

FIXTURES["gptneox"] = dict(
    cls="GPTNeoXForCausalLM", source="EleutherAI/pythia-70m", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="float16", seed=113, norm="one",
    # transformers 5's GPTNeoXConfig moves rotary_pct into rope_parameters, and GPTNeoXModel.set_gguf_parameters
    # then fails (KeyError: 'rotary_pct'): llama.cpp's converter is run with the transformers its own
    # requirements pin (requirements/requirements-convert_legacy_llama.txt) for this fixture.
    converter_transformers="4.57.6",
    why="fused query_key_value interleaved per head (converter reorders), partial rotary (rotary_pct 0.5 of a 4-wide head), "
        "parallel residual, untied embed_out, vocab padded past the tokenizer (50304 > 50257)",
    config={
        "architectures": ["GPTNeoXForCausalLM"],
        "bos_token_id": 50256,        # 0 (GPT-2 ids)
        "classifier_dropout": 0.1,
        "eos_token_id": 50256,        # 0
        "hidden_act": "gelu",
        "hidden_dropout": 0.0,
        "hidden_size": 4,             # 512 (4 = 1 head x 4, with rotary_pct 0.5: rotary dims = 2; the
                                      # untied 50304-token embedding and output dominate the size)
        "initializer_range": 0.02,
        "intermediate_size": 64,      # 2048
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "gpt_neox",
        "num_attention_heads": 1,     # 8
        "num_hidden_layers": 2,       # 6
        "rope_scaling": None,
        "rotary_emb_base": 10000,
        "rotary_pct": 0.5,            # 0.25 (still partial: 2 of 4 dims rotate)
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.24.0",
        "use_cache": True,
        "use_parallel_residual": True,
        "vocab_size": 50304,
    })

FIXTURES["starcoder2"] = dict(
    cls="Starcoder2ForCausalLM", source="bigcode/starcoder2-3b", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=114, norm="one",
    why="biases everywhere (use_bias), LayerNorm with bias, plain GELU MLP (c_fc/c_proj), GQA, sliding window, "
        "tied by transformers' default (no tie_word_embeddings key)",
    config={
        "architectures": ["Starcoder2ForCausalLM"],
        "attention_dropout": 0.1,
        "bos_token_id": 50256,        # 0
        "embedding_dropout": 0.1,
        "eos_token_id": 50256,        # 0
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_size": 8,             # 3072
        "initializer_range": 0.018042,
        "intermediate_size": 32,      # 12288
        "max_position_embeddings": 16384,
        "mlp_type": "default",
        "model_type": "starcoder2",
        "norm_epsilon": 1e-05,
        "norm_type": "layer_norm",
        "num_attention_heads": 2,     # 24
        "num_hidden_layers": 2,       # 30
        "num_key_value_heads": 1,     # 2
        "residual_dropout": 0.1,
        "rope_theta": 999999.4420358813,
        "sliding_window": 4096,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.37.0.dev0",
        "use_bias": True,
        "use_cache": True,
        "vocab_size": 50257,          # 49152
    })

FIXTURES["bert"] = dict(
    cls="BertModel", source="BAAI/bge-small-en-v1.5", tokenizer="bert-base-uncased",
    dtype="float16", seed=115, norm="one",
    extra_files={
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "1_Pooling/config.json": {
            "word_embedding_dimension": 16,   # 384
            "pooling_mode_cls_token": True,
            "pooling_mode_mean_tokens": False,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    },
    why="embedding model: token_type and position embeddings, LayerNorm everywhere, pooler (dropped by the "
        "converter), sentence-transformers CLS pooling; F16 (the real one is F32) because of the 30522-token vocab",
    config={
        "_name_or_path": "/root/.cache/torch/sentence_transformers/BAAI_bge-small-en/",
        "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 16,            # 384
        "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02,
        "intermediate_size": 64,      # 1536
        "label2id": {"LABEL_0": 0},
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "model_type": "bert",
        "num_attention_heads": 2,     # 12
        "num_hidden_layers": 2,       # 12
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": "4.30.0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": 30522,
    })

FIXTURES["bertmlm"] = dict(
    cls="BertForMaskedLM", source="google-bert/bert-base-uncased", tokenizer="bert-base-uncased",
    dtype="float16", seed=116, norm="one",
    why="masked-LM checkpoint: every name under bert., cls.predictions head (dropped by the converter), no "
        "sentence-transformers files (no pooling type); F16 (the real one is F32) and hidden 8 because of the "
        "30522-token vocab",
    config={
        "architectures": ["BertForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "gradient_checkpointing": False,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 8,             # 768
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 3072
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "model_type": "bert",
        "num_attention_heads": 2,     # 12
        "num_hidden_layers": 2,       # 12
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "transformers_version": "4.6.0.dev0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": 30522,
    })

# ---------------------------------------------------------------------------
# Wave 2.

FIXTURES["phi2"] = dict(
    cls="PhiForCausalLM", source="microsoft/phi-2", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="float16", seed=118, norm="one",
    why="parallel attention + MLP off one LayerNorm, q/k/v and dense biases, partial rotary, lm_head with bias, "
        "untied; add_bos_token false set with the hyperparameters; hidden 4 because of the 50257-token vocab",
    config={
        "_name_or_path": "microsoft/phi-2",
        "architectures": ["PhiForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 50256,
        "embd_pdrop": 0.0,
        "eos_token_id": 50256,
        "hidden_act": "gelu_new",
        "hidden_size": 4,             # 2560
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 10240
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "phi",
        "num_attention_heads": 1,     # 32
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 1,     # 32
        "partial_rotary_factor": 0.5, # 0.4 (0.4 of a 4-wide head is 1 rotary dim, which transformers' rotary can not do)
        "qk_layernorm": False,
        "resid_pdrop": 0.1,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.37.0",
        "use_cache": True,
        "vocab_size": 50257,          # 51200
    })

FIXTURES["falcon"] = dict(
    cls="FalconForCausalLM", source="tiiuae/falcon-40b", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=119, norm="one",
    why="new decoder architecture: fused query_key_value grouped per KV head (n_head/n_kv queries, one key, one value; "
        "the converter regroups it to Q|K|V), ln_attn + ln_mlp, parallel attention, no biases, tied by "
        "FalconConfig's default, context length fixed at 2048 by the converter",
    config={
        "alibi": False,
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["FalconForCausalLM"],
        "attention_dropout": 0.0,
        "bias": False,
        "bos_token_id": 50256,        # 11 (GPT-2 ids)
        "eos_token_id": 50256,        # 11
        "hidden_dropout": 0.0,
        "hidden_size": 8,             # 8192
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "falcon",
        "new_decoder_architecture": True,
        "num_attention_heads": 4,     # 128
        "num_hidden_layers": 2,       # 60
        "num_kv_heads": 2,            # 8
        "parallel_attn": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.27.4",
        "use_cache": True,
        "vocab_size": 50257,          # 65024
    })

FIXTURES["stablelm"] = dict(
    cls="StableLmForCausalLM", source="stabilityai/stablelm-2-1_6b", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="float16", seed=120, norm="one",
    # Not stablelm-2-12b: its per-head q/k LayerNorms (qk_layernorm) make llama.cpp 0c1e570's converter fail
    # ("ValueError: Unprocessed norms": StableLMModel.modify_tensors returns the stacking generator instead of
    # yielding from it), so there is nothing to compare with.
    why="LayerNorm with bias, q/k/v biases (use_qkv_bias), partial rotary, no use_parallel_residual key (the "
        "converter's default would be true, StableLmConfig's false wins), untied; hidden 4 because of the 50257-token vocab",
    config={
        "architectures": ["StableLmForCausalLM"],
        "bos_token_id": 50256,        # 100257
        "eos_token_id": 50256,        # 100257
        "hidden_act": "silu",
        "hidden_dropout": 0.0,
        "hidden_size": 4,             # 2048
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 5632
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 4096,
        "model_type": "stablelm",
        "num_attention_heads": 1,     # 32
        "num_hidden_layers": 2,       # 24
        "num_key_value_heads": 1,     # 32
        "partial_rotary_factor": 0.5, # 0.25 (0.25 of a 4-wide head is 1 rotary dim, which transformers' rotary can not do)
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.38.0",
        "use_cache": True,
        "use_qkv_bias": True,
        "vocab_size": 50257,          # 100352
    })

FIXTURES["olmo2"] = dict(
    cls="Olmo2ForCausalLM", source="allenai/OLMo-2-1124-7B", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=121, norm="one",
    why="post-norms (post_attention_layernorm, post_feedforward_layernorm) instead of pre-norms, q_norm/k_norm over "
        "the whole projection, untied; BF16 (the real one is F32) and hidden 4 because of the 50257-token vocab",
    config={
        "architectures": ["Olmo2ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "eos_token_id": 50256,        # 100257
        "hidden_act": "silu",
        "hidden_size": 4,             # 4096
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 11008
        "max_position_embeddings": 4096,
        "model_type": "olmo2",
        "num_attention_heads": 2,     # 32
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 2,     # 32
        "pad_token_id": 50256,        # 100277
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 500000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",    # float32
        "transformers_version": "4.47.0.dev0",
        "use_cache": True,
        "vocab_size": 50257,          # 100352
    })

FIXTURES["granite"] = dict(
    cls="GraniteForCausalLM", source="ibm-granite/granite-3.3-2b-instruct", tokenizer="tok512",
    dtype="bfloat16", seed=122, norm="one",
    # tok512, not the GPT-2 tokenizer: LlamaModel.set_vocab tries LlamaHfVocab before the GPT-2 routine, and
    # gguf-py's LlamaHfVocab fails with KeyError 'type' on our GPT-2 tokenizer.json (its model has no "type").
    why="Llama layout (Q/K permuted) with attention/embedding/residual multipliers and logits scaling, GQA, tied",
    config={
        "architectures": ["GraniteForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attention_multiplier": 0.015625,
        "bos_token_id": 1,            # 0 (tok512 ids)
        "embedding_multiplier": 12.0,
        "eos_token_id": 2,            # 0
        "hidden_act": "silu",
        "hidden_size": 64,            # 2048
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 8192
        "logits_scaling": 8.0,
        "max_position_embeddings": 131072,
        "mlp_bias": False,
        "model_type": "granite",
        "num_attention_heads": 4,     # 32
        "num_hidden_layers": 2,       # 40
        "num_key_value_heads": 1,     # 8
        "pad_token_id": 0,
        "residual_multiplier": 0.22,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.49.0",
        "use_cache": True,
        "vocab_size": 512,            # 49159
    })

FIXTURES["smollm3"] = dict(
    cls="SmolLM3ForCausalLM", source="HuggingFaceTB/SmolLM3-3B", tokenizer="tok512",
    dtype="bfloat16", seed=123, norm="one",
    why="Llama layout (Q/K permuted) with NoPE layers (no_rope_layers; every 4th layer without rotary), GQA, tied",
    config={
        "architectures": ["SmolLM3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": None,
        "eos_token_id": 2,            # 128012 (tok512 ids)
        "hidden_act": "silu",
        "hidden_size": 64,            # 2048
        "initializer_range": 0.02,
        "intermediate_size": 128,     # 11008
        "layer_types": ["full_attention"] * 4,  # 36 entries
        "max_position_embeddings": 65536,
        "max_window_layers": 4,       # 28
        "mlp_bias": False,
        "model_type": "smollm3",
        "no_rope_layer_interval": 4,
        "no_rope_layers": [1, 1, 1, 0],  # the first 4 of the 36
        "num_attention_heads": 4,     # 16
        "num_hidden_layers": 4,       # 36
        "num_key_value_heads": 2,     # 4
        "pad_token_id": 0,            # 128004
        "pretraining_tp": 2,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 5000000.0,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.54.0.dev0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 512,            # 128256
    })

FIXTURES["starcoder"] = dict(
    cls="GPTBigCodeForCausalLM", source="bigcode/gpt_bigcode-santacoder", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="float16", seed=124, norm="one",
    why="GPT-BigCode (StarCoder 1, SantaCoder): multi-query fused c_attn (n_embd + 2 head rows) as plain Linear "
        "layers, learned positions, LayerNorm biases, tied; head_count_kv written as 1 and feed-forward length as "
        "4 × n_embd by the converter; F16 (the real one is F32) and hidden 8 because of the 50257-token vocab",
    config={
        "activation_function": "gelu_fast",
        "architectures": ["GPTBigCodeForCausalLM"],
        "attention_softmax_in_fp32": True,
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,        # 49152 (GPT-2 ids)
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,        # 49152
        "inference_runner": 0,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "max_batch_size": None,
        "max_sequence_length": None,
        "model_type": "gpt_bigcode",
        "multi_query": True,
        "n_embd": 8,                  # 2048
        "n_head": 2,                  # 16
        "n_inner": 32,                # 8192
        "n_layer": 2,                 # 24
        "n_positions": 2048,
        "pad_key_length": True,
        "pre_allocate_kv_cache": False,
        "resid_pdrop": 0.1,
        "scale_attention_softmax_in_fp32": True,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "torch_dtype": "float32",
        "transformers_version": "4.27.0.dev0",
        "use_cache": True,
        "validate_runner_input": True,
        "vocab_size": 50257,          # 49280
    })

FIXTURES["olmo"] = dict(
    cls="OlmoForCausalLM", source="allenai/OLMo-1.7-7B-hf", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=125, norm="one",
    why="non-parametric LayerNorms (no norm tensors at all; the converter writes eps 1e-5), Q/K permuted like Llama, "
        "clip_qkv → clamp_kqv, untied, vocab padded past the tokenizer (50304 > 50257); BF16 (the real one is F32) "
        "and hidden 4 because of the vocab",
    config={
        "architectures": ["OlmoForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": None,
        "clip_qkv": 8.0,
        "eos_token_id": 50256,        # 50279
        "hidden_act": "silu",
        "hidden_size": 4,             # 4096
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 11008
        "max_position_embeddings": 4096,
        "model_type": "olmo",
        "num_attention_heads": 2,     # 32
        "num_hidden_layers": 2,       # 32
        "num_key_value_heads": 2,     # 32
        "pad_token_id": 1,
        "pretraining_tp": 1,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",    # float32
        "transformers_version": "4.40.0.dev0",
        "use_cache": True,
        "vocab_size": 50304,
    })

FIXTURES["commandr"] = dict(
    cls="CohereForCausalLM", source="CohereForAI/c4ai-command-r-v01", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="float16", seed=126, norm="one",
    why="parallel attention + MLP off one bias-free LayerNorm, logit_scale, tied by CohereConfig's default, "
        "context length from model_max_length (the converter prefers it to max_position_embeddings), rope scaling "
        "type none; hidden 8 because of the 50257-token vocab",
    config={
        "architectures": ["CohereForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 50256,        # 5 (GPT-2 ids)
        "eos_token_id": 50256,        # 255001
        "hidden_act": "silu",
        "hidden_size": 8,             # 8192
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 22528
        "layer_norm_eps": 1e-05,
        "logit_scale": 0.0625,
        "max_position_embeddings": 8192,
        "model_max_length": 131072,
        "model_type": "cohere",
        "num_attention_heads": 2,     # 64
        "num_hidden_layers": 2,       # 40
        "num_key_value_heads": 2,     # 64
        "pad_token_id": 0,
        "rope_scaling": None,
        "rope_theta": 8000000.0,
        "torch_dtype": "float16",
        "transformers_version": "4.38.2",
        "use_cache": True,
        "use_qk_norm": False,
        "vocab_size": 50257,          # 256000
    })

FIXTURES["exaone4"] = dict(
    cls="Exaone4ForCausalLM", source="LGAI-EXAONE/EXAONE-4.0-32B", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=127, norm="one",
    why="hybrid attention (3 sliding-window layers to 1 global: sliding_window + per-layer pattern from layer_types), "
        "q_norm/k_norm, post-norms only, llama3 rope scaling → rope_freqs (Exaone4Model's own factor default 16), "
        "GQA, vocab_size key; tied (the real one is untied) and hidden 8 because of the 50257-token vocab",
    config={
        "architectures": ["Exaone4ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 50256,        # 1 (GPT-2 ids)
        "eos_token_id": 50256,        # 361
        "head_dim": 4,                # 128
        "hidden_act": "silu",
        "hidden_size": 8,             # 5120
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 27392
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],  # 64 entries, LLLG
        "max_position_embeddings": 131072,
        "model_type": "exaone4",
        "num_attention_heads": 2,     # 40
        "num_hidden_layers": 4,       # 64
        "num_key_value_heads": 1,     # 8
        "pad_token_id": 0,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {
            "factor": 16.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "rope_theta": 1000000,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "tie_word_embeddings": True,  # false
        "torch_dtype": "bfloat16",
        "transformers_version": "4.54.0.dev0",
        "use_cache": True,
        "vocab_size": 50257,          # 102400
    })

FIXTURES["seedoss"] = dict(
    cls="SeedOssForCausalLM", source="ByteDance-Seed/Seed-OSS-36B-Instruct", tokenizer="gpt2",
    tokenizer_overrides={"tokenizer_config.json": GPT2_CLASS_OVERRIDE},
    dtype="bfloat16", seed=128, norm="one",
    why="TextModel unchanged: q/k/v biases without an output-projection bias, head_dim independent of hidden, GQA, "
        "rope_scaling of type default (no scaling keys), untied; hidden 4 because of the 50257-token vocab",
    config={
        "architectures": ["SeedOssForCausalLM"],
        "attention_bias": True,
        "attention_dropout": 0.1,
        "attention_out_bias": False,
        "bos_token_id": 50256,        # 0 (GPT-2 ids)
        "eos_token_id": 50256,        # 2
        "head_dim": 4,                # 128
        "hidden_act": "silu",
        "hidden_size": 4,             # 5120
        "initializer_range": 0.02,
        "intermediate_size": 32,      # 27648
        "max_position_embeddings": 524288,
        "mlp_bias": False,
        "model_type": "seed_oss",
        "num_attention_heads": 2,     # 80
        "num_hidden_layers": 2,       # 64
        "num_key_value_heads": 1,     # 8
        "pad_token_id": 1,
        "residual_dropout": 0.1,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {"rope_type": "default"},
        "rope_theta": 10000000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.55.0",
        "use_cache": True,
        "vocab_size": 50257,          # 155136
    })

# Fixtures of waves 3 and later: one file per family in fixtures/ beside this script, each adding
# FIXTURES entries in the form above (run in this module's namespace, in file-name order). Optional
# keys of an entry, for checkpoints save_pretrained does not write as the Hub has them:
#   post_save(root, spec)  rewrites the saved weights in the fixture folder (e.g. FP8 block-quantized
#                          or MXFP4 tensors as the real checkpoint stores them);
#   write_weights(root, spec)  writes the weights itself instead of transformers (remote-code models
#                          without a transformers class; needs logits_from=False or a reference);
#   logits_from            the fixture whose logits stand for this one (the same weights stored another
#                          way), or False for none; default: computed from this fixture's folder;
#   transformers_cls       transformers' class name when it is spelled otherwise than the Hub's
#                          architectures entry (cls);
#   logits_config(spec)    the transformers config to load the folder with when its config.json is the
#                          remote code's (keys transformers does not read);
#   logits_fn(root, spec, ids), prompt  our own reference forward pass (a remote-code model transformers has no
#                          class for) giving the logits of prompt["ids"], instead of transformers';
#   shards                 a list of tensor-name lists, one a shard, with None for the shard holding every
#                          tensor not named: the finished model.safetensors is split into
#                          model-0000i-of-0000n.safetensors + model.safetensors.index.json (the tensors' bytes
#                          unchanged), so that no file of a fixture whose vocabulary cannot shrink is over 5 MB;
#   reference(folder, spec, ids)  for a remote-code encoder transformers has no class for: our own PyTorch
#                          forward pass of the model, written from its architecture, returning the last
#                          hidden state [tokens, hidden] (float32) that stands for transformers' (with
#                          encoder= set, the pooled output is taken from it as for the others);
import glob as _glob
for _fn in sorted(_glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "*.py"))):
    with open(_fn, encoding="utf-8") as _f:
        exec(compile(_f.read(), _fn, "exec"), globals())

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path, obj, sort_keys=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n")


def is_norm(name):
    low = name.lower()
    return "norm" in low or ".ln_" in low or low.startswith("ln_") or "layernorm" in low


def is_embedding(name):
    return any(k in name for k in ("embed_tokens", "wte", "wpe", "embed_in", "word_embeddings",
                                   "position_embeddings", "token_type_embeddings"))


@torch.no_grad()
def init_weights(model, seed, norm_mode):
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if p.ndim >= 2:
            std = 1.0 if is_embedding(name) else p.shape[-1] ** -0.5
            p.copy_(r * std)
        elif name.endswith("weight") and is_norm(name):
            p.copy_((0.0 if norm_mode == "offset" else 1.0) + 0.1 * r)
        else:
            p.copy_(0.1 * r)


def install_tokenizers(shared, out):
    """Copy each tokenizer once into <out>/tokenizers/<name>/ (or write it: an entry's make(dst))."""
    for name, spec in TOKENIZERS.items():
        dst = os.path.join(out, "tokenizers", name)
        os.makedirs(dst, exist_ok=True)
        if spec.get("make"):
            spec["make"](dst)
            continue
        for f in spec["files"]:
            shutil.copyfile(os.path.join(shared, spec["from"], f),
                            os.path.join(dst, spec.get("rename", {}).get(f, f)))
        for f, obj in spec.get("write", {}).items():
            write_json(os.path.join(dst, f), obj)
    bert = os.path.join(out, "tokenizers", "bert-base-uncased")
    write_json(os.path.join(bert, "tokenizer_config.json"), BERT_TOKENIZER_CONFIG)
    write_json(os.path.join(bert, "special_tokens_map.json"), BERT_SPECIAL_TOKENS_MAP)


def fixture_files(out, name):
    """Names of the files of a fixture folder (relative), excluding our own outputs."""
    root = os.path.join(out, name)
    skip = {"manifest.json", "logits.f32", "logits.json"}
    files = []
    for dirpath, _, fnames in os.walk(root):
        for fn in fnames:
            rel = os.path.relpath(os.path.join(dirpath, fn), root)
            if rel in skip or rel.startswith(("expected-", "pytorch" + os.sep, "mmproj" + os.sep)):
                continue
            files.append(rel)
    return sorted(files)


def assemble(out, name, dst, weights="safetensors"):
    """Build the model folder the converter sees: fixture files (+ the PyTorch copy
    instead of the safetensors when weights == "pytorch"), then the tokenizer files,
    then the fixture's tokenizer overrides."""
    spec = FIXTURES[name]
    root = os.path.join(out, name)
    os.makedirs(dst, exist_ok=True)
    for rel in fixture_files(out, name):
        if weights == "pytorch" and rel.startswith("model") and "safetensors" in rel:
            continue
        if rel.startswith("tokenizer-override" + os.sep):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
        shutil.copyfile(os.path.join(root, rel), os.path.join(dst, rel))
    if weights == "pytorch":
        shutil.copyfile(os.path.join(root, "pytorch", "pytorch_model.bin"), os.path.join(dst, "pytorch_model.bin"))
    tok = spec["tokenizer"]
    for f in sorted(os.listdir(os.path.join(out, "tokenizers", tok))):
        shutil.copyfile(os.path.join(out, "tokenizers", tok, f), os.path.join(dst, f))
    for f in spec.get("tokenizer_overrides", {}):
        shutil.copyfile(os.path.join(root, "tokenizer-override", f), os.path.join(dst, f))


def check_prompt(tokdir, tok):
    """Assert that the fixed prompt ids are what the tokenizer gives for its text."""
    p = PROMPTS[tok]
    if tok == "tok512":
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=os.path.join(tokdir, "tokenizer.model"))
        ids = [sp.bos_id()] + sp.encode(p["text"])
    elif tok == "t5":
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=os.path.join(tokdir, "spiece.model"))
        ids = sp.encode(p["text"]) + [sp.eos_id()]
    elif tok == "xlmr":
        from transformers import XLMRobertaTokenizer
        ids = XLMRobertaTokenizer.from_pretrained(tokdir)(p["text"]).input_ids
    elif tok == "gpt2":
        from tokenizers import Tokenizer
        ids = Tokenizer.from_file(os.path.join(tokdir, "tokenizer.json")).encode(p["text"]).ids
    else:
        from transformers import BertTokenizer
        ids = BertTokenizer(os.path.join(tokdir, "vocab.txt"), do_lower_case=True).encode(p["text"])
    assert ids == p["ids"], (tok, ids, p["ids"])
    return p


def build(out, name):
    spec = FIXTURES[name]
    root = os.path.join(out, name)
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    write_json(os.path.join(root, "config.json"), spec["config"], sort_keys=True)
    for rel, obj in spec.get("extra_files", {}).items():
        write_json(os.path.join(root, rel), obj)
    for rel, obj in spec.get("tokenizer_overrides", {}).items():
        write_json(os.path.join(root, "tokenizer-override", rel), obj)

    if spec.get("write_weights"):
        # A remote-code model transformers has no class for: the fixture file writes the
        # safetensors with the real tensor names itself (logits_from=False then).
        spec["write_weights"](root, spec)
    else:
        cfg = transformers.AutoConfig.from_pretrained(root)
        model_cls = getattr(transformers, spec.get("transformers_cls", spec["cls"]))
        model = model_cls(cfg)
        init_weights(model, spec["seed"], spec["norm"])
        model = model.to(DTYPES[spec["dtype"]])

        with tempfile.TemporaryDirectory() as tmp:
            kw = {}
            if spec.get("shard_size"):
                kw["max_shard_size"] = spec["shard_size"]
            model.save_pretrained(tmp, **kw)
            if spec.get("fused_experts"):
                # save_pretrained writes the per-expert layout of the Hub checkpoints; this writes the
                # in-memory one (tensors contiguous, no tied parameters in these models).
                from safetensors.torch import save_file
                save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                          os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
            for fn in sorted(os.listdir(tmp)):
                if fn.startswith("model") and (fn.endswith(".safetensors") or fn.endswith(".index.json")):
                    shutil.copyfile(os.path.join(tmp, fn), os.path.join(root, fn))
                elif fn == "generation_config.json":
                    shutil.copyfile(os.path.join(tmp, fn), os.path.join(root, fn))

    if spec.get("post_save"):
        spec["post_save"](root, spec)

    if spec.get("shards"):
        split_checkpoint(root, spec["shards"])

    if spec.get("pytorch_copy"):
        write_pytorch_copy(root)

    if spec.get("logits_from") is None:
        write_logits(out, name)
    write_manifest(out, name)


def split_checkpoint(root, shards):
    """Splits root/model.safetensors into the shards a spec's `shards` names (see above) and writes the index
    save_pretrained would (metadata total_parameters / total_size, weight_map sorted)."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(root, "model.safetensors")
    sd = load_file(path)
    named = {k for group in shards if group is not None for k in group}
    missing = named - set(sd)
    assert not missing, ("shards name tensors the checkpoint lacks", sorted(missing))
    weight_map = {}
    for i, group in enumerate(shards):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        keys = sorted(group if group is not None else set(sd) - named)
        save_file({k: sd[k].contiguous() for k in keys}, os.path.join(root, fn), metadata={"format": "pt"})
        weight_map.update((k, fn) for k in keys)
    os.remove(path)
    meta = OrderedDict([("total_parameters", sum(v.numel() for v in sd.values())),
                        ("total_size", sum(v.numel() * v.element_size() for v in sd.values()))])
    write_json(os.path.join(root, "model.safetensors.index.json"),
               OrderedDict([("metadata", meta), ("weight_map", OrderedDict(sorted(weight_map.items())))]))


def write_pytorch_copy(root):
    """pytorch/pytorch_model.bin: the same tensors as model.safetensors, torch.save
    zip format, keys in the safetensors file's order (so that the converter, which
    follows the file's key order, writes the same GGUF)."""
    tensors = OrderedDict()
    with safe_open(os.path.join(root, "model.safetensors"), "pt") as f:
        for k in f.keys():
            tensors[k] = f.get_tensor(k)
    os.makedirs(os.path.join(root, "pytorch"), exist_ok=True)
    torch.save(tensors, os.path.join(root, "pytorch", "pytorch_model.bin"))


@torch.no_grad()
def write_logits(out, name):
    spec = FIXTURES[name]
    root = os.path.join(out, name)
    tok = spec["tokenizer"]
    if spec.get("logits_fn"):
        # A remote-code model with our own reference forward pass (logits_fn(root, spec, ids) → [n, vocab]).
        prompt = spec["prompt"]
        full = spec["logits_fn"](root, spec, prompt["ids"]).numpy()
        return write_logits_file(root, spec, prompt, "logits", full)
    prompt = check_prompt(os.path.join(out, "tokenizers", tok), tok)
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, name)
        assemble(out, name, d)
        ids = torch.tensor([prompt["ids"]])
        if spec.get("reference"):
            hidden = spec["reference"](d, spec, prompt["ids"])
        else:
            model_cls = getattr(transformers, spec["cls"])
            kw = {"config": spec["logits_config"](spec)} if spec.get("logits_config") else {}
            model = model_cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager", **kw)
            model.eval()
            res = model(input_ids=ids)
            if spec.get("encoder"):
                hidden = model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0]
    if spec.get("encoder"):
        kind = "last_hidden_state"
        full = hidden.float().numpy()
    elif getattr(res, "logits", None) is None:  # an encoder without a head (BertModel, ModernBertModel …)
        kind = "last_hidden_state"
        full = res.last_hidden_state[0].float().numpy()
    else:
        kind = "logits"
        # a sequence classifier's logits are one row of scores per sequence
        full = (res.logits if res.logits.ndim == 2 else res.logits[0]).float().numpy()
    scores = res.logits[0].float().numpy() if spec.get("encoder") == "rank" else None
    write_logits_file(root, spec, prompt, kind, full, scores)


def write_logits_file(root, spec, prompt, kind, full, scores=None):
    """logits.f32 + logits.json of a fixture from the full [n, width] output."""
    full = np.ascontiguousarray(full, dtype="<f4")
    n, width = full.shape
    if kind == "logits" and width > FULL_LOGITS_MAX_VOCAB:
        positions = [n - 1]
    else:
        positions = list(range(n))
    stored = np.ascontiguousarray(full[positions], dtype="<f4")
    stored.tofile(os.path.join(root, "logits.f32"))
    info = OrderedDict()
    info["what"] = kind
    info["prompt_text"] = prompt["text"]
    info["prompt_ids"] = prompt["ids"]
    info["full_shape"] = [n, width]
    info["positions"] = positions
    info["shape"] = list(stored.shape)
    info["dtype"] = "float32 little-endian, row-major [len(positions), full_shape[1]]"
    info["full_sha256"] = hashlib.sha256(full.tobytes()).hexdigest()
    info["argmax"] = [int(i) for i in full.argmax(axis=1)]
    top = []
    for row in full:
        idx = np.argsort(-row, kind="stable")[:5]
        top.append({"ids": [int(i) for i in idx], "values": [float(row[i]) for i in idx]})
    info["top5"] = top
    info["max_abs"] = float(np.abs(full).max())
    if spec.get("encoder"):
        # The pooled embedding (sentence-transformers pooling) or a classifier's scores, for verify.
        pool = spec["encoder"]
        info["pooling"] = pool
        if pool == "cls":
            info["pooled"] = [float(v) for v in full[0]]
        elif pool == "mean":
            info["pooled"] = [float(v) for v in full.astype(np.float64).mean(axis=0).astype(np.float32)]
        elif pool == "rank":
            info["pooled"] = [float(v) for v in scores]
    if spec.get("logits_fn"):
        info["computed_with"] = OrderedDict([
            ("torch", torch.__version__),
            ("load", "%s (ours, float64, from the math of llama.cpp's graph)" % spec["logits_fn"].__name__)])
    elif spec.get("reference"):
        info["computed_with"] = OrderedDict([
            ("torch", torch.__version__),
            ("load", "%s(folder, spec, ids) in testdata/gen/fixtures/ (our PyTorch forward pass of the remote-code "
                     "model, float32)" % spec["reference"].__name__),
        ])
    else:
        info["computed_with"] = OrderedDict([
            ("transformers", transformers.__version__), ("torch", torch.__version__),
            ("load", "%s.from_pretrained(folder, dtype=torch.float32, attn_implementation='eager'%s)"
             % (spec["cls"], ", config=" + spec["logits_config"].__name__ + "(spec)" if spec.get("logits_config") else "")),
        ])
    write_json(os.path.join(root, "logits.json"), info)


def write_manifest(out, name):
    spec = FIXTURES[name]
    root = os.path.join(out, name)
    m = OrderedDict()
    m["fixture"] = name
    m["dir_name"] = name
    m["architecture"] = spec["cls"]
    m["config_from"] = spec["source"]
    m["what_it_exercises"] = spec["why"]
    m["storage_dtype"] = spec["dtype"]
    m["seed"] = spec["seed"]
    m["norm_init"] = spec["norm"]
    m["tokenizer"] = spec["tokenizer"]
    m["tokenizer_overrides"] = ["tokenizer-override/" + f for f in spec.get("tokenizer_overrides", {})]
    m["files"] = OrderedDict((rel, sha256_file(os.path.join(root, rel))) for rel in fixture_files(out, name))
    if spec.get("pytorch_copy"):
        m["pytorch_copy"] = OrderedDict([("file", "pytorch/pytorch_model.bin"),
                                         ("sha256", sha256_file(os.path.join(root, "pytorch", "pytorch_model.bin")))])
    m["assemble"] = ("copy every file of `files` except tokenizer-override/*, then every file of "
                     "tokenizers/<tokenizer>/, then each tokenizer-override/<f> as <f>, into a folder named dir_name"
                     + ("; for the PyTorch variant use pytorch/pytorch_model.bin instead of model.safetensors"
                        if spec.get("pytorch_copy") else ""))
    write_json(os.path.join(root, "manifest.json"), m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="testdata/convert")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"),
                    help="the shared/ reference data folder (for the tokenizer files)")
    ap.add_argument("--only", nargs="*", help="fixture names (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    install_tokenizers(args.shared, args.out)
    for name in (args.only or list(FIXTURES)):
        print("fixture", name, flush=True)
        build(args.out, name)


if __name__ == "__main__":
    main()
