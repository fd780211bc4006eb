#!/usr/bin/env bash
# Encoder throughput per CPU-second, ggufkit beside ggml's reference
# quantizers in the same run (docs/performance.md, "Quantizer").
#
# Writes the quantizer benchmark's matrix (internal/benchweights: ROWS×4096
# float32, and its importance vector) to a temporary folder, compiles
# scripts/ggmlenc.c against a llama.cpp build made outside this repository,
# then for every type ggufkit encodes (with and without an importance matrix
# where the type uses one) times ggufkit (scripts/benchencode, one worker)
# and ggml (ggml_quantize_chunk, one thread) one after the other, best of
# REPS encodings each, and compares the two outputs byte for byte. It prints
# a Markdown table: MB of float32 input per CPU-second of the process, the
# ratio, and whether the bytes are the same. On a shared machine CPU-seconds
# compare where wall time does not; the load average is printed too.
#
# Environment:
#   LLAMA_CPP    llama.cpp's source tree (default /work/scratch/llama.cpp),
#                for ggml/include/ggml.h.
#   LLAMA_BUILD  the folder holding its libggml-base.so (default
#                /work/scratch/llama-build/bin). Build llama.cpp outside the
#                repo from the llama-cpp-python sdist as the reference data's
#                README says (cmake -DGGML_NATIVE=OFF for the portable build).
#   ROWS (1024), REPS (3), CASES (space-separated, default every case, e.g.
#   "Q4_K Q4_K+imatrix IQ2_XXS+imatrix").
#
# Usage: scripts/bench-encoders.sh
set -euo pipefail
cd "$(dirname "$0")/.."
llama_cpp=${LLAMA_CPP:-/work/scratch/llama.cpp}
llama_build=${LLAMA_BUILD:-/work/scratch/llama-build/bin}
rows=${ROWS:-1024}
reps=${REPS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-encoders.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/benchencode" ./scripts/benchencode
${CC:-cc} -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$llama_cpp/ggml/include" scripts/ggmlenc.c \
	-L"$llama_build" -lggml-base -Wl,-rpath,"$llama_build" -o "$tmp/ggmlenc"
"$tmp/benchencode" -dir "$tmp" -rows "$rows" -write
cases=${CASES:-$("$tmp/benchencode" -cases)}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${rows}×4096 float32, best of $reps, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| type | ggml MB/cpu-s | ggufkit MB/cpu-s | ggufkit ÷ ggml | same bytes |"
echo "| --- | --- | --- | --- | --- |"
for c in $cases; do
	ours=$("$tmp/benchencode" -dir "$tmp" -case "$c" -reps "$reps")
	theirs=$("$tmp/ggmlenc" "$tmp" "$c" "$reps")
	if [ "$theirs" = "-" ]; then
		echo "| $c | — | $ours | — | — |"
	else
		same=no
		cmp -s "$tmp/ggml-$c.bin" "$tmp/ggufkit-$c.bin" && same=yes
		echo "| $c | $theirs | $ours | $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }') | $same |"
	fi
	rm -f "$tmp/ggml-$c.bin" "$tmp/ggufkit-$c.bin"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
