#!/usr/bin/env python3
"""Run llama.cpp's convert_hf_to_gguf.py on every convert fixture and record what it wrote.

For each fixture of make_convert_fixtures.py and each --outtype (default f32 f16 bf16 q8_0):
  1. assemble the model folder the way the Go test must (manifest.json "assemble"),
     as <work>/<fixture>/<dir_name>;
  2. from <work>/<fixture>, run
       <python> <llama.cpp>/convert_hf_to_gguf.py <dir_name> --outtype T \
           --model-name <fixture> --outfile <fixture>-<T>.gguf
     (the GGUFs stay in <work>: they are not committed);
  3. describe the GGUF with dump_gguf_expected.py into
       <fixtures>/<fixture>/expected-<T>.json
     (with --compare, instead compare with the existing expected JSON and report).
The fixture with a PyTorch copy is also converted from pytorch/pytorch_model.bin, and
the two GGUFs are compared byte for byte. Commands, logs and a summary.json go to <work>.

The converter runs with the interpreter's transformers, except for a fixture whose
spec names converter_transformers V: then the folder given as --transformers-overlay V=DIR
(a `pip install --no-deps --target DIR transformers==V "huggingface_hub<1.0"
"tokenizers>=0.22,<=0.23.0"`) is put first on PYTHONPATH, and the version is checked.
Each expected JSON records the versions it was made with ("made_with").

  python testdata/gen/run_llamacpp_convert.py --fixtures testdata/convert \
      --llama-cpp <llama.cpp> --work /tmp/convwork --transformers-overlay 4.57.6=/tmp/tf457
"""
import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
# The llama.cpp source used (the copy vendored in the PyPI sdist llama-cpp-python==0.3.36).
LLAMA_CPP_COMMIT = "0c1e570"
sys.path.insert(0, HERE)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions(python, env, llama_cpp):
    """The versions the converter runs with (transformers, torch, gguf-py) and the llama.cpp tree."""
    code = ("import json, torch, transformers; "
            "print(json.dumps({'transformers': transformers.__version__, 'torch': torch.__version__}))")
    out = subprocess.run([python, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    v = json.loads(out)
    with open(os.path.join(llama_cpp, "gguf-py", "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("version"):
                v["gguf-py"] = line.split("=", 1)[1].strip().strip('"')
                break
    v["llama.cpp"] = LLAMA_CPP_COMMIT
    return OrderedDict((k, v[k]) for k in ("llama.cpp", "gguf-py", "transformers", "torch"))


def kv_diff(a, b):
    """Human-readable differences between two expected JSONs (KV and tensors)."""
    out = []
    ka = OrderedDict((e["key"], e) for e in a["kv"])
    kb = OrderedDict((e["key"], e) for e in b["kv"])
    if list(ka) != list(kb):
        out.append("kv order/keys: only in first %s, only in second %s" % (
            [k for k in ka if k not in kb], [k for k in kb if k not in ka]))
    for k in ka:
        if k in kb and ka[k] != kb[k]:
            out.append("kv %s: %s != %s" % (k, json.dumps(ka[k])[:200], json.dumps(kb[k])[:200]))
    ta = [(t["name"], t["type"], t["shape"], t["sha256"]) for t in a["tensors"]]
    tb = [(t["name"], t["type"], t["shape"], t["sha256"]) for t in b["tensors"]]
    if [t[0] for t in ta] != [t[0] for t in tb]:
        out.append("tensor order/names differ")
    da = {t[0]: t for t in ta}
    for t in tb:
        if t[0] in da and da[t[0]] != t:
            out.append("tensor %s differs: %s vs %s" % (t[0], da[t[0]][1:3], t[1:3]))
    return out


def quantize_q4km(args, fixtures, work, wdir, name, made_with, res, cmds, dump, mk):
    """llama-quantize of the fixture's F16 conversion to Q4_K_M (one thread), recorded as
    expected-Q4_K_M.json: what ggufkit's one-pass --outtype Q4_K_M must equal. A float32
    checkpoint is quantized from its F32 conversion instead: the one pass quantizes the stored
    values, which F16 would round (a 16-bit checkpoint's values pass through F16 unchanged)."""
    src_type = "F32" if mk.FIXTURES[name]["dtype"] == "float32" else "F16"
    f16 = "%s-%s.gguf" % (name, src_type)
    out = "%s-Q4_K_M.gguf" % name
    if not os.path.isfile(os.path.join(wdir, f16)):
        return
    cmd = [os.path.abspath(args.llama_quantize), f16, out, "Q4_K_M", "1"]
    shown = "cd %s && <llama-build>/bin/llama-quantize %s %s Q4_K_M 1" % (name, f16, out)
    cmds.append(shown)
    log = os.path.join(work, "logs", "%s-Q4_K_M.log" % name)
    with open(log, "w") as lf:
        lf.write(shown + "\n")
        lf.flush()
        p = subprocess.run(cmd, cwd=wdir, stdout=lf, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        res["safetensors/Q4_K_M"] = OrderedDict([("ok", False), ("exit", p.returncode)])
        print(name, "Q4_K_M FAILED", flush=True)
        return
    desc = dump.describe(os.path.join(wdir, out))
    res["safetensors/Q4_K_M"] = OrderedDict([("ok", True), ("sha256", desc["file"]["sha256"])])
    exp_path = os.path.join(fixtures, name, "expected-Q4_K_M.json")
    if args.compare:
        if os.path.isfile(exp_path):
            with open(exp_path, encoding="utf-8") as f:
                same = json.load(f)["file"]["sha256"] == desc["file"]["sha256"]
            res["safetensors/Q4_K_M"]["same_as_expected"] = same
    else:
        desc["made_with"] = OrderedDict(made_with, command=shown)
        with open(exp_path, "w", encoding="utf-8") as f:
            json.dump(desc, f, indent=1, ensure_ascii=False)
            f.write("\n")
    print(name, "Q4_K_M ok", desc["file"]["sha256"][:16], flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True, help="testdata/convert")
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (convert_hf_to_gguf.py, gguf-py/)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the converter")
    ap.add_argument("--work", required=True, help="scratch folder outside the repository")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--outtypes", nargs="*", default=["f32", "f16", "bf16", "q8_0"])
    ap.add_argument("--llama-quantize", metavar="PATH",
                    help="llama-quantize binary: also write expected-Q4_K_M.json, from "
                         "`llama-quantize <fixture>-F16.gguf <fixture>-Q4_K_M.gguf Q4_K_M 1` in the work folder")
    ap.add_argument("--compare", action="store_true",
                    help="do not write expected JSONs; compare with the committed ones")
    ap.add_argument("--transformers-overlay", action="append", default=[], metavar="VERSION=DIR",
                    help="a --target install of transformers VERSION, for fixtures with converter_transformers")
    args = ap.parse_args()
    overlays = dict(o.split("=", 1) for o in args.transformers_overlay)

    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    import make_convert_fixtures as mk
    import dump_gguf_expected as dump

    fixtures = os.path.abspath(args.fixtures)
    work = os.path.abspath(args.work)
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    converter = os.path.join(os.path.abspath(args.llama_cpp), "convert_hf_to_gguf.py")
    summary = OrderedDict()
    cmds = []

    for name in (args.only or list(mk.FIXTURES)):
        spec = mk.FIXTURES[name]
        env = dict(os.environ)
        want = spec.get("converter_transformers")
        if want:
            if want not in overlays:
                sys.exit("%s: needs --transformers-overlay %s=DIR" % (name, want))
            env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(overlays[want])] +
                                                ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        made_with = versions(args.python, env, args.llama_cpp)
        if want and made_with["transformers"] != want:
            sys.exit("%s: converter sees transformers %s, not %s" % (name, made_with["transformers"], want))
        variants = [("safetensors", name)]
        if spec.get("pytorch_copy"):
            variants.append(("pytorch", name + "-pytorch"))
        res = summary.setdefault(name, OrderedDict())
        for weights, wname in variants:
            wdir = os.path.join(work, wname)
            if os.path.isdir(wdir):
                shutil.rmtree(wdir)
            mk.assemble(fixtures, name, os.path.join(wdir, name), weights=weights)
            for t in args.outtypes:
                out = "%s-%s.gguf" % (name, t.upper())
                cmd = [args.python, converter, name, "--outtype", t, "--model-name", name, "--outfile", out]
                shown = "cd %s && %s" % (wname, " ".join(shlex.quote(c) for c in
                                                      ["python", "<llama.cpp>/convert_hf_to_gguf.py"] + cmd[2:]))
                cmds.append(shown)
                log = os.path.join(work, "logs", "%s-%s.log" % (wname, t.upper()))
                with open(log, "w") as lf:
                    lf.write(shown + "\n")
                    lf.flush()
                    p = subprocess.run(cmd, cwd=wdir, stdout=lf, stderr=subprocess.STDOUT, env=env)
                key = "%s/%s" % (weights, t)
                if p.returncode != 0:
                    with open(log) as lf:
                        tail = lf.read().splitlines()[-6:]
                    res[key] = OrderedDict([("ok", False), ("exit", p.returncode), ("log_tail", tail)])
                    print(name, weights, t, "FAILED", tail[-1] if tail else "", flush=True)
                    continue
                gguf_path = os.path.join(wdir, out)
                desc = dump.describe(gguf_path)
                entry = OrderedDict([("ok", True), ("size", desc["file"]["size"]), ("sha256", desc["file"]["sha256"])])
                exp_path = os.path.join(fixtures, name, "expected-%s.json" % t)
                if weights == "safetensors" and not args.compare:
                    desc["made_with"] = OrderedDict(made_with, command=shown)
                    with open(exp_path, "w", encoding="utf-8") as f:
                        json.dump(desc, f, indent=1, ensure_ascii=False)
                        f.write("\n")
                elif os.path.isfile(exp_path):
                    with open(exp_path, encoding="utf-8") as f:
                        exp = json.load(f)
                    entry["same_as_expected"] = exp["file"]["sha256"] == desc["file"]["sha256"]
                    if not entry["same_as_expected"]:
                        entry["diff"] = kv_diff(exp, desc)
                res[key] = entry
                print(name, weights, t, "ok", desc["file"]["sha256"][:16], entry.get("same_as_expected", ""), flush=True)
            if args.llama_quantize and weights == "safetensors":
                quantize_q4km(args, fixtures, work, wdir, name, made_with, res, cmds, dump, mk)

    with open(os.path.join(work, "commands.txt"), "w") as f:
        f.write("\n".join(cmds) + "\n")
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
