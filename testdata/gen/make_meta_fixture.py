#!/usr/bin/env python3
"""Make testdata/meta: stories260K in Meta's original checkpoint layout.

  python make_meta_fixture.py <repo root>

From testdata/stories260K/source (Hugging Face layout, F32, tied embeddings)
it writes two folders, both named stories260K (the converter's default
general.name is the folder's name):

  testdata/meta/single/stories260K/  consolidated.00.pth
  testdata/meta/split/stories260K/   consolidated.00.pth, consolidated.01.pth

each with params.json and tokenizer.model (llama2.c's tok512), and

  testdata/meta/moe/mixtral-tiny/    consolidated.00.pth

a random-weight mixture of experts in the layout of Mistral's original
Mixtral release (params.json with "moe", per-expert w1/w2/w3 and a router
feed_forward.gate per layer, one file), with the same tokenizer.model.
The stories260K tensors:

  - Meta's names (tok_embeddings, layers.N.attention.wq …, norm, output,
    rope.freqs) in the order of Meta's llama/model.py state_dict;
  - the Hugging Face Q/K permutation undone (Meta's own rotary order);
  - the embeddings untied: output.weight is a copy of tok_embeddings.weight;
  - only the first 3 of the 5 layers, and the feed-forward width cut from 172
    to its first 160 units, so that every row is whole Q8_0 blocks and both
    folders together stay under 1 MB;
  - stored as BF16, as Meta ships its checkpoints (rope.freqs F32);
  - in split/, cut into two model-parallel ranks the way Meta's
    fairscale layers cut them: tok_embeddings, attention.wo and
    feed_forward.w2 by columns (ParallelEmbedding / RowParallelLinear), the
    other matrices by rows (ColumnParallelLinear), 1-D tensors replicated.
"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file

root = sys.argv[1]
src = os.path.join(root, "testdata", "stories260K", "source")
out = os.path.join(root, "testdata", "meta")

N_LAYERS = 3
N_FF = 160
with open(os.path.join(src, "config.json")) as f:
    cfg = json.load(f)
dim = cfg["hidden_size"]
n_heads = cfg["num_attention_heads"]
n_kv = cfg["num_key_value_heads"]
head_dim = dim // n_heads

hf = load_file(os.path.join(src, "model.safetensors"))


def unpermute(w, heads):
    # inverse of transformers' convert_llama_weights_to_hf.py permute
    rows, cols = w.shape
    return w.view(heads, 2, rows // heads // 2, cols).transpose(1, 2).reshape(rows, cols)


meta = {}
meta["tok_embeddings.weight"] = hf["model.embed_tokens.weight"]
for i in range(N_LAYERS):
    p = f"model.layers.{i}."
    meta[f"layers.{i}.attention.wq.weight"] = unpermute(hf[p + "self_attn.q_proj.weight"], n_heads)
    meta[f"layers.{i}.attention.wk.weight"] = unpermute(hf[p + "self_attn.k_proj.weight"], n_kv)
    meta[f"layers.{i}.attention.wv.weight"] = hf[p + "self_attn.v_proj.weight"]
    meta[f"layers.{i}.attention.wo.weight"] = hf[p + "self_attn.o_proj.weight"]
    meta[f"layers.{i}.feed_forward.w1.weight"] = hf[p + "mlp.gate_proj.weight"][:N_FF]
    meta[f"layers.{i}.feed_forward.w2.weight"] = hf[p + "mlp.down_proj.weight"][:, :N_FF]
    meta[f"layers.{i}.feed_forward.w3.weight"] = hf[p + "mlp.up_proj.weight"][:N_FF]
    meta[f"layers.{i}.attention_norm.weight"] = hf[p + "input_layernorm.weight"]
    meta[f"layers.{i}.ffn_norm.weight"] = hf[p + "post_attention_layernorm.weight"]
meta["norm.weight"] = hf["model.norm.weight"]
meta["output.weight"] = hf["model.embed_tokens.weight"].clone()
meta = {k: v.to(torch.bfloat16) for k, v in meta.items()}
# Meta's checkpoints carry the rotary frequencies (unused by converters).
theta = cfg["rope_theta"]
meta["rope.freqs"] = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))

params = {"dim": dim, "multiple_of": 32, "n_heads": n_heads, "n_kv_heads": n_kv,
          "n_layers": N_LAYERS, "norm_eps": cfg["rms_norm_eps"], "vocab_size": -1}


def column_split(name):
    return name.startswith("tok_embeddings.") or name.endswith((".attention.wo.weight", ".feed_forward.w2.weight"))


def shard(t, name, rank, n):
    if n == 1 or t.dim() == 1:
        return t.clone()
    axis = 1 if column_split(name) else 0
    return t.chunk(n, dim=axis)[rank].clone().contiguous()


for layout, n in (("single", 1), ("split", 2)):
    d = os.path.join(out, layout, "stories260K")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for rank in range(n):
        torch.save({k: shard(v, k, rank, n) for k, v in meta.items()}, os.path.join(d, f"consolidated.{rank:02d}.pth"))
    with open(os.path.join(d, "params.json"), "w") as f:
        json.dump(params, f)
    shutil.copyfile(os.path.join(src, "tokenizer.model"), os.path.join(d, "tokenizer.model"))


# The mixture of experts: shrunken Mixtral-8x7B (dim 4096 → 32, 32 layers
# → 2, 32/8 heads → 4/2, 8 experts of 14336 → 4 of 32), seed 120, BF16.
g = torch.Generator().manual_seed(120)
M_DIM, M_LAYERS, M_HEADS, M_KV, M_EXPERTS, M_FF, M_VOCAB = 32, 2, 4, 2, 4, 32, 512
m_head = M_DIM // M_HEADS


def rnd(*shape):
    return (torch.randn(*shape, generator=g) * 0.1).to(torch.bfloat16)


moe = {"tok_embeddings.weight": rnd(M_VOCAB, M_DIM), "norm.weight": (1 + rnd(M_DIM)).to(torch.bfloat16),
       "output.weight": rnd(M_VOCAB, M_DIM)}
for i in range(M_LAYERS):
    p = f"layers.{i}."
    moe[p + "attention.wq.weight"] = rnd(M_HEADS * m_head, M_DIM)
    moe[p + "attention.wk.weight"] = rnd(M_KV * m_head, M_DIM)
    moe[p + "attention.wv.weight"] = rnd(M_KV * m_head, M_DIM)
    moe[p + "attention.wo.weight"] = rnd(M_DIM, M_HEADS * m_head)
    moe[p + "feed_forward.gate.weight"] = rnd(M_EXPERTS, M_DIM)
    for e in range(M_EXPERTS):
        moe[p + f"feed_forward.experts.{e}.w1.weight"] = rnd(M_FF, M_DIM)
        moe[p + f"feed_forward.experts.{e}.w2.weight"] = rnd(M_DIM, M_FF)
        moe[p + f"feed_forward.experts.{e}.w3.weight"] = rnd(M_FF, M_DIM)
    moe[p + "attention_norm.weight"] = (1 + rnd(M_DIM)).to(torch.bfloat16)
    moe[p + "ffn_norm.weight"] = (1 + rnd(M_DIM)).to(torch.bfloat16)
d = os.path.join(out, "moe", "mixtral-tiny")
shutil.rmtree(d, ignore_errors=True)
os.makedirs(d)
torch.save(moe, os.path.join(d, "consolidated.00.pth"))
with open(os.path.join(d, "params.json"), "w") as f:
    json.dump({"dim": M_DIM, "n_layers": M_LAYERS, "head_dim": m_head, "hidden_dim": M_FF, "n_heads": M_HEADS,
               "n_kv_heads": M_KV, "norm_eps": 1e-05, "vocab_size": M_VOCAB,
               "moe": {"num_experts_per_tok": 2, "num_experts": M_EXPERTS}}, f)
shutil.copyfile(os.path.join(src, "tokenizer.model"), os.path.join(d, "tokenizer.model"))
