#!/usr/bin/env bash
# Rerun llama.cpp's examples/convert_legacy_llama.py on testdata/meta (see its README) and rewrite its
# expected-*.json, default.json and extras.json:
#   testdata/gen/run_llamacpp_meta.sh <llama.cpp> <python with torch, numpy, sentencepiece>
# stories260K is converted from both layouts (single/ and split/); the script stops if their outputs differ.
set -euo pipefail
L=$1 PY=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
commit=$(git -C "$L" rev-parse --short HEAD 2>/dev/null || echo 0c1e570)
# run LAYOUT MODEL ARGS…: the script in $work/LAYOUT on its copy of MODEL.
run() { (cd "$work/$1" && PYTHONPATH="$L/gguf-py" "$PY" "$L/examples/convert_legacy_llama.py" "$2" "${@:3}" >/dev/null 2>&1); }
# expect FILE MODEL OUTTYPE DEST INPUT: gguf-py's description of FILE, with how it was made.
expect() {
  PYTHONPATH="$L/gguf-py" "$PY" - "$1" "$2" "$3" "$commit" "$root/testdata/gen/dump_gguf_expected.py" "$5" > "$4" <<'EOF'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("dump", sys.argv[5])
dump = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dump)
d = dump.describe(sys.argv[1])
model, t = sys.argv[2], sys.argv[3]
d["made_with"] = {"llama.cpp": sys.argv[4],
                  "command": f"python examples/convert_legacy_llama.py {model} --outtype {t} --outfile {t}.gguf",
                  "input": sys.argv[6]}
json.dump(d, sys.stdout, indent=1, ensure_ascii=False)
print()
EOF
}
# convert LAYOUT SUBDIR MODEL: every outtype and the default into $work/LAYOUT.
convert() {
  mkdir -p "$work/$1"
  cp -r "$root/testdata/meta/$2/$3" "$work/$1/"
  for t in f32 f16 q8_0; do run "$1" "$3" --outtype "$t" --outfile "$t.gguf"; done
  run "$1" "$3" # default outtype and file name, written beside the weights
}
convert single single stories260K
convert split split stories260K
convert moe moe mixtral-tiny
defaults=()
for t in f32 f16 q8_0; do
  cmp "$work/single/$t.gguf" "$work/split/$t.gguf"
  expect "$work/split/$t.gguf" stories260K "$t" "$root/testdata/meta/expected-$t.json" \
    "testdata/meta/single/stories260K and testdata/meta/split/stories260K (same output)"
  expect "$work/moe/$t.gguf" mixtral-tiny "$t" "$root/testdata/meta/moe/expected-$t.json" "testdata/meta/moe/mixtral-tiny"
done
describe_default() { # DIR: the one .gguf the default run wrote there
  local f
  f=$(cd "$1" && ls ./*.gguf)
  printf '{"file": "%s", "sha256": "%s"}' "${f#./}" "$(sha256sum "$1/$f" | cut -d' ' -f1)"
}
cmp "$work/single/stories260K/"*.gguf "$work/split/stories260K/"*.gguf
# A folder name the metadata heuristics read a size label from (the file name takes it, general.size_label not).
mkdir -p "$work/named"
cp -r "$root/testdata/meta/split/stories260K" "$work/named/Tiny-Llama-7B-chat"
run named Tiny-Llama-7B-chat
printf '{\n "about": "convert_legacy_llama.py MODEL (no --outtype, no --outfile): its default output type and file name; Tiny-Llama-7B-chat is a copy of split/stories260K",\n "stories260K": %s,\n "mixtral-tiny": %s,\n "Tiny-Llama-7B-chat": %s\n}\n' \
  "$(describe_default "$work/split/stories260K")" "$(describe_default "$work/moe/mixtral-tiny")" \
  "$(describe_default "$work/named/Tiny-Llama-7B-chat")" > "$root/testdata/meta/default.json"
# extras.json: the split folder with tokenizer.model moved to the folder above (as Meta ships it) must give
# expected-f32.json's bytes; with stories260K's tokenizer_config.json beside it, SpecialVocab adds its flags;
# and the --vocab-only file.
mkdir -p "$work/above" "$work/tc"
cp -r "$root/testdata/meta/split/stories260K" "$work/above/"
mv "$work/above/stories260K/tokenizer.model" "$work/above/"
run above stories260K --outtype f32 --outfile f32.gguf
cmp "$work/above/f32.gguf" "$work/split/f32.gguf"
cp -r "$root/testdata/meta/split/stories260K" "$work/tc/"
cp "$root/testdata/stories260K/source/tokenizer_config.json" "$work/tc/stories260K/"
run tc stories260K --outtype f32 --outfile f32.gguf
run split stories260K --vocab-only --outfile vocab.gguf
# The context-length heuristic and rope_theta: the split folder with other params.json, --outtype f16.
variants=(
  '{"dim": 64, "n_heads": 8, "n_layers": 3, "norm_eps": 1e-06}'
  '{"dim": 64, "n_heads": 8, "n_kv_heads": 4, "n_layers": 3, "norm_eps": 1e-05, "rope_theta": 1000000}'
  '{"dim": 64, "n_heads": 8, "n_kv_heads": 4, "n_layers": 3, "norm_eps": 1e-05, "rope_theta": 500000.0}'
  '{"dim": 64, "n_heads": 8, "n_kv_heads": 4, "n_layers": 3, "norm_eps": 1e-05, "rope_theta": null}'
)
params=""
for i in "${!variants[@]}"; do
  mkdir -p "$work/params$i"
  cp -r "$root/testdata/meta/split/stories260K" "$work/params$i/"
  printf '%s' "${variants[$i]}" > "$work/params$i/stories260K/params.json"
  run "params$i" stories260K --outtype f16 --outfile f16.gguf
  params+="$([ -n "$params" ] && printf ',')"$'\n'"  {\"params\": $(printf '%s' "${variants[$i]}" | "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), \"sha256\": \"$(sha256sum "$work/params$i/f16.gguf" | cut -d' ' -f1)\"}"
done
about="convert_legacy_llama.py on testdata/meta/split/stories260K: tokenizer_config is --outtype f32 with"
about+=" testdata/stories260K/source/tokenizer_config.json copied beside the weights; vocab_only is --vocab-only --outfile vocab.gguf;"
about+=" params are --outtype f16 with params.json replaced by each text"
printf '{\n "about": "%s",\n "tokenizer_config": {"sha256": "%s"},\n "vocab_only": {"sha256": "%s"},\n "params": [%s\n ]\n}\n' "$about" \
  "$(sha256sum "$work/tc/f32.gguf" | cut -d' ' -f1)" "$(sha256sum "$work/split/vocab.gguf" | cut -d' ' -f1)" "$params" \
  > "$root/testdata/meta/extras.json"
echo "files in $work"
