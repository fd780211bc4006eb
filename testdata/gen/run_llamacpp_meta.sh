#!/usr/bin/env bash
# Rerun llama.cpp's examples/convert_legacy_llama.py on testdata/meta (see its README) and rewrite
# testdata/meta/expected-{f32,f16,q8_0}.json and default.json.
#   testdata/gen/run_llamacpp_meta.sh <llama.cpp> <python with torch, numpy, sentencepiece>
# Both layouts (single/ and split/) are converted; the script stops if their outputs differ.
set -euo pipefail
L=$1 PY=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
run() { (cd "$work/$1" && PYTHONPATH="$L/gguf-py" "$PY" "$L/examples/convert_legacy_llama.py" stories260K "${@:2}" >/dev/null 2>&1); }
commit=$(git -C "$L" rev-parse --short HEAD 2>/dev/null || echo 0c1e570)
for layout in single split; do
  mkdir -p "$work/$layout"
  cp -r "$root/testdata/meta/$layout/stories260K" "$work/$layout/"
  for t in f32 f16 q8_0; do run "$layout" --outtype "$t" --outfile "$t.gguf"; done
  run "$layout" # default outtype and file name, written beside the weights
done
for t in f32 f16 q8_0; do
  cmp "$work/single/$t.gguf" "$work/split/$t.gguf"
  PYTHONPATH="$L/gguf-py" "$PY" - "$work/split/$t.gguf" "$t" "$commit" "$root/testdata/gen/dump_gguf_expected.py" \
    > "$root/testdata/meta/expected-$t.json" <<'EOF'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("dump", sys.argv[4])
dump = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dump)
d = dump.describe(sys.argv[1])
d["made_with"] = {"llama.cpp": sys.argv[3],
                  "command": f"python examples/convert_legacy_llama.py stories260K --outtype {sys.argv[2]} --outfile {sys.argv[2]}.gguf",
                  "input": "testdata/meta/single/stories260K and testdata/meta/split/stories260K (same output)"}
json.dump(d, sys.stdout, indent=1, ensure_ascii=False)
print()
EOF
done
def=$(cd "$work/split/stories260K" && ls *.gguf)
cmp "$work/single/stories260K/$def" "$work/split/stories260K/$def"
sum=$(sha256sum "$work/split/stories260K/$def" | cut -d' ' -f1)
printf '{\n "about": "convert_legacy_llama.py stories260K (no --outtype, no --outfile): its default output type and file name",\n "file": "%s",\n "sha256": "%s"\n}\n' "$def" "$sum" > "$root/testdata/meta/default.json"
echo "files in $work"
