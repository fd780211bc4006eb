#!/usr/bin/env python3
"""Describe a GGUF file as an "expected" JSON, with gguf-py's GGUFReader.

  python dump_gguf_expected.py FILE.gguf > expected.json

Output (see testdata/convert/README.md, "expected-<outtype>.json"):
  file      {size, sha256}
  header    {version, tensor_count, kv_count, alignment, data_offset}
  kv        ordered list, one entry per key as stored:
              key, type (GGUF value type name), element_type (arrays only),
              value            when small: scalars, strings of < 256 bytes,
                               arrays of < 64 elements (strings as text,
                               floats exactly as the stored float32/float64),
              or count + sha256  otherwise: count = string bytes or array
                               elements, sha256 = of the value's GGUF binary
                               encoding, i.e. the file bytes that follow the
                               key's type field (for an array: element type
                               uint32, count uint64, then the elements; for a
                               string: length uint64, then the bytes).
  tensors   in file order: name, type (ggml type name), shape (GGUF order,
            ne0 first), offset (relative to data_offset, as stored), size
            (bytes), sha256 (of those bytes).
Needs gguf-py on PYTHONPATH (llama.cpp's gguf-py/).
"""
import hashlib
import json
import sys
from collections import OrderedDict

import numpy as np
from gguf import GGUFReader, GGUFValueType

SMALL_ARRAY = 64
SMALL_STRING = 256

PSEUDO_FIELDS = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")


def _scalar(v, vtype):
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        f = float(v)
        if f != f or f in (float("inf"), float("-inf")):
            # JSON has no such numbers (Gemma 3n's activation_sparsity_scale holds -inf).
            return "nan" if f != f else ("inf" if f > 0 else "-inf")
        return f
    if vtype == GGUFValueType.BOOL:
        return bool(v)
    return int(v)


def describe(path):
    r = GGUFReader(path, "r")
    raw = r.data
    out = OrderedDict()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    out["file"] = OrderedDict([("size", int(raw.nbytes)), ("sha256", h.hexdigest())])

    fields = r.fields
    out["header"] = OrderedDict([
        ("version", int(fields["GGUF.version"].parts[-1][0])),
        ("tensor_count", int(fields["GGUF.tensor_count"].parts[-1][0])),
        ("kv_count", int(fields["GGUF.kv_count"].parts[-1][0])),
        ("alignment", int(r.alignment)),
        ("data_offset", int(r.data_offset)),
    ])

    kvs = []
    for name, field in fields.items():
        if name in PSEUDO_FIELDS:
            continue
        # parts: [key_len, key_bytes, value_type, <value parts...>]
        value_start = field.offset + sum(int(p.nbytes) for p in field.parts[:3])
        value_end = field.offset + sum(int(p.nbytes) for p in field.parts)
        enc = bytes(raw[value_start:value_end])
        main = field.types[0]
        e = OrderedDict()
        e["key"] = name
        e["type"] = main.name
        if main == GGUFValueType.ARRAY:
            # parts[3] is the element type as stored (also for an empty array)
            sub = GGUFValueType(int(field.parts[3][0]))
            n = len(field.data)
            e["element_type"] = sub.name
            if n < SMALL_ARRAY:
                if sub == GGUFValueType.STRING:
                    e["value"] = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
                else:
                    e["value"] = [_scalar(field.parts[i][0], sub) for i in field.data]
            else:
                e["count"] = n
                e["sha256"] = hashlib.sha256(enc).hexdigest()
        elif main == GGUFValueType.STRING:
            b = bytes(field.parts[-1])
            if len(b) < SMALL_STRING:
                e["value"] = b.decode("utf-8")
            else:
                e["count"] = len(b)
                e["sha256"] = hashlib.sha256(enc).hexdigest()
        else:
            e["value"] = _scalar(field.parts[-1][0], main)
        kvs.append(e)
    out["kv"] = kvs

    tensors = []
    for t in r.tensors:
        start = int(t.data_offset)
        b = bytes(raw[start:start + int(t.n_bytes)])
        tensors.append(OrderedDict([
            ("name", t.name),
            ("type", t.tensor_type.name),
            ("shape", [int(d) for d in t.shape]),
            ("offset", start - int(r.data_offset)),
            ("size", int(t.n_bytes)),
            ("sha256", hashlib.sha256(b).hexdigest()),
        ]))
    out["tensors"] = tensors
    return out


def main():
    json.dump(describe(sys.argv[1]), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
