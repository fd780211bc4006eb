#!/usr/bin/env python3
"""Reads a `ggufkit meta` output with gguf-py and checks the edits gguf-py's own
scripts cannot make (its golden cases cover the others):

    ggufkit meta --set 'x.ids:array[int32]=[1,-2,3]' --set 'x.names:array[string]=["a","b"]' \
        --set x.f:float64=0.5 --alignment 64 --rename-tensor output_norm.weight=out.w \
        --drop-tensor token_embd.weight IN.gguf OUT.gguf
    python check_readback.py OUT.gguf IN.gguf          (needs pip gguf numpy)

Every other key must read back as in IN, every kept tensor with IN's type, shape and bytes.
Exit 0 when all hold."""
import sys

from gguf import GGUFReader, GGUFValueType

out, src = GGUFReader(sys.argv[1]), GGUFReader(sys.argv[2])
errors = []


def check(what, got, want):
    if got != want:
        errors.append(f"{what}: {got!r}, want {want!r}")


def typ(f):
    return [GGUFValueType(t).name for t in f.types]


new = {"x.ids": (["ARRAY", "INT32"], [1, -2, 3]), "x.names": (["ARRAY", "STRING"], ["a", "b"]),
       "x.f": (["FLOAT64"], 0.5), "general.alignment": (["UINT32"], 64)}
for k, (t, v) in new.items():
    f = out.get_field(k)
    if f is None:
        errors.append(f"{k} missing")
        continue
    check(k + " type", typ(f), t)
    check(k, f.contents(), v)
for k, f in src.fields.items():
    if k.startswith("GGUF.") or k in new:
        continue
    g = out.get_field(k)
    if g is None:
        errors.append(f"{k} missing")
        continue
    check(k + " type", typ(g), typ(f))
    check(k, g.contents(), f.contents())
check("data offset % 64", out.data_offset % 64, 0)
want = [("out.w" if t.name == "output_norm.weight" else t.name, t) for t in src.tensors if t.name != "token_embd.weight"]
check("tensor names", [t.name for t in out.tensors], [n for n, _ in want])
for (n, a), b in zip(want, out.tensors):
    check(n + " type", b.tensor_type, a.tensor_type)
    check(n + " shape", list(b.shape), list(a.shape))
    check(n + " data", b.data.tobytes() == a.data.tobytes(), True)
    check(n + " offset % 64", b.data_offset % 64, 0)
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"gguf-py reads back {sys.argv[1]}: {len(out.fields)} fields, {len(out.tensors)} tensors as expected")
