"""Dump gguf-py's tensor-name tables as data for arch/tensornames.json.

Run with llama.cpp's gguf-py (0.19.0, llama.cpp 0c1e570) importable:
    PYTHONPATH=<llama.cpp>/gguf-py python arch/gen/dump_tensor_names.py > arch/tensornames.json
    PYTHONPATH=<llama.cpp>/gguf-py python arch/gen/dump_tensor_names.py clip > arch/tensornames_clip.json
(the second, the multimodal projectors' table, is kept apart).

For each GGUF architecture ggufkit supports, it writes the mapping from a
Hugging Face tensor-name stem (without .weight/.bias; "{bid}" marks the block
number) to the tensor kind and its GGUF name stem, resolved the way
gguf.TensorNameMap builds its dictionary (later keys win), plus the list of
tensor kinds the architecture allows. Only facts (names) are exported.
"""
import json
import sys

import gguf
from gguf.tensor_mapping import TensorNameMap

ARCHS = ["llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma", "gemma2", "gemma3",
         "phi3", "gpt2", "gptneox", "starcoder2", "bert",
         "phi2", "falcon", "stablelm", "olmo2", "granite", "smollm3", "starcoder", "olmo", "command-r", "exaone4", "seed_oss",
         # waves 3 and 4 (issues 15 and 16)
         "gemma-embedding", "gemma3n", "gemma4", "qwen3next", "qwen35", "qwen35moe", "qwen2vl", "qwen3vl", "qwen3vlmoe",
         "deepseek", "deepseek2", "deepseek32", "deepseek4", "gpt-oss", "chatglm", "glm4", "glm4moe", "llama4", "mistral3",
         "minimax-m2", "lfm2", "lfm2moe", "ernie4_5", "ernie4_5-moe", "hunyuan-dense", "hunyuan-moe", "olmoe", "granitemoe",
         "cohere2", "apertus", "arcee", "dots1", "smallthinker", "internlm2",
         "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert", "eurobert", "neo-bert", "t5",
         "t5encoder", "llama-embed", "mamba", "mamba2", "jamba", "granitehybrid", "nemotron_h", "falcon-h1", "rwkv6",
         "rwkv6qwen2", "rwkv7", "arwkv7", "kimi-linear", "mistral4", "nemotron_h_moe",
         "bloom", "mpt", "jais2", "nemotron", "minicpm", "minicpm3", "orion", "xverse", "baichuan", "plm",
         "phimoe", "dbrx", "afmoe", "cohere2moe", "arctic", "grok", "bailingmoe2",
         "codeshell", "refact", "openelm", "jais", "deci", "pangu-embedded",
         "granite_swa", "nanbeige", "mellum", "maincoder"]

ARCHS = sys.argv[1:] or ARCHS

names = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
out = {"source": "gguf-py 0.19.0 (llama.cpp 0c1e570) gguf/tensor_mapping.py, gguf/constants.py", "archs": {}}
for arch_name in ARCHS:
    arch = names[arch_name]
    allowed = gguf.MODEL_TENSORS[arch]
    mapping = {}
    for tensor, keys in TensorNameMap.mappings_cfg.items():
        if tensor not in allowed:
            continue
        tname = gguf.TENSOR_NAMES[tensor]
        mapping[tname] = (tensor.name, tname)
        for key in keys:
            mapping[key] = (tensor.name, tname)
    block = dict(TensorNameMap.block_mappings_cfg)
    block.update(TensorNameMap.arch_block_mappings_cfg.get(arch, {}))
    for tensor, keys in block.items():
        if tensor not in allowed:
            continue
        tname = gguf.TENSOR_NAMES[tensor]
        mapping[tname] = (tensor.name, tname)
        for key in keys:
            mapping[key] = (tensor.name, tname)
    out["archs"][arch_name] = {
        "tensors": [t.name for t in allowed],
        "map": [[k, v[0], v[1]] for k, v in mapping.items()],
    }
out["kinds"] = {t.name: gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSOR if t in gguf.TENSOR_NAMES}
json.dump(out, sys.stdout, indent=0, sort_keys=False)
sys.stdout.write("\n")
