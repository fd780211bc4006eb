#!/usr/bin/env python3
"""Writes vectors-llamacpp.json: llama.cpp's ids for every case of the shared
tokenizer vectors (shared/data/tokenizer-vectors/*.json and the plain encode
cases of shared/data/torchtune/tests-with-expected-ids) on which llama.cpp
disagrees with the library that made the vector.

    python3 gen/make_vector_golden.py TOKENIZE_CASES SHARED_DIR > vectors-llamacpp.json

TOKENIZE_CASES is gen/tokenize_cases.cpp built against llama.cpp. The vocab of
each vector file and the parse_special flag that mirrors the library's call are
in VECTORS below (the same table as vectorFiles in vectors_test.go). Only the
Python standard library.
"""
import bz2
import json
import os
import subprocess
import sys
import tempfile

SEP = b"\n__ggml_vocab_test__\n"
HERE = os.path.dirname(os.path.abspath(__file__))

VOCABS = {
    "llama-spm": "data/llamacpp-vocab/ggml-vocab-llama-spm.gguf",
    "phi-3": "data/llamacpp-vocab/ggml-vocab-phi-3.gguf",
    "gpt-2": "data/llamacpp-vocab/ggml-vocab-gpt-2.gguf",
    "bert-bge": "data/llamacpp-vocab/ggml-vocab-bert-bge.gguf",
    "llama-bpe": "data/llamacpp-vocab/ggml-vocab-llama-bpe.gguf",
    "t5": "testdata:vocab/ggml-vocab-t5.gguf.bz2",
    "torchtune-m": "testdata:vocab/ggml-vocab-torchtune-m.gguf",
}

# file -> (vocab, parse_special)
VECTORS = {
    "llama2__tokenizer.model.json": ("llama-spm", False),
    "llama2__tokenizer.json.json": ("llama-spm", True),
    "llama2__AutoTokenizer.json": ("llama-spm", True),
    "phi-3__tokenizer.model.json": ("phi-3", False),
    "phi-3__tokenizer.json.json": ("phi-3", True),
    "phi-3__AutoTokenizer.json": ("phi-3", True),
    "t5__spiece.model.json": ("t5", False),
    "t5__tokenizer.json.json": ("t5", True),
    "t5__AutoTokenizer.json": ("t5", True),
    "hf-gpt2__tokenizer.json.json": ("gpt-2", True),
    "fake_gpt2__AutoTokenizer.json": ("gpt-2", True),
    "bert__vocab.txt.json": ("bert-bge", True),
    "llama-3__tokenizer.model.json": ("llama-bpe", False),
}

# torchtune asset -> vocab (only the plain encode cases)
TORCHTUNE = {"sentencepiece.model": "t5", "m.model": "torchtune-m"}


def vocab_path(name, shared, tmp):
    p = VOCABS[name]
    if not p.startswith("testdata:"):
        return os.path.join(shared, p)
    p = os.path.join(HERE, "..", p[len("testdata:"):])
    if p.endswith(".bz2"):
        out = os.path.join(tmp, os.path.basename(p)[:-4])
        with open(out, "wb") as f:
            f.write(bz2.open(p).read())
        return out
    return p


def llamacpp(tool, vocab, texts, add, parse, tmp):
    inp = os.path.join(tmp, "cases.inp")
    with open(inp, "wb") as f:
        f.writelines(t + SEP for t in texts)
    out = subprocess.run([tool, vocab, inp, "1" if add else "0", "1" if parse else "0"],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    lines = out.split("\n")[:-1]
    assert len(lines) == len(texts)
    return lines


def main():
    tool, shared = sys.argv[1:3]
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: vocab_path(n, shared, tmp) for n in VOCABS}
        for name, (vocab, parse) in VECTORS.items():
            cases = json.load(open(os.path.join(shared, "data/tokenizer-vectors", name)))["cases"]
            diff = {}
            for add in (False, True):
                idx = [i for i, c in enumerate(cases) if c["add_special"] == add]
                got = llamacpp(tool, paths[vocab], [cases[i]["text"].encode() for i in idx], add, parse, tmp)
                for i, line in zip(idx, got):
                    if line != " ".join(map(str, cases[i]["ids"])):
                        diff[str(i)] = line
            result[name] = dict(sorted(diff.items(), key=lambda kv: int(kv[0])))
        tt = json.load(open(os.path.join(shared, "data/torchtune/tests-with-expected-ids/torchtune_tokenizer_cases.json")))
        diff = {}
        for i, c in enumerate(tt["cases"]):
            vocab = TORCHTUNE.get(c.get("tokenizer_asset"))
            if c["method"] != "encode" or vocab is None:
                continue
            # torchtune's add_bos / add_eos (default true) -> llama.cpp's add_special
            add = c.get("kwargs", {}).get("add_bos", True) if vocab != "t5" else True
            line = llamacpp(tool, paths[vocab], [c["text"].encode()], add, False, tmp)[0]
            if line != " ".join(map(str, c["expected_ids"])):
                diff[str(i)] = line
        result["torchtune_tokenizer_cases.json"] = diff
    json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


main()
