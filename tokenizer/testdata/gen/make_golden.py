#!/usr/bin/env python3
"""Tokenizes every case of an .inp file (test-tokenizer-0 format) with llama.cpp's
own llama-tokenize and writes the golden files the Go tests compare with.

    python3 gen/make_golden.py LLAMA_TOKENIZE texts.inp OUTDIR [--pieces] VOCAB.gguf...

For each VOCAB (named by its file name without .gguf and without a ggml-vocab- prefix),
one line per case in
  OUTDIR/NAME.plain.out    llama-tokenize --no-bos --no-parse-special  (add_special = false, parse_special = false)
  OUTDIR/NAME.special.out  llama-tokenize                               (add_special = the vocab's add_bos, parse_special = true)
  OUTDIR/NAME.pieces       (--pieces) the pieces llama-tokenize prints for the .special.out ids
                           (common_token_to_piece, special = true), each piece hex-encoded, space-separated
A line is the ids separated by single spaces, or "ERR" when llama-tokenize fails
(llama.cpp throws on the input). Every run passes -f FILE --no-escape, so the
bytes of the case are tokenized verbatim. Only the Python standard library.
"""
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SEP = b"\n__ggml_vocab_test__\n"


def read_cases(path):
    raw = open(path, "rb").read()
    cases, pos = [], 0
    while pos < len(raw):  # test-tokenizer-0's read_tests
        i = raw.find(SEP, pos)
        if i < 0:
            cases.append(raw[pos:])
            break
        cases.append(raw[pos:i])
        pos = i + len(SEP)
    return cases


def run(tool, vocab, case_file, extra):
    p = subprocess.run([tool, "-m", vocab, "-f", case_file, "--no-escape", "--log-disable"] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.returncode, p.stdout


def ids_of(tool, vocab, case_file, extra):
    rc, out = run(tool, vocab, case_file, ["--ids"] + extra)
    if rc != 0:
        return None
    m = re.fullmatch(rb"\[([0-9, ]*)\]\n", out)
    if not m:
        raise SystemExit(f"unexpected output {out[:200]!r}")
    return [int(x) for x in m.group(1).split(b", ") if x]


def pieces_of(tool, vocab, case_file, ids):
    rc, out = run(tool, vocab, case_file, [])
    if rc != 0:
        return None
    got, pos = [], 0
    for k, tok in enumerate(ids):  # lines are "%6d -> '%s'\n"; a piece may hold anything
        head = b"%6d -> '" % tok
        assert out.startswith(head, pos), (out[pos:pos + 40], head)
        pos += len(head)
        end = len(out) - 2 if k + 1 == len(ids) else out.index(b"'\n" + b"%6d -> '" % ids[k + 1], pos)
        got.append(out[pos:end])
        pos = end + 2
    assert pos == len(out), (pos, len(out))
    return got


def one(tool, vocab, case, want_pieces):
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(case)
    try:
        plain = ids_of(tool, vocab, f.name, ["--no-bos", "--no-parse-special"])
        special = ids_of(tool, vocab, f.name, [])
        pieces = pieces_of(tool, vocab, f.name, special) if want_pieces and special is not None else None
    finally:
        os.unlink(f.name)
    return plain, special, pieces


def line(ids):
    return "ERR" if ids is None else " ".join(map(str, ids))


def main():
    args = sys.argv[1:]
    tool, inp, outdir = args[:3]
    want_pieces = "--pieces" in args
    vocabs = [a for a in args[3:] if a != "--pieces"]
    cases = read_cases(inp)
    os.makedirs(outdir, exist_ok=True)
    for vocab in vocabs:
        name = os.path.basename(vocab).removesuffix(".gguf").removeprefix("ggml-vocab-")
        with ThreadPoolExecutor(2) as ex:
            res = list(ex.map(lambda c: one(tool, vocab, c, want_pieces), cases))
        with open(os.path.join(outdir, name + ".plain.out"), "w") as f:
            f.writelines(line(r[0]) + "\n" for r in res)
        with open(os.path.join(outdir, name + ".special.out"), "w") as f:
            f.writelines(line(r[1]) + "\n" for r in res)
        if want_pieces:
            with open(os.path.join(outdir, name + ".pieces"), "w") as f:
                f.writelines(("ERR" if r[2] is None else " ".join(p.hex() for p in r[2])) + "\n" for r in res)
        print(name, len(cases), "cases,", sum(r[0] is None for r in res), "errors", file=sys.stderr)


main()
