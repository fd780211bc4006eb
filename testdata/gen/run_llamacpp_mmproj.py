#!/usr/bin/env python3
"""Run llama.cpp's convert_hf_to_gguf.py --mmproj on multimodal convert fixtures.

For each fixture named with --only (a fixture of make_convert_fixtures.py whose
checkpoint holds a vision or audio tower, with its preprocessor_config.json among
the spec's extra_files) and each --outtype (default f32 f16 bf16 q8_0):
  1. with --refresh-extra-files, first write the spec's extra_files into the fixture
     folder and rewrite its manifest.json (the weights are not remade);
  2. assemble the model folder as run_llamacpp_convert.py does, in <work>/<fixture>-mmproj;
  3. from there, run
       <python> <llama.cpp>/convert_hf_to_gguf.py <dir_name> --mmproj --outtype T \\
           --model-name <fixture> --outfile mmproj-<fixture>-<T>.gguf
  4. describe the GGUF with dump_gguf_expected.py into
       <fixtures>/<fixture>/mmproj/expected-<T>.json

  python testdata/gen/run_llamacpp_mmproj.py --fixtures testdata/convert \\
      --llama-cpp <llama.cpp> --work /tmp/mmwork --only gemma3mm
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True, help="testdata/convert")
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (convert_hf_to_gguf.py, gguf-py/)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the converter")
    ap.add_argument("--work", required=True, help="scratch folder outside the repository")
    ap.add_argument("--only", nargs="+", required=True)
    ap.add_argument("--outtypes", nargs="*", default=["f32", "f16", "bf16", "q8_0"])
    ap.add_argument("--refresh-extra-files", action="store_true",
                    help="write the specs' extra_files and manifest.json first")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    import make_convert_fixtures as mk
    import dump_gguf_expected as dump
    from run_llamacpp_convert import versions

    fixtures = os.path.abspath(args.fixtures)
    work = os.path.abspath(args.work)
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    converter = os.path.join(os.path.abspath(args.llama_cpp), "convert_hf_to_gguf.py")
    made_with = versions(args.python, dict(os.environ), args.llama_cpp)
    failed = False
    for name in args.only:
        spec = mk.FIXTURES[name]
        if args.refresh_extra_files:
            for rel, obj in spec.get("extra_files", {}).items():
                mk.write_json(os.path.join(fixtures, name, rel), obj)
            mk.write_manifest(fixtures, name)
        wname = name + "-mmproj"
        wdir = os.path.join(work, wname)
        if os.path.isdir(wdir):
            shutil.rmtree(wdir)
        mk.assemble(fixtures, name, os.path.join(wdir, name))
        for t in args.outtypes:
            out = "mmproj-%s-%s.gguf" % (name, t.upper())
            cmd = [args.python, converter, name, "--mmproj", "--outtype", t, "--model-name", name, "--outfile", out]
            shown = "cd %s && %s" % (wname, " ".join(shlex.quote(c) for c in
                                                  ["python", "<llama.cpp>/convert_hf_to_gguf.py"] + cmd[2:]))
            log = os.path.join(work, "logs", "%s-%s.log" % (wname, t.upper()))
            with open(log, "w") as lf:
                lf.write(shown + "\n")
                lf.flush()
                p = subprocess.run(cmd, cwd=wdir, stdout=lf, stderr=subprocess.STDOUT)
            if p.returncode != 0:
                with open(log) as lf:
                    tail = lf.read().splitlines()[-4:]
                print(name, t, "FAILED", *tail, sep="\n  ", flush=True)
                failed = True
                continue
            desc = dump.describe(os.path.join(wdir, out))
            desc["made_with"] = OrderedDict(made_with, command=shown)
            exp_path = os.path.join(fixtures, name, "mmproj", "expected-%s.json" % t)
            os.makedirs(os.path.dirname(exp_path), exist_ok=True)
            with open(exp_path, "w", encoding="utf-8") as f:
                json.dump(desc, f, indent=1, ensure_ascii=False)
                f.write("\n")
            print(name, t, "ok", desc["file"]["sha256"][:16], flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
