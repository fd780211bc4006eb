#!/usr/bin/env python3
"""Computes, with gguf-py's reader and its own dequantizers, what `ggufkit diff`
reports for pairs of files of testdata/stories260K: the keys that differ and,
per tensor, the error of B against A after decoding (float64 sums).

    PYTHONPATH=/path/to/llama.cpp/gguf-py python testdata/gen/make_diff_golden.py > testdata/diff/expected.json

(gguf-py 0.19.0 from llama.cpp commit 0c1e570, numpy.) Run from the repository root.
"""
import json

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

S = "testdata/stories260K/"
PAIRS = [
    (S + "gguf/stories260K-F32.gguf", S + "gguf/stories260K-BF16.gguf"),
    (S + "gguf/stories260K-F32.gguf", S + "quantized/stories260K-Q4_K_M-imat.gguf"),
    (S + "gguf/stories260K-F32.gguf", S + "quantized/stories260K-IQ2_XXS-imat.gguf"),
    (S + "gguf/stories260K-F16.gguf", S + "quantized/stories260K-Q2_K.gguf"),
]


def values(t):
    return dequantize(t.data, t.tensor_type).astype(np.float64).reshape(-1)


def fields(r):
    return {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}


out = []
for a_path, b_path in PAIRS:
    a, b = GGUFReader(a_path), GGUFReader(b_path)
    fa, fb = fields(a), fields(b)
    keys = []
    for k, f in fa.items():
        if k not in fb:
            keys.append([k, "only_in_a"])
        elif f.types != fb[k].types or f.contents() != fb[k].contents():
            keys.append([k, "changed"])
    keys += [[k, "only_in_b"] for k in fb if k not in fa]
    tb = {t.name: t for t in b.tensors}
    tensors = {}
    for t in a.tensors:
        u = tb[t.name]
        if t.tensor_type == u.tensor_type and bytes(t.data.tobytes()) == bytes(u.data.tobytes()):
            continue
        x, y = values(t), values(u)
        d = y - x
        na, nb = float(x @ x), float(y @ y)
        tensors[t.name] = {
            "a_type": t.tensor_type.name, "b_type": u.tensor_type.name,
            "rmse": float(np.sqrt((d @ d) / d.size)), "max_abs": float(np.abs(d).max()),
            "relative": float(np.sqrt((d @ d) / na)), "cosine": float((x @ y) / np.sqrt(na * nb)),
        }
    out.append({"a": a_path, "b": b_path, "metadata": keys, "tensors": tensors})
print(json.dumps(out, indent=1))
