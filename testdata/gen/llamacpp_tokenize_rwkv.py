#!/usr/bin/env python3
"""Write testdata/convert/tokenize-rwkv.json: llama-tokenize's ids for a few texts (UTF-8, invalid UTF-8 bytes,
quotes and backslashes, text that looks like special tokens) on llama.cpp's F16 conversion of the rwkv7 fixture
(run_llamacpp_convert.py's <work>/rwkv7/rwkv7-F16.gguf).

  python testdata/gen/llamacpp_tokenize_rwkv.py --gguf <work>/rwkv7/rwkv7-F16.gguf \
      --llama-tokenize <llama-build>/bin/llama-tokenize --out testdata/convert/tokenize-rwkv.json
"""
import argparse
import json
import os
import subprocess

TEXTS = [
    b"Hello world",
    b"The quick brown fox",
    b" the world and the wor",
    "\u4f60\u597d\u4e16\u754c \u00e9t\u00e9 \u00e9".encode(),
    "\U0001f600 \u4e16".encode(),
    b"it's '\" \\n \\\\ \\x",
    b"\n\n\nUser: hi\n\nAssistant:",
    b"<|endoftext|><s>",
    b"\t\t    \r\n",
    b"\xff\x80 raw bytes \xe4\xbd\xe4",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--llama-tokenize", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(args.llama_tokenize))
    cases = []
    for t in TEXTS:
        out = subprocess.run([args.llama_tokenize, "-m", args.gguf, "-p", t, "--ids", "--no-escape", "--log-disable"],
                             env=env, check=True, capture_output=True).stdout.decode()
        ids = json.loads(out.strip().splitlines()[-1])
        c = {"hex": t.hex(), "ids": ids}
        try:
            c = {"text": t.decode("utf-8"), "ids": ids}
        except UnicodeDecodeError:
            pass
        cases.append(c)
    doc = {"what": "llama-tokenize's ids (llama.cpp 0c1e570, default flags but --no-escape: the text as it is, special tokens parsed) on llama.cpp's F16 conversion of the rwkv7 "
                   "fixture; a text that is not valid UTF-8 is given as hex",
           "command": "llama-tokenize -m rwkv7-F16.gguf -p TEXT --ids --no-escape --log-disable",
           "cases": cases}
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
