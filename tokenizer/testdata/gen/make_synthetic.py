#!/usr/bin/env python3
"""Writes small synthetic vocab GGUFs for the tokenizer models no real vocab
here covers: synthetic-rwkv.gguf, synthetic-plamo2.gguf,
synthetic-hybriddna.gguf, synthetic-whitespace.gguf
and synthetic-test.gguf. Ours: the token lists
are made up (English pieces, a few CJK and accented ones), the layout follows
what llama.cpp's loader reads for each model. Deterministic. Needs gguf-py
(llama.cpp's gguf-py/, or pip install gguf).

    python3 gen/make_synthetic.py OUTDIR
"""
import os
import sys

import gguf

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

WORDS = ["the", "and", "ing", "ion", "er", "re", "on", "at", "en", "es", "is", "of", "to", "in", "it", "you", "Hello",
         "world", "token", "ization", "quick", "brown", "fox", "jump", "over", "lazy", "dog", "def", "return", "print",
         "int", "main", "http", "com", "example", "12", "123", "00", "'s", "'t", "!", "?", ".", ",", "...", "==", "->",
         "\u00e9", "\u00fc", "\u4e2d", "\u6587", "\u4e2d\u6587", "\u65e5\u672c", "\u3053\u3093", "\U0001f999",
         "\u0420\u0443", "\u0441\u0441"]
SPACED = [" " + w for w in WORDS[:40]] + ["  ", "    ", "\n\n", "\t"]


def byte_level():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def writer(name, arch, model, tokens, types, scores=None, merges=None, pre=None, extra=None):
    w = gguf.GGUFWriter(os.path.join(out, name), arch)
    w.add_name(name[:-5])
    w.add_tokenizer_model(model)
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    if scores is not None:
        w.add_token_scores(scores)
    w.add_token_types(types)
    if merges is not None:
        w.add_token_merges(merges)
    for k, v in (extra or {}).items():
        if isinstance(v, bool):
            w.add_bool(k, v)
        else:
            w.add_uint32(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


# RWKV: every byte as an escaped token, then words; text is stored escaped.
def rwkv_escape(bs):
    s = ""
    for b in bs:
        if b == 0x5C:
            s += "\\\\"
        elif b == 0x09:
            s += "\\t"
        elif b == 0x0A:
            s += "\\n"
        elif b == 0x0D:
            s += "\\r"
        elif 0x20 <= b < 0x7F:
            s += chr(b)
        else:
            s += "\\x%02x" % b
    return s


toks = [rwkv_escape([b]) for b in range(256)]
for w_ in WORDS + SPACED + ["\\escaped", "tab\there"]:
    e = rwkv_escape(w_.encode())
    if e not in toks:
        toks.append(e)
writer("synthetic-rwkv.gguf", "rwkv6", "rwkv", toks, [1] * len(toks))

# PLaMo-2: unk/bos/eos/pad, the 256 byte tokens, scored pieces.
toks = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>"]
types = [2, 3, 3, 3]
scores = [0.0] * 4
for b in range(256):
    toks.append("<0x%02X>" % b)
    types.append(6)
    scores.append(0.0)
for i, w_ in enumerate(WORDS + SPACED + ["\u2581the", "a", "b", "c", "d", "e", "h", "l", "o", "w", "r", "t"]):
    if w_ in toks:
        continue
    toks.append(w_)
    types.append(1)
    scores.append(-1.0 - 0.37 * i - 0.01 * len(w_))
writer("synthetic-plamo2.gguf", "plamo2", "plamo2", toks, types, scores=scores)

# byte-level BPE vocab shared by hybriddna and whitespace
b2u = byte_level()


def bl(s):
    return "".join(b2u[b] for b in s.encode())


base = [b2u[b] for b in range(256)]
merges, made = [], set(base)
for w_ in WORDS + SPACED:
    sym = [b2u[b] for b in w_.encode()]
    while len(sym) > 1:
        pair = sym[0] + " " + sym[1]
        if pair not in merges:
            merges.append(pair)
        sym = [sym[0] + sym[1]] + sym[2:]
        made.add(sym[0])
bpe_tokens = base + sorted(made - set(base))

toks = bpe_tokens + ["<|endoftext|>", "<dna>", "</dna>", "<oov>"]
types = [1] * len(bpe_tokens) + [3, 3, 3, 3]
kmers = ["AAAAAA", "ACGTAC", "GATTAC", "CCCCCC", "TTTTTT", "ACGTAA", "GGGAAA", "TACGTA", "CAAAAA"]
toks += [k + "\ue000" for k in kmers]
types += [1] * len(kmers)
writer("synthetic-hybriddna.gguf", "llama", "hybriddna", toks, types, merges=merges, pre="gpt-2",
       extra={"tokenizer.ggml.bos_token_id": len(bpe_tokens), "tokenizer.ggml.eos_token_id": len(bpe_tokens)})

toks = bpe_tokens + ["<|endoftext|>"]
types = [1] * len(bpe_tokens) + [3]
writer("synthetic-whitespace.gguf", "llama", "whitespace", toks, types, merges=merges, pre="whitespace",
       extra={"tokenizer.ggml.bos_token_id": len(bpe_tokens), "tokenizer.ggml.eos_token_id": len(bpe_tokens),
              "tokenizer.ggml.normalizer.lowercase": True})

# "test": llama.cpp's hashing test vocabulary; only the size and the special
# tokens matter.
toks = ["<|endoftext|>", "<s>"] + ["t%d" % i for i in range(997)]
writer("synthetic-test.gguf", "llama", "test", toks, [3, 3] + [1] * 997)
