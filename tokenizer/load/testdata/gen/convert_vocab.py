#!/usr/bin/env python3
"""Run llama.cpp's converter on every case of ../cases.json and record what it writes.

    python3 gen/convert_vocab.py LLAMA_CPP_DIR > converter.json      (from tokenizer/load/testdata)
    python3 gen/convert_vocab.py LLAMA_CPP_DIR --only CASE... > new.json   (those cases rerun, the
                                                    others kept from converter.json; then mv new.json converter.json)

For each case the listed files are copied (".bz2" ones decompressed) into a fresh folder, and
`convert_hf_to_gguf.py DIR --vocab-only --outtype f32` runs on it. The output's tokenizer.* KVs are
recorded in file order: key, GGUF value type (array: element type and length; scalars and short
strings: the value) and the sha256 of the KV's bytes in the file (key, type and value,
little-endian GGUF v3), which is exactly how ggufkit's gguf.Encoder writes a KV. When the converter
refuses a folder, the case is {"error": the last line of its traceback}. Without PyTorch installed,
gen/torchstub (an import-only stand-in) is put on PYTHONPATH: a --vocab-only run with an explicit
--outtype reads no tensor.
"""
import bz2, hashlib, importlib.util, json, os, shutil, subprocess, sys, tempfile

from gguf import GGUFReader, GGUFValueType

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
llama = sys.argv[1]
cases = json.load(open(os.path.join(root, "cases.json")))
only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else None
previous = json.load(open(os.path.join(root, "converter.json"))) if only else {}
env = dict(os.environ)
if importlib.util.find_spec("torch") is None:
    env["PYTHONPATH"] = os.path.join(here, "torchstub") + os.pathsep + env.get("PYTHONPATH", "")

out = {}
for name, case in cases.items():
    if only is not None and name not in only:
        out[name] = previous[name]
        continue
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name)
        os.mkdir(src)
        for dst, rel in case["files"].items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(os.path.join(src, dst)), exist_ok=True)
            if path.endswith(".bz2"):
                with bz2.open(path) as r, open(os.path.join(src, dst), "wb") as w:
                    shutil.copyfileobj(r, w)
            else:
                shutil.copyfile(path, os.path.join(src, dst))
        gguf_path = os.path.join(tmp, name + ".gguf")
        run = subprocess.run([sys.executable, os.path.join(llama, "convert_hf_to_gguf.py"), src, "--vocab-only",
                              "--outtype", "f32", "--outfile", gguf_path, "--model-name", name],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            # The converter refused the folder: record its exception.
            out[name] = {"error": run.stderr.strip().splitlines()[-1]}
            continue
        reader = GGUFReader(gguf_path)
        raw = reader.data
        kvs = []
        for field in reader.fields.values():
            if not field.name.startswith("tokenizer."):
                continue
            size = sum(p.nbytes for p in field.parts)
            blob = bytes(raw[field.offset:field.offset + size])
            kv = {"key": field.name, "type": GGUFValueType(field.types[0]).name}
            if field.types[0] == GGUFValueType.ARRAY:
                kv["elem"] = GGUFValueType(field.types[1]).name if len(field.types) > 1 else "?"
                kv["len"] = len(field.data)
            else:
                value = field.contents()
                if not isinstance(value, str) or len(value) <= 80:
                    kv["value"] = value
            kv["sha256"] = hashlib.sha256(blob).hexdigest()
            kvs.append(kv)
        out[name] = kvs
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
