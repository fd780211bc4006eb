#!/usr/bin/env python3
"""Runs llama.cpp's llama-tokenize on command lines of `ggufkit tokenize`'s golden
test and records what it prints, byte for byte.

    python3 testdata/gen/make_tokenize_golden.py LLAMA_TOKENIZE OUT.json [--modes-only] NAME=VOCAB.gguf[.bz2]...

For every vocabulary, the texts below under each flag set of MODES; for the
first vocabulary also the input and escape cases of INPUT_CASES (unless
--modes-only). Each record:
  {"vocab": NAME, "args": [...], "file": hex or absent, "stdin": hex or absent,
   "exit": status, "stdout": text, or "stdout_hex": hex when it is no valid UTF-8}
In args, MODEL stands for the vocabulary's path and FILE for a file holding the
"file" bytes. llama-tokenize runs with --log-disable, which only silences its
loader's log on stderr. Only the Python standard library.
"""
import bz2
import json
import os
import subprocess
import sys
import tempfile

# Special-token text of many models in one line: each vocabulary recognises its
# own and leaves the others as text.
SPECIALS = ("<s>Hello</s> world [CLS] x [SEP]<|endoftext|><|im_start|>user\nHi<|im_end|>\n"
            "<|begin_of_text|><|eot_id|><bos><eos><start_of_turn>model<end_of_turn> <unk><pad>[MASK][PAD]"
            "<|end|><|user|><|assistant|><|START_OF_TURN_TOKEN|><|fim_prefix|>a<|fim_middle|>b<mask></s>")
TEXTS = [
    SPECIALS,
    "<s> <s>  leading specials and   spaces\t\ttabs\n\n",
    "Hello world",
]
MODES = [
    [],
    ["--no-bos"],
    ["--no-parse-special"],
    ["--no-bos", "--no-parse-special", "--ids", "--show-count"],
]
# (args after -m MODEL, file bytes or None, stdin bytes or None)
INPUT_CASES = [
    (["-p", r"a\nb\tc\rd\'e\"f\\g\x41\x4a\xzz\x-1\x 7\q tail\\"], None, None),
    (["--no-escape", "-p", r"a\nb\x41\\"], None, None),
    (["-p", "trailing backslash\\"], None, None),
    (["-p", r"\x4"], None, None),
    (["-p", ""], None, None),
    (["--show-count", "-p", ""], None, None),
    (["--no-bos", "--ids", "-p", ""], None, None),
    (["-f", "FILE"], b"line one\nline <s> two \\x41\n", None),
    (["--no-escape", "-f", "FILE"], b"line one\nline <s> two \\x41\n", None),
    (["-f", "FILE"], b"nul\x00byte and \xf0\x9f\xa6\x99 split emoji \xff\xfe", None),
    (["-p", "ignored", "-f", "FILE"], b"the file wins", None),
    (["--stdin"], None, b"from stdin \\t<s>\n"),
    (["--stdin", "--no-escape"], None, b"from stdin \\t<s>\n"),
    (["--stdin", "-p", "ignored"], None, b"stdin wins"),
    (["--stdin", "--ids", "--show-count"], None, b""),
]


def run(tool, model, args, file_bytes, stdin):
    path = None
    try:
        if file_bytes is not None:
            with tempfile.NamedTemporaryFile(delete=False) as f:
                f.write(file_bytes)
                path = f.name
        cmd = [tool, "--log-disable", "-m", model] + [path if a == "FILE" else a for a in args]
        p = subprocess.run(cmd, input=stdin or b"", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return p.returncode, p.stdout
    finally:
        if path:
            os.unlink(path)


def main():
    tool, out, *vocabs = sys.argv[1:]
    modes_only = "--modes-only" in vocabs
    vocabs = [v for v in vocabs if v != "--modes-only"]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, spec in enumerate(vocabs):
            name, path = spec.split("=", 1)
            if path.endswith(".bz2"):
                plain = os.path.join(tmp, name + ".gguf")
                with open(plain, "wb") as f:
                    f.write(bz2.decompress(open(path, "rb").read()))
                path = plain
            cases = [(m + ["-p", t], None, None) for t in TEXTS for m in MODES]
            if k == 0 and not modes_only:
                cases += INPUT_CASES
            for args, file_bytes, stdin in cases:
                code, stdout = run(tool, path, args, file_bytes, stdin)
                rec = {"vocab": name, "args": ["-m", "MODEL"] + args}
                if file_bytes is not None:
                    rec["file"] = file_bytes.hex()
                if stdin is not None:
                    rec["stdin"] = stdin.hex()
                rec["exit"] = code
                try:
                    rec["stdout"] = stdout.decode("utf-8")
                except UnicodeDecodeError:
                    rec["stdout_hex"] = stdout.hex()
                records.append(rec)
            print(name, len(cases), "runs", file=sys.stderr)
    with open(out, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n")


main()
