#!/usr/bin/env python3
"""Run llama.cpp's convert_lora_to_gguf.py on every adapter of testdata/lora and record what it wrote.

For each adapter folder (made by make_lora_fixtures.py; its manifest.json names the base fixture) and
each --outtype (default f32 f16 bf16 q8_0), run
    <python> <llama.cpp>/convert_lora_to_gguf.py <lora>/<name> --base <convert>/<base> \
        --outtype T --outfile <work>/<name>-<T>.gguf
and describe the GGUF with dump_gguf_expected.py into <lora>/<name>/expected-<T>.json. The adapter
folder's name is the converter's general.name. The GGUFs stay in <work>.

  python testdata/gen/run_llamacpp_lora.py --lora testdata/lora --convert testdata/convert \
      --llama-cpp <llama.cpp> --work /tmp/lorawork
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lora", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--llama-cpp", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--outtypes", nargs="*", default=["f32", "f16", "bf16", "q8_0"])
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(args.llama_cpp, "gguf-py"))
    from dump_gguf_expected import describe
    for name in sorted(os.listdir(args.lora)):
        man_path = os.path.join(args.lora, name, "manifest.json")
        if not os.path.exists(man_path) or (args.only and name not in args.only):
            continue
        with open(man_path) as f:
            man = json.load(f)
        for t in args.outtypes:
            out = os.path.join(args.work, f"{name}-{t}.gguf")
            cmd = [args.python, os.path.join(args.llama_cpp, "convert_lora_to_gguf.py"),
                   os.path.join(args.lora, name), "--base", os.path.join(args.convert, man["base"]),
                   "--outtype", t, "--outfile", out]
            with open(os.path.join(args.work, f"{name}-{t}.log"), "w") as log:
                subprocess.run(cmd, env=env, check=True, stdout=log, stderr=subprocess.STDOUT)
            with open(os.path.join(args.lora, name, f"expected-{t}.json"), "w") as f:
                json.dump(describe(out), f, indent=1, ensure_ascii=False)
                f.write("\n")
            print(name, t, "ok")


if __name__ == "__main__":
    main()
