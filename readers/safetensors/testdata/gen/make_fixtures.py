#!/usr/bin/env python3
"""Writes readers/safetensors/testdata/dtypes.safetensors and expected.json.

dtypes.safetensors holds one tensor per safetensors dtype with edge values (every F16, BF16 and float8 bit
pattern, float64 rounding ties, integer extremes, a 0-d and an empty tensor), written by safetensors.torch.

expected.json lists, for every fixture the Go tests open, each tensor in the order llama.cpp's converter
visits them (conversion/base.py index_tensors: shards sorted by file name, tensor names sorted per shard):
name, dtype, shape, file and sha256_f32le — the sha256 of the values converted to float32 by torch
(`.to(torch.float32)`), little-endian, C-contiguous row-major, no header.

Usage (from readers/safetensors/testdata):  python gen/make_fixtures.py
Needs: torch, safetensors, numpy (pip).  Deterministic: no randomness.
"""

import hashlib
import json
import os
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)

# Fixtures as (label, folder relative to testdata, file names or None for the index/sorted *.safetensors).
FIXTURES = [
    ("dtypes", ".", ["dtypes.safetensors"]),
    ("torch-bert", "torch-bert", ["model.safetensors"]),
    ("stories260K", "../../../testdata/stories260K/source", ["model.safetensors"]),
    ("stories260K-sharded", "../../../testdata/stories260K/source-sharded", None),
]

DTYPE_NAMES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint64: "U64", torch.uint32: "U32", torch.uint16: "U16", torch.uint8: "U8", torch.bool: "BOOL",
}


def bits(n, dtype):
    """Every bit pattern of an n-bit dtype, as that dtype."""
    carrier = {16: torch.int16, 8: torch.uint8}[n]
    pats = np.arange(1 << n, dtype=np.uint32).astype({16: np.uint16, 8: np.uint8}[n])
    return torch.from_numpy(pats.view({16: np.int16, 8: np.uint8}[n]).copy()).to(carrier).view(dtype)


def dtype_tensors():
    f64_vals = [
        1 + 2.0**-24, 1 + 3 * 2.0**-24, 1 + 2.0**-24 + 2.0**-40, -(1 + 2.0**-24),  # ties to even, just above
        1e300, -1e300, 1e-300, 3.4028235677973366e38,  # overflow, underflow, ties to inf
        2.0**-149, 2.0**-150, 3 * 2.0**-151, 1.401298464324817e-45,  # float32 subnormal edge, ties
        float("inf"), float("-inf"), float("nan"), -0.0,
        0.1, 1 / 3, 2.0**128 - 2.0**103, 2.0**128 - 2.0**104,
        65504.000000001, np.pi, -np.e, 123456789.123456789,
    ]
    i64 = [-(2**63), 2**63 - 1, 2**53 + 1, 2**24 + 1, 2**24 + 3, -1, 0, 2**62 + 2**38 + 1]
    u64 = [2**64 - 1, 2**63 + 2**39, 2**63 + 2**39 + 1, 2**24 + 1, 7, 0]
    return {
        "f16.all": bits(16, torch.float16).reshape(256, 256),
        "bf16.all": bits(16, torch.bfloat16).reshape(256, 256),
        "f8_e4m3.all": bits(8, torch.float8_e4m3fn).reshape(16, 16),
        "f8_e5m2.all": bits(8, torch.float8_e5m2).reshape(16, 16),
        "f64.round": torch.tensor(f64_vals, dtype=torch.float64).reshape(3, 8),
        "f32.edge": torch.tensor([1.5, -0.0, float("inf"), float("-inf"), 1e-45, 3.4028235e38, -2.5, 0.1],
                                 dtype=torch.float32).reshape(2, 2, 2),
        "i64.edge": torch.tensor(i64, dtype=torch.int64),
        "u64.edge": torch.tensor(u64, dtype=torch.uint64).reshape(2, 3),
        "i32.edge": torch.tensor([-(2**31), 2**31 - 1, 2**24 + 1, -7], dtype=torch.int32).reshape(2, 2),
        "u32.edge": torch.tensor([2**32 - 1, 2**24 + 1, 2**25 + 3, 0], dtype=torch.uint32),
        "i16.edge": torch.tensor([-(2**15), 2**15 - 1, -1, 0], dtype=torch.int16),
        "u16.edge": torch.tensor([2**16 - 1, 1, 0], dtype=torch.uint16),
        "i8.all": torch.arange(-128, 128, dtype=torch.int16).to(torch.int8).reshape(4, 64),
        "u8.all": torch.arange(0, 256, dtype=torch.int16).to(torch.uint8).reshape(2, 8, 16),
        "bool.v": torch.tensor([[True, False, True], [False, False, True]]),
        "scalar": torch.tensor(2.75, dtype=torch.float32),
        "empty": torch.zeros((0, 4), dtype=torch.float16),
        "row.empty": torch.zeros((3, 0), dtype=torch.bfloat16),
    }


def digest(t):
    v = t.to(torch.float32).contiguous().numpy()
    return hashlib.sha256(v.astype("<f4", copy=False).tobytes()).hexdigest()


def part_names(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            return sorted(set(json.load(f)["weight_map"].values()))
    names = [n for n in os.listdir(folder) if n.startswith("model") and n.endswith(".safetensors")]
    return sorted(names)


def describe(folder, files):
    out = []
    for fname in files:
        with safe_open(os.path.join(folder, fname), framework="pt") as f:
            for name in sorted(f.keys()):
                t = f.get_tensor(name)
                out.append({
                    "name": name,
                    "dtype": DTYPE_NAMES[t.dtype],
                    "shape": list(t.shape),
                    "file": fname,
                    "sha256_f32le": digest(t),
                })
    return out


def main():
    save_file(dtype_tensors(), os.path.join(TESTDATA, "dtypes.safetensors"),
              metadata={"format": "pt", "what": "ggufkit dtype fixture"})
    expected = {
        "generator": "gen/make_fixtures.py",
        "versions": {"torch": torch.__version__, "numpy": np.__version__,
                     "safetensors": __import__("safetensors").__version__},
        "digest": "sha256 of the values converted to float32 by torch, little-endian, C-contiguous row-major",
        "order": "llama.cpp index_tensors: shards sorted by file name, names sorted within a shard",
        "sources": {},
    }
    for label, rel, files in FIXTURES:
        folder = os.path.normpath(os.path.join(TESTDATA, rel))
        files = files or part_names(folder)
        expected["sources"][label] = {"path": rel, "tensors": describe(folder, files)}
    with open(os.path.join(TESTDATA, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("wrote dtypes.safetensors and expected.json", file=sys.stderr)


if __name__ == "__main__":
    main()
