#!/usr/bin/env python3
"""Write readers/pytorch's generated fixtures and the digests the Go tests compare against.

Usage:  python make_testdata.py [OUT_DIR]     (OUT_DIR defaults to ../generated next to this script)

Needs pip packages only: torch (CPU is enough), numpy, safetensors. Deterministic (torch.manual_seed) except the bytes
of legacy-format files, whose storage keys are object ids; their tensors are always the same.

What it writes (all tiny):
  tiny/       one state dict with f32 / f16 / bf16 / f64 / int64 tensors, a tied (shared-storage) pair, a transposed
              view, a strided slice and an expanded view, saved as:
                zip.bin         torch.save (zip format, stored entries)
                legacy.bin      torch.save(_use_new_zipfile_serialization=False)
                deflated.bin    zip.bin with every entry re-compressed with DEFLATE (same names, same order)
                bigendian.bin   zip.bin with byteorder "big" and every storage byte-swapped per element
                model.safetensors   the same values (views made contiguous, tied tensor cloned)
  wrapped.pt  {"model": state_dict, "step": 7} whose zip top folder ("better_tiny_checkpoint/") is not the file stem
  sharded/    pytorch_model-0000{1,2}-of-00002.bin + pytorch_model.bin.index.json
  meta-llama2/  consolidated.00.pth, consolidated.01.pth, params.json: a full model split the Llama 2 way
                (tok_embeddings / wo / w2 by columns, other matrices by rows, 1-D tensors replicated)
  meta-llama3/  the same model in bf16 split the Llama 3 way (tok_embeddings by rows), legacy-format shards
  expected.json  for every file: each tensor's name, dtype, shape and sha256 of its float32 little-endian row-major
                 values, from torch.load(weights_only=True) (consolidated sets: the unsplit tensors), plus
                 `agree`: the checks this script made (all formats of tiny/ give identical digests, every file
                 loads with weights_only=True, the merged Meta tensors equal the originals).
"""
import hashlib
import io
import json
import os
import shutil
import sys
import zipfile

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(os.path.dirname(HERE), "generated")

DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}


def digest(t):
    a = t.detach().to(torch.float32).contiguous().numpy()
    return hashlib.sha256(a.astype("<f4", copy=False).tobytes(order="C")).hexdigest()


def describe(sd):
    return [{"name": k, "dtype": DTYPES[v.dtype], "shape": list(v.shape), "sha256_f32le": digest(v)}
            for k, v in sd.items()]


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def tiny_state_dict():
    torch.manual_seed(0)
    emb = torch.randn(40, 8)
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    return {
        "emb.weight": emb,
        "layer.w_f16": torch.randn(8, 12).to(torch.float16),
        "layer.w_bf16": torch.randn(12, 8).to(torch.bfloat16),
        "layer.b": torch.randn(12),
        "head.weight": emb,  # tied: same storage as emb.weight
        "transposed": base.t(),  # [10, 6], stride (1, 10)
        "slice": base[1:, ::3],  # [5, 4], stride (10, 3), offset 10
        "expanded": torch.randn(1, 5).expand(3, 5),  # stride (0, 1)
        "f64": torch.randn(3, 4, dtype=torch.float64),
        "steps": torch.tensor([0, -3, 1 << 40], dtype=torch.int64),
        "scalar": torch.tensor(2.5),
        "cube": torch.randn(2, 3, 4).permute(2, 0, 1),  # 3-D non-contiguous [4, 2, 3]
    }


def rewrite_zip(src, dst, transform):
    """Copy a zip entry by entry through transform(name, data) -> (data, compress_type)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data, ctype = transform(info.filename, zin.read(info.filename))
            zi = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            zi.compress_type = ctype
            zout.writestr(zi, data)


def storage_dtypes(sd):
    """Storage key -> element size, in the order torch.save numbers storages (first use)."""
    keys, sizes = {}, []
    for t in sd.values():
        ptr = t.untyped_storage().data_ptr()
        if ptr not in keys:
            keys[ptr] = len(sizes)
            sizes.append(t.element_size())
    return sizes


def byteswap(data, size):
    if size == 1:
        return data
    return np.frombuffer(data, dtype=f"<u{size}").byteswap().tobytes()


def same(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)


def make_tiny(expected, agree):
    d = os.path.join(OUT, "tiny")
    os.makedirs(d, exist_ok=True)
    sd = tiny_state_dict()
    torch.save(sd, os.path.join(d, "zip.bin"))
    torch.save(sd, os.path.join(d, "legacy.bin"), _use_new_zipfile_serialization=False)
    rewrite_zip(os.path.join(d, "zip.bin"), os.path.join(d, "deflated.bin"),
                lambda n, b: (b, zipfile.ZIP_DEFLATED))
    sizes = storage_dtypes(sd)

    def to_big(name, data):
        if name.endswith("/byteorder"):
            return b"big", zipfile.ZIP_STORED
        top, _, rest = name.partition("/")
        if rest.startswith("data/") and rest[5:].isdigit():
            return byteswap(data, sizes[int(rest[5:])]), zipfile.ZIP_STORED
        return data, zipfile.ZIP_STORED
    rewrite_zip(os.path.join(d, "zip.bin"), os.path.join(d, "bigendian.bin"), to_big)
    st = {k: v.contiguous().clone() for k, v in sd.items()}
    save_file(st, os.path.join(d, "model.safetensors"))

    digests = None
    for f in ["zip.bin", "legacy.bin", "deflated.bin", "bigendian.bin"]:
        got = load(os.path.join(d, f))
        assert same(got, sd), f
        desc = describe(got)
        expected["tiny/" + f] = desc
        digests = digests or desc
        assert desc == digests, f
    with safe_open(os.path.join(d, "model.safetensors"), "pt") as s:
        st_desc = describe({k: s.get_tensor(k) for k in sd})
    assert st_desc == digests
    expected["tiny/model.safetensors"] = st_desc
    agree.append("tiny: zip, legacy, deflated, big-endian and safetensors give identical values and digests")
    with zipfile.ZipFile(os.path.join(d, "deflated.bin")) as z:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())


def make_wrapped(expected, agree):
    sd = tiny_state_dict()
    inner = {k: sd[k] for k in ["emb.weight", "layer.b", "scalar"]}
    tmp = os.path.join(OUT, "better_tiny_checkpoint.pt")
    torch.save({"model": inner, "step": 7}, tmp)
    os.replace(tmp, os.path.join(OUT, "wrapped.pt"))
    got = load(os.path.join(OUT, "wrapped.pt"))
    assert same(got["model"], inner) and got["step"] == 7
    with zipfile.ZipFile(os.path.join(OUT, "wrapped.pt")) as z:
        assert z.namelist()[0].startswith("better_tiny_checkpoint/")
    expected["wrapped.pt"] = describe(got["model"])
    agree.append("wrapped.pt: {'model': state_dict} under zip folder better_tiny_checkpoint/")


def make_sharded(expected, agree):
    d = os.path.join(OUT, "sharded")
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(1)
    parts = [
        {"model.embed_tokens.weight": torch.randn(16, 4), "model.layers.0.w": torch.randn(4, 4).half()},
        {"model.norm.weight": torch.ones(4), "lm_head.weight": torch.randn(16, 4).bfloat16()},
    ]
    weight_map = {}
    for i, p in enumerate(parts):
        name = f"pytorch_model-{i + 1:05d}-of-{len(parts):05d}.bin"
        torch.save(p, os.path.join(d, name))
        weight_map.update({k: name for k in p})
        expected["sharded/" + name] = describe(load(os.path.join(d, name)))
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    agree.append("sharded: two HF shards and their index")


def llama_model(dim, vocab, ffn, n_layers, dtype):
    torch.manual_seed(2)
    sd = {"tok_embeddings.weight": torch.randn(vocab, dim)}
    for i in range(n_layers):
        p = f"layers.{i}."
        sd[p + "attention.wq.weight"] = torch.randn(dim, dim)
        sd[p + "attention.wk.weight"] = torch.randn(dim, dim)
        sd[p + "attention.wv.weight"] = torch.randn(dim, dim)
        sd[p + "attention.wo.weight"] = torch.randn(dim, dim)
        sd[p + "feed_forward.w1.weight"] = torch.randn(ffn, dim)
        sd[p + "feed_forward.w2.weight"] = torch.randn(dim, ffn)
        sd[p + "feed_forward.w3.weight"] = torch.randn(ffn, dim)
        sd[p + "attention_norm.weight"] = torch.randn(dim)
        sd[p + "ffn_norm.weight"] = torch.randn(dim)
    sd["norm.weight"] = torch.randn(dim)
    sd["output.weight"] = torch.randn(vocab, dim)
    sd["rope.freqs"] = torch.randn(dim // 8)
    return {k: v.to(dtype) for k, v in sd.items()}


def split_meta(sd, n, llama3):
    """Split a full state dict into n model-parallel shards the way Meta's checkpoints are."""
    shards = [{} for _ in range(n)]
    for k, v in sd.items():
        if v.dim() <= 1:
            pieces = [v.clone() for _ in range(n)]
        else:
            by_cols = k.startswith("tok_embeddings.") and not llama3 or \
                k.endswith(".attention.wo.weight") or k.endswith(".feed_forward.w2.weight")
            pieces = [c.clone() for c in torch.chunk(v, n, dim=1 if by_cols else 0)]
        for s, p in zip(shards, pieces):
            s[k] = p
    return shards


def merge_meta(shards, llama3):
    """The rule readers/pytorch implements, in torch, to check the split round-trips."""
    out = {}
    for k, v in shards[0].items():
        if v.dim() <= 1:
            out[k] = v
            continue
        by_cols = k.startswith("tok_embeddings.") and not llama3 or \
            k.endswith(".attention.wo.weight") or k.endswith(".feed_forward.w2.weight")
        out[k] = torch.cat([s[k] for s in shards], dim=1 if by_cols else 0)
    return out


def make_meta(expected, agree, name, llama3, dtype, legacy):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    dim, vocab, ffn = 16, 24, 32
    sd = llama_model(dim, vocab, ffn, 1, dtype)
    shards = split_meta(sd, 2, llama3)
    for i, s in enumerate(shards):
        torch.save(s, os.path.join(d, f"consolidated.{i:02d}.pth"), _use_new_zipfile_serialization=not legacy)
    params = {"dim": dim, "n_layers": 1, "n_heads": 4, "norm_eps": 1e-05, "vocab_size": -1, "multiple_of": 16}
    if llama3:
        params.update({"n_kv_heads": 4, "vocab_size": vocab, "rope_theta": 500000.0})
    with open(os.path.join(d, "params.json"), "w") as f:
        json.dump(params, f)
    loaded = [load(os.path.join(d, f"consolidated.{i:02d}.pth")) for i in range(len(shards))]
    merged = merge_meta(loaded, llama3)
    assert same(merged, sd), name
    expected[name] = describe(sd)
    for i in range(len(shards)):
        expected[f"{name}/consolidated.{i:02d}.pth"] = describe(loaded[i])
    agree.append(f"{name}: the shards merged by the rule equal the unsplit model")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    expected, agree = {}, []
    make_tiny(expected, agree)
    make_wrapped(expected, agree)
    make_sharded(expected, agree)
    make_meta(expected, agree, "meta-llama2", llama3=False, dtype=torch.float32, legacy=False)
    make_meta(expected, agree, "meta-llama3", llama3=True, dtype=torch.bfloat16, legacy=True)
    doc = {
        "generator": "gen/make_testdata.py",
        "torch": torch.__version__,
        "digest": "sha256 of the values converted to float32, little-endian, C-contiguous row-major",
        "agree": agree,
        "files": expected,
    }
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
