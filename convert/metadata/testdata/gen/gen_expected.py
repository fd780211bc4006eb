#!/usr/bin/env python3
"""Write ../expected.json: gguf-py's own answers for the metadata tests.

For each case it calls gguf-py 0.19.0 (the copy in llama.cpp commit 0c1e570,
vendor/llama.cpp/gguf-py of the llama-cpp-python==0.3.36 sdist) and records:
  - ids:     Metadata.get_model_id_components(id, total_params) and id_to_title(name)
  - sizes:   size_label(total, shared, expert, count)
  - names:   naming_convention(...) and fill_templated_filename(...)
  - cards:   for each folder under ../cards, Metadata.load(override, folder,
             model_name, total_params) written with set_gguf_meta_model into a
             GGUFWriter: the (key, type, value) list in order.

Run (needs numpy and pyyaml):
  PYTHONPATH=<llama.cpp>/gguf-py python3 gen_expected.py > ../expected.json
"""
import json
import os
import sys

import gguf
from gguf.metadata import Metadata
from gguf.utility import fill_templated_filename, naming_convention, size_label

HERE = os.path.dirname(os.path.abspath(__file__))
CARDS = os.path.join(HERE, "..", "cards")

IDS = [
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46702792704),
    ("meta-llama/Llama-2-7b-hf", 6738415616),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", 8030261248),
    ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1100048384),
    ("Qwen/Qwen2.5-Coder-7B-Instruct-AWQ", 7615616512),
    ("bigscience/bloom-7b1", 7069016064),
    ("stories260K", 260000),
    ("source", 260000),
    ("tiny-llama", 2000000),
    ("google/gemma-2-9b", 0),
    ("EleutherAI/pythia-1.4b-deduped", 1414647808),
    ("microsoft/Phi-3-mini-4k-instruct", 3821079552),
    ("01-ai/Yi-34B-Chat", 34388917248),
    ("./local-model", 0),
    ("model with spaces", 0),
    ("org/Model-7B-LoRA", -7000000),
    ("Org/Model-v1.2-1_6B-large-iter3", 1600000000),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", 15706484224),
    ("bert-base-uncased", 109482240),
    ("x/Straße-7b", 7000000000),
]

SIZES = [
    (260000, 260000, 0, 0), (999999, 999999, 0, 0), (1000000, 1000000, 0, 0), (1000001, 1000001, 0, 0),
    (6738415616, 6738415616, 0, 0), (46702792704, 1604386816, 5637275648, 8), (1100048384, 1100048384, 0, 0),
    (125000, 125000, 0, 0), (95500, 95500, 0, 0), (-7000000, 7000000, 0, 0), (1500000000000, 1, 0, 0),
    (0, 0, 0, 0), (9500, 9500, 0, 0), (12345678, 12345678, 0, 0),
]

NAMES = [
    ("Mixtral 8x7B Instruct v0.1", "Mixtral", "Instruct", "v0.1", "8x7B", "Q4_K_M", None),
    ("stories260K", None, None, None, "260K", "F32", None),
    ("a name/with slash", None, None, None, None, "bf16", "vocab"),
    (None, None, None, None, None, None, None),
    ("x", " base name ", " fine tune ", " v 1 ", "1B", " q8_0 ", "LoRA"),
]

TEMPLATES = [
    ("model-{ftype}.gguf", "Q8_0"), ("model-{FTYPE}.gguf", "q8_0"), ("m-{outtype}-{OUTTYPE}.gguf", "BF16"),
    ("m-{}.gguf", "F16"), ("plain.gguf", "F16"), ("braces-{{x}}.gguf", "F32"),
]

# (folder, override file inside it or None, --model-name or None, total params)
CARDS_CASES = [
    ("card-full", None, None, 8030261248),
    ("card-lists", None, None, 3000000000),
    ("gen-config", None, None, 100),
    ("override", "override.json", None, 100),
    ("override", "override.json", "Name From CLI", 100),
    ("hf-name-or-path", None, None, 1100048384),
    ("Qwen2.5-Coder-7B-Instruct-AWQ", None, None, 7615616512),
    ("plain", None, None, 0),
]


def none(v):
    return v


def kv_list(md):
    w = gguf.GGUFWriter(path=None, arch="llama")
    md.set_gguf_meta_model(w)
    out = []
    for key, val in w.kv_data[0].items():
        if key == "general.architecture":
            continue
        v = val.value
        if isinstance(v, (bytes, bytearray)):
            v = v.decode("utf-8")
        out.append({"key": key, "type": val.type.name, "value": v})
    return out


def main():
    res = {"gguf_py": "0.19.0 (llama.cpp 0c1e570)", "ids": [], "sizes": [], "names": [], "templates": [], "cards": []}
    for mid, total in IDS:
        comps = Metadata.get_model_id_components(mid, total)
        res["ids"].append({"id": mid, "total": total, "components": list(comps),
                           "title": Metadata.id_to_title(comps[0]) if comps[0] else None})
    for t, s, e, c in SIZES:
        res["sizes"].append({"args": [t, s, e, c], "label": size_label(t, s, e, c)})
    for args in NAMES:
        res["names"].append({"args": list(args), "name": naming_convention(*args)})
    for tmpl, typ in TEMPLATES:
        res["templates"].append({"args": [tmpl, typ], "name": fill_templated_filename(tmpl, typ)})
    for folder, override, name, total in CARDS_CASES:
        d = os.path.join(CARDS, folder)
        ov = os.path.join(d, override) if override else None
        from pathlib import Path
        md = Metadata.load(Path(ov) if ov else None, Path(d), name, total)
        if md.name is None:
            md.name = folder  # prepare_metadata's fallback to the folder name
        res["cards"].append({"folder": folder, "override": override, "model_name": name, "total": total,
                             "kvs": kv_list(md)})
    json.dump(res, sys.stdout, indent=1, ensure_ascii=False)
    print()


main()
