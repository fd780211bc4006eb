#!/usr/bin/env python3
"""Writes copies of a vocab GGUF with one tokenizer.ggml.pre each, for the
pre-tokenizer sweep: every metadata key copied in order, pre replaced (or added).
Needs gguf-py (llama.cpp's gguf-py/, or pip install gguf).

    python3 gen/make_variants.py SRC.gguf OUTDIR NAME...
writes OUTDIR/pre-NAME.gguf for each NAME.
"""
import os
import sys

import gguf

src, outdir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
r = gguf.GGUFReader(src)
arch = r.fields["general.architecture"].contents()
os.makedirs(outdir, exist_ok=True)
for name in names:
    w = gguf.GGUFWriter(os.path.join(outdir, "pre-" + name + ".gguf"), arch)
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "tokenizer.ggml.pre"):
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), t, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), t)
    w.add_string("tokenizer.ggml.pre", name)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
