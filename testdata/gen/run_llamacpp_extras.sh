#!/usr/bin/env bash
# Rerun llama.cpp's converter for testdata/convert/stories260K-llamacpp.json:
# split outputs and vocab-only files of the bundled stories260K model.
#   testdata/gen/run_llamacpp_extras.sh <llama.cpp> <python with torch, transformers, sentencepiece>
set -euo pipefail
L=$1 PY=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
cp -r "$root/testdata/stories260K/source" "$work/stories260K-src"
cd "$work"
run() { PYTHONPATH="$L/gguf-py" "$PY" "$L/convert_hf_to_gguf.py" stories260K-src "$@" >/dev/null 2>&1; }
run --outtype f16 --model-name stories260K --split-max-tensors 20 --outfile split.gguf
run --outtype q8_0 --model-name stories260K --split-max-size 100K --no-tensor-first-split --outfile sz.gguf
run --outtype f32 --model-name stories260K --vocab-only --outfile vocab.gguf
run --outtype f32 --vocab-only
sha256sum split-*.gguf sz-*.gguf vocab.gguf stories260K-src/*.gguf
echo "files in $work"
