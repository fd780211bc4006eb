#!/usr/bin/env python3
"""Runs gguf-py's gguf_new_metadata.py and gguf_set_metadata.py on the cases of
`ggufkit meta`'s golden test and records the sha256 and size of each output,
and what gguf-py's GGUFReader reads back for the edited keys.

    PY=/path/to/venv/bin/python python3 testdata/gen/make_meta_golden.py LLAMA_CPP > testdata/metaedit/expected.json

LLAMA_CPP is a llama.cpp checkout (commit 0c1e570): the scripts are run from its
gguf-py (gguf 0.19.0) with the interpreter $PY. Run from the repository root.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

G = "testdata/gguf/"
M = "testdata/metaedit/"
# (name, input, ggufkit meta flags, gguf-py script, its flags, keys to read back)
CASES = [
    ("rename", G + "stories260K-Q8_0.gguf", ["--general-name", "Renamed model"],
     "new", ["--general-name", "Renamed model"], ["general.name"]),
    ("vocab-many", G + "ggml-vocab-llama-spm.gguf",
     ["--general-description", "a vocab", "--chat-template-file", M + "chat_template.jinja",
      "--special-token-by-id", "eos=2", "--special-token", "bos=<s>", "--pre-tokenizer", "default",
      "--remove-metadata", "general.name"],
     "new", ["--general-description", "a vocab", "--chat-template-file", M + "chat_template.jinja",
             "--special-token-by-id", "eos", "2", "--special-token", "bos", "<s>", "--pre-tokenizer", "default",
             "--remove-metadata", "general.name", "--force"],
     ["general.description", "tokenizer.chat_template", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.pre", "general.name"]),
    ("template-config", G + "stories260K-Q8_0.gguf", ["--chat-template-config", M + "tokenizer_config.json", "--special-token", "padding=<unk>"],
     "new", ["--chat-template-config", M + "tokenizer_config.json", "--special-token", "padding", "<unk>"],
     ["tokenizer.chat_template", "tokenizer.ggml.padding_token_id"]),
    ("template-string", G + "test-le-v3.gguf", ["--chat-template", "{{ messages }}", "--general-name", "x"],
     "new", ["--chat-template", "{{ messages }}", "--general-name", "x"], ["tokenizer.chat_template", "general.name"]),
    ("kvtypes-le", G + "kvtypes-le-v3.gguf", ["--general-name", "all types"],
     "new", ["--general-name", "all types"], ["general.name"]),
    ("kvtypes-be", G + "kvtypes-be-v3.gguf", ["--general-name", "all types"],
     "new", ["--general-name", "all types"], ["general.name"]),
    ("kvtypes-v2", G + "kvtypes-le-v2.gguf", ["--remove-metadata", "general.name"],
     "new", ["--remove-metadata", "general.name", "--force"], ["general.name"]),
    ("set-in-place", G + "stories260K-Q8_0.gguf", ["--set", "llama.context_length=64"],
     "set", ["--force", "llama.context_length", "64"], ["llama.context_length"]),
    ("set-float-in-place", G + "stories260K-Q8_0.gguf", ["--set", "llama.attention.layer_norm_rms_epsilon=0.001"],
     "set", ["--force", "llama.attention.layer_norm_rms_epsilon", "0.001"], ["llama.attention.layer_norm_rms_epsilon"]),
]


def readback(path, keys):
    out = subprocess.run([os.environ["PY"], "-c", """
import json, sys
from gguf import GGUFReader
r = GGUFReader(sys.argv[1])
res = {}
for k in sys.argv[2:]:
    f = r.get_field(k)
    v = None if f is None else f.contents()
    res[k] = v if not isinstance(v, float) else repr(v)
print(json.dumps(res))
""", path] + keys, check=True, stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=GGUF_PY)).stdout
    return json.loads(out)


llama = sys.argv[1]
GGUF_PY = os.path.join(llama, "gguf-py")
scripts = {"new": "gguf_new_metadata.py", "set": "gguf_set_metadata.py"}
res = []
with tempfile.TemporaryDirectory() as tmp:
    for name, src, ours, script, theirs, keys in CASES:
        out = os.path.join(tmp, name + ".gguf")
        cmd = [os.environ["PY"], os.path.join(GGUF_PY, "gguf", "scripts", scripts[script])]
        if script == "new":
            cmd += [src, out] + theirs
        else:
            shutil.copyfile(src, out)
            cmd += [out] + theirs
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=GGUF_PY))
        data = open(out, "rb").read()
        res.append({"name": name, "input": src, "args": ours, "in_place": script == "set",
                    "reference": [scripts[script]] + theirs, "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(), "gguf_py_reads": readback(out, keys)})
print(json.dumps(res, indent=1, ensure_ascii=False))
