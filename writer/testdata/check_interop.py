#!/usr/bin/env python3
"""Read interop.gguf (written by ggufkit's writer) with gguf-py and compare
every KV (key, type, element type, value — floats bit for bit) and every
tensor (name, type, shape, data sha256, offset) with interop.json.

Usage: python check_interop.py interop.gguf interop.json   (needs pip gguf)
Exit 0 when gguf-py reads back exactly what was written."""
import hashlib
import json
import struct
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType


def repr_float(x, bits):
    if bits == 32:
        return "f32:" + struct.pack(">f", float(np.float32(x))).hex()
    return "f64:" + struct.pack(">d", float(x)).hex()


def normalize(value, typ, elem):
    """Render gguf-py's value the way interop.json renders ours."""
    t = elem if typ == "array" else typ
    items = value if typ == "array" else [value]
    out = []
    for v in items:
        if t == "float32":
            out.append(repr_float(v, 32))
        elif t == "float64":
            out.append(repr_float(v, 64))
        elif t in ("uint64", "int64"):
            out.append(str(int(v)))
        elif t == "bool":
            out.append(bool(v))
        elif t == "string":
            out.append(v)
        else:
            out.append(int(v))
    return out if typ == "array" else out[0]


def main(gguf_path, json_path):
    want = json.load(open(json_path))
    r = GGUFReader(gguf_path)
    errors = []
    names = [f for f in r.fields if not f.startswith("GGUF.")]
    if names != [kv["key"] for kv in want["kvs"]]:
        errors.append(f"key order differs: {names[:5]}...")
    for kv in want["kvs"]:
        field = r.fields.get(kv["key"])
        if field is None:
            errors.append(f"{kv['key']}: missing")
            continue
        typ = field.types[0].name.lower()
        elem = None
        if field.types[0] == GGUFValueType.ARRAY:
            # gguf-py lists the element type only for non-empty arrays; the
            # raw element type tag follows the key length, key and type parts.
            elem = GGUFValueType(int(field.parts[3][0])).name.lower()
        if typ != kv["type"] or elem != kv.get("element_type"):
            errors.append(f"{kv['key']}: type {typ}/{elem}, want {kv['type']}/{kv.get('element_type')}")
            continue
        if typ == "array" and len(field.data) == 0:
            got = []
        else:
            got = normalize(field.contents(), typ, elem)
        if got != kv["value"]:
            errors.append(f"{kv['key']}: value {str(got)[:80]} != {str(kv['value'])[:80]}")
    if r.alignment != want["alignment"]:
        errors.append(f"alignment {r.alignment}, want {want['alignment']}")
    if len(r.tensors) != len(want["tensors"]):
        errors.append(f"{len(r.tensors)} tensors, want {len(want['tensors'])}")
    for t, w in zip(r.tensors, want["tensors"]):
        shape = [int(x) for x in t.shape]
        digest = hashlib.sha256(t.data.tobytes()).hexdigest()
        if (t.name, t.tensor_type.name, shape, digest) != (w["name"], w["type"], w["shape"], w["sha256"]):
            errors.append(f"tensor {t.name}: {t.tensor_type.name} {shape} {digest[:12]} != {w}")
        if t.data_offset - r.data_offset != w["offset"]:
            errors.append(f"tensor {t.name}: offset {t.data_offset - r.data_offset}, want {w['offset']}")
    for e in errors:
        print("interop:", e, file=sys.stderr)
    if errors:
        return 1
    print(f"interop: gguf-py read {len(want['kvs'])} KVs and {len(want['tensors'])} tensors exactly as written")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
