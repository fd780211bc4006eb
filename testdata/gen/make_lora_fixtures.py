#!/usr/bin/env python3
"""Make the PEFT LoRA adapters of testdata/lora from the convert fixtures' tiny models.

For each spec below: load the base fixture (testdata/convert/<base>) with transformers, wrap it with
PEFT's get_peft_model(LoraConfig(r, lora_alpha, target_modules, init_lora_weights=False)) so that
lora_B is random and non-zero, seeded, and save_pretrained it into testdata/lora/<name>/
(adapter_config.json, adapter_model.safetensors, README.md). base_model_name_or_path is set to the
base fixture's config_from so that no local path leaks into the files; a spec with "pytorch"
saves adapter_model.bin instead of adapter_model.safetensors. A spec with "experts" also
adds LoRA pairs for the per-expert linear layers in the layout older transformers gave them
(…experts.<e>.<proj>.lora_A.weight): transformers 5 fuses a MoE's experts into 3-D parameters,
which PEFT's target_modules cannot reach. A manifest.json records the spec and the files' sha256.

  PYTHONPATH=<peft target> python testdata/gen/make_lora_fixtures.py --convert testdata/convert \
      --out testdata/lora
Needs torch, transformers, safetensors and peft (made with peft 0.21.2, transformers 5.25).
"""
import argparse
import hashlib
import json
import os

import torch
from safetensors.torch import load_file, save_file

SPECS = [
    {"name": "llama1-lora", "base": "llama1", "r": 8, "alpha": 16, "seed": 501,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
     "what": "Q/K rows permuted in lora_b, every linear layer, rank 8 (q8_0: lora_b falls back to F16)"},
    {"name": "qwen3-lora", "base": "qwen3", "r": 16, "alpha": 32, "seed": 502,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
     "what": "no permutation, attention and MLP"},
    {"name": "gemma3-lora", "base": "gemma3", "r": 32, "alpha": 8, "seed": 503,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
     "what": "rank 32: lora_b rows are whole Q8_0 blocks"},
    {"name": "phi3-lora", "base": "phi3", "r": 8, "alpha": 8, "seed": 504,
     "targets": ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"],
     "what": "fused qkv_proj and gate_up_proj"},
    {"name": "mixtral-lora", "base": "mixtral", "r": 8, "alpha": 16, "seed": 505,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
     "experts": {"prefix": "block_sparse_moe.experts", "count_key": "num_local_experts", "projs": ["w1", "w2", "w3"]},
     "what": "Q/K permutation and experts stacked into 3-D lora_a/lora_b"},
    {"name": "qwen2-lora-bin", "base": "qwen2", "r": 4, "alpha": 4, "seed": 506, "pytorch": True,
     "targets": ["q_proj", "v_proj"],
     "what": "adapter_model.bin (safe_serialization=False), attention biases left to the base"},
    {"name": "gemma2-lora", "base": "gemma2", "r": 16, "alpha": 32, "seed": 507,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
     "what": "Gemma 2 (soft-capping base, no permutation)"},
    {"name": "qwen3moe-lora", "base": "qwen3moe", "r": 8, "alpha": 16, "seed": 508,
     "targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
     "experts": {"prefix": "mlp.experts", "count_key": "num_experts", "inter_key": "moe_intermediate_size",
                 "projs": ["gate_proj", "up_proj", "down_proj"]},
     "what": "Qwen3-MoE experts stacked, head_dim larger than hidden/heads"},
    {"name": "falcon-lora", "base": "falcon", "r": 8, "alpha": 16, "seed": 520, "targets": "all-linear",
     "what": "fused query_key_value reordered per KV group"},
    {"name": "gptneox-lora", "base": "gptneox", "r": 8, "alpha": 16, "seed": 521, "targets": "all-linear",
     "what": "fused query_key_value"},
    {"name": "starcoder2-lora", "base": "starcoder2", "r": 8, "alpha": 16, "seed": 522, "targets": "all-linear",
     "what": "biased linear layers"},
    {"name": "olmo2-lora", "base": "olmo2", "r": 8, "alpha": 16, "seed": 523, "targets": "all-linear",
     "what": "Q/K norms on the base"},
    {"name": "glm4-lora", "base": "glm4", "r": 8, "alpha": 16, "seed": 524, "targets": "all-linear",
     "what": "fused gate_up_proj"},
    {"name": "phi2-lora", "base": "phi2", "r": 8, "alpha": 16, "seed": 525, "targets": "all-linear",
     "what": "Phi-2's dense/fc1/fc2"},
    {"name": "granite-lora", "base": "granite", "r": 8, "alpha": 16, "seed": 526, "targets": "all-linear",
     "what": "Granite's scaled base"},
    {"name": "qwen2moe-lora", "base": "qwen2moe", "r": 8, "alpha": 16, "seed": 527, "targets": "all-linear",
     "what": "shared expert and its gate (the routed experts are fused 3-D parameters PEFT leaves alone)"},
    {"name": "llama4text-lora", "base": "llama4text", "r": 8, "alpha": 16, "seed": 528, "targets": "all-linear",
     "what": "Llama 4 text: Q/K not permuted"},
    {"name": "exaone4-lora", "base": "exaone4", "r": 8, "alpha": 16, "seed": 529, "targets": "all-linear",
     "what": "EXAONE 4"},
    {"name": "cohere2-lora", "base": "cohere2", "r": 8, "alpha": 16, "seed": 530, "targets": "all-linear",
     "what": "Cohere 2"},
    {"name": "ernie4_5-lora", "base": "ernie4_5", "r": 8, "alpha": 16, "seed": 531, "targets": "all-linear",
     "what": "ERNIE 4.5"},
    {"name": "smollm3-lora", "base": "smollm3", "r": 8, "alpha": 16, "seed": 532, "targets": "all-linear",
     "what": "SmolLM3"},
    {"name": "gpt2-lora", "base": "gpt2", "r": 8, "alpha": 16, "seed": 533, "targets": "all-linear",
     "what": "Conv1D weights: the converter's transpose swaps the factors, transposed"},
    {"name": "llama1-alora", "base": "llama1", "r": 8, "alpha": 8, "seed": 509,
     "targets": ["q_proj", "k_proj", "v_proj"], "alora_invocation_tokens": [3, 141, 59, 26],
     "what": "an activated LoRA: adapter.alora.invocation_tokens after the alpha"},
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def add_experts(model, spec, path, gen):
    """Add per-expert LoRA pairs for the base model's expert weights (w = B @ A)."""
    cfg = model.config
    n = getattr(cfg, spec["experts"]["count_key"])
    inter = getattr(cfg, spec["experts"].get("inter_key", "intermediate_size"))
    hidden = cfg.hidden_size
    r = spec["r"]
    tensors = load_file(path)
    for layer in range(cfg.num_hidden_layers):
        for e in range(n):
            for proj in spec["experts"]["projs"]:
                rows, cols = (hidden, inter) if proj in ("w2", "down_proj") else (inter, hidden)
                base = f"base_model.model.model.layers.{layer}.{spec['experts']['prefix']}.{e}.{proj}"
                tensors[base + ".lora_A.weight"] = (torch.randn(r, cols, generator=gen) / cols ** 0.5).contiguous()
                tensors[base + ".lora_B.weight"] = (torch.randn(rows, r, generator=gen) / r ** 0.5).contiguous()
    save_file(tensors, path, metadata={"format": "pt"})


def make(spec, convert_dir, out_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_dir = os.path.join(convert_dir, spec["base"])
    with open(os.path.join(base_dir, "manifest.json")) as f:
        base_manifest = json.load(f)
    torch.manual_seed(spec["seed"])
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model.config._name_or_path = base_manifest["config_from"]
    model.name_or_path = base_manifest["config_from"]
    extra = {"alora_invocation_tokens": spec["alora_invocation_tokens"]} if "alora_invocation_tokens" in spec else {}
    cfg = LoraConfig(r=spec["r"], lora_alpha=spec["alpha"], target_modules=spec["targets"],
                     init_lora_weights=False, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM", **extra)
    peft_model = get_peft_model(model, cfg)
    peft_model.peft_config["default"].base_model_name_or_path = base_manifest["config_from"]
    dst = os.path.join(out_dir, spec["name"])
    peft_model.save_pretrained(dst, safe_serialization=not spec.get("pytorch", False))
    if "experts" in spec:
        gen = torch.Generator().manual_seed(spec["seed"])
        add_experts(model, spec, os.path.join(dst, "adapter_model.safetensors"), gen)
    files = {n: sha256_file(os.path.join(dst, n)) for n in sorted(os.listdir(dst)) if n != "manifest.json"
             and not n.startswith("expected-")}
    manifest = {"fixture": spec["name"], "base": spec["base"], "base_config_from": base_manifest["config_from"],
                "r": spec["r"], "lora_alpha": spec["alpha"], "seed": spec["seed"],
                "target_modules": spec["targets"], "experts": spec.get("experts"),
                "what_it_exercises": spec["what"], "files": files}
    with open(os.path.join(dst, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print("wrote", dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convert", required=True, help="testdata/convert")
    ap.add_argument("--out", required=True, help="testdata/lora")
    ap.add_argument("--only", nargs="*", help="fixture names to make (default: all)")
    args = ap.parse_args()
    for spec in SPECS:
        if args.only and spec["name"] not in args.only:
            continue
        make(spec, args.convert, args.out)


if __name__ == "__main__":
    main()
