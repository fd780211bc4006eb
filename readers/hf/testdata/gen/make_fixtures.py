#!/usr/bin/env python3
"""Writes the small model folders readers/hf's tests open, and expected.json.

- tiny-pt/: a Llama-style config.json and a pytorch_model.bin (torch.save zip) with F32, F16 and BF16 tensors,
  plus tokenizer_config.json — the PyTorch fallback when a folder has no safetensors.
- meta/: Meta's original layout: params.json (vocab_size -1, multiple_of and ffn_dim_multiplier) and
  consolidated.00.pth holding Meta-named tensors whose shapes follow Meta's FeedForward formula.
- multimodal/: a config.json whose language model sits under text_config (values differ from the top level).

expected.json: per folder, each tensor (name, dtype, shape, sha256_f32le = sha256 of torch's `.to(float32)` values,
little-endian, row-major) in the order the reader must list them (torch.load's dict order), and the expected Config
accessor values.

Usage (from readers/hf/testdata):  python gen/make_fixtures.py     Needs: torch (pip). Deterministic (seeded).
"""

import hashlib
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)
NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def digest(t):
    return hashlib.sha256(t.to(torch.float32).contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def describe(sd):
    return [{"name": k, "dtype": NAMES[v.dtype], "shape": list(v.shape), "sha256_f32le": digest(v)} for k, v in sd.items()]


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def main():
    g = torch.Generator().manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    expected = {"generator": "gen/make_fixtures.py", "torch": torch.__version__}

    # tiny-pt: HF layout, PyTorch zip checkpoint
    d = os.path.join(TESTDATA, "tiny-pt")
    os.makedirs(d, exist_ok=True)
    sd = {
        "model.embed_tokens.weight": rnd(32, 16).to(torch.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": rnd(16, 16).to(torch.float16),
        "model.norm.weight": rnd(16),
        "lm_head.weight": rnd(32, 16),
    }
    torch.save(sd, os.path.join(d, "pytorch_model.bin"))
    write_json(os.path.join(d, "config.json"), {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48, "vocab_size": 32,
        "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "max_position_embeddings": 128, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": None,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    })
    write_json(os.path.join(d, "tokenizer_config.json"), {"add_bos_token": True, "model_max_length": 128})
    expected["tiny-pt"] = {"format": "pytorch-zip", "tensors": describe(sd)}

    # meta: params.json + consolidated.00.pth
    d = os.path.join(TESTDATA, "meta")
    os.makedirs(d, exist_ok=True)
    dim, multiple_of, mult = 64, 32, 1.3
    hidden = int(2 * (4 * dim) / 3)
    hidden = int(mult * hidden)
    hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
    sd = {
        "tok_embeddings.weight": rnd(40, dim).to(torch.bfloat16),
        "layers.0.attention.wq.weight": rnd(dim, dim).to(torch.bfloat16),
        "layers.0.feed_forward.w1.weight": rnd(hidden, dim).to(torch.bfloat16),
        "norm.weight": rnd(dim).to(torch.bfloat16),
    }
    torch.save(sd, os.path.join(d, "consolidated.00.pth"))
    write_json(os.path.join(d, "params.json"), {
        "dim": dim, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "vocab_size": -1, "multiple_of": multiple_of,
        "ffn_dim_multiplier": mult, "norm_eps": 1e-05, "rope_theta": 500000.0, "use_scaled_rope": True,
    })
    expected["meta"] = {"format": "meta-consolidated", "tensors": describe(sd), "intermediate_size": hidden, "vocab_size": 40}

    # multimodal: config only
    d = os.path.join(TESTDATA, "multimodal")
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, "config.json"), {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
        "hidden_size": 1, "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
                                          "rope_theta": 1000000.0, "rms_norm_eps": 1e-06},
        "vision_config": {"hidden_size": 1152},
    })

    write_json(os.path.join(TESTDATA, "expected.json"), expected)


if __name__ == "__main__":
    main()
