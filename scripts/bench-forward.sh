#!/usr/bin/env bash
# Forward-pass speed beside llama.cpp's llama-bench (docs/performance.md,
# "Forward pass").
#
# Builds ggufkit and scripts/benchverify in a temporary folder (nothing is
# built or written inside the repo), generates the Llama-shaped 1.1B model
# (scripts/genllama: 22 layers, hidden 2048, random BF16 weights), converts
# it to F16 and Q8_0 and requantizes the F16 file to Q4_K_M with ggufkit,
# then for every model (those three, then any GGUF given as an argument,
# e.g. the reference models' files under ../shared/reference/*/gguf) runs
# benchverify (a prompt of PROMPT tokens in one batch, then GEN tokens one
# at a time, best of RUNS) and `llama-bench -p PROMPT -n GEN -t THREADS`
# one after the other, and prints both tokens-per-second figures side by
# side. On a shared machine only figures of the same run compare.
#
# Environment:
#   LLAMA_BENCH  llama.cpp's llama-bench (default
#                /work/scratch/llama-build/bin/llama-bench). This script does
#                not build llama.cpp: build it outside the repo from the
#                llama-cpp-python sdist as the reference data's README says.
#                Without it the llama.cpp columns stay empty.
#   BASE         a git revision: its benchverify is built too (git archive
#                into the temporary folder) and run in the same loop, so
#                before and after are measured under the same load.
#   MODELS       a folder holding llama1b-{F16,Q8_0,Q4_K_M}.gguf from an
#                earlier run, reused instead of generating them (~5 GB).
#   THREADS (2), PROMPT (128), GEN (32), RUNS (2).
#
# Usage: scripts/bench-forward.sh [MODEL.gguf …]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-2}
prompt=${PROMPT:-128}
gen=${GEN:-32}
runs=${RUNS:-2}
llama_bench=${LLAMA_BENCH:-/work/scratch/llama-build/bin/llama-bench}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-forward.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/ggufkit" ./cmd/ggufkit
go build -o "$tmp/benchverify" ./scripts/benchverify
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go build -o "$tmp/benchverify-base" ./scripts/benchverify)
fi

models=${MODELS:-}
if [ -z "$models" ]; then
	models=$tmp/models
	mkdir "$models"
	go run ./scripts/genllama -o "$models/llama1b" -layers 22 >/dev/null
	"$tmp/ggufkit" convert --quiet --outtype f16 --outfile "$models/llama1b-F16.gguf" "$models/llama1b" >/dev/null
	"$tmp/ggufkit" convert --quiet --outtype q8_0 --outfile "$models/llama1b-Q8_0.gguf" "$models/llama1b" >/dev/null
	"$tmp/ggufkit" quantize "$models/llama1b-F16.gguf" "$models/llama1b-Q4_K_M.gguf" Q4_K_M "$threads" >/dev/null
	rm -rf "$models/llama1b"
fi
files=("$models/llama1b-F16.gguf" "$models/llama1b-Q8_0.gguf" "$models/llama1b-Q4_K_M.gguf" "$@")

# ours BINARY MODEL prints "prompt-tok/s gen-tok/s prompt-CPU-s gen-CPU-s".
ours() {
	"$1" -threads "$threads" -prompt "$prompt" -gen "$gen" -runs "$runs" "$2" | awk '
		/^  (prompt|generation)/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "tokens/s") ts = $(i-1)
				if ($i == "(CPU") cpu = $(i+1)
			}
			out = out ts " " cpu " "
		}
		END { split(out, f, " "); print f[1], f[3], f[2], f[4] }'
}

# theirs MODEL prints "prompt-tok/s gen-tok/s" from llama-bench's CSV.
theirs() {
	if [ ! -x "$llama_bench" ]; then
		echo "- -"
		return
	fi
	LD_LIBRARY_PATH=$(dirname "$llama_bench")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$llama_bench" -m "$1" -t "$threads" -p "$prompt" -n "$gen" -r "$runs" -o csv 2>/dev/null | awk -F, '
		NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i }; next }
		{
			gsub(/"/, "")
			if ($col["n_prompt"] > 0) pp = sprintf("%.1f", $col["avg_ts"])
			else tg = sprintf("%.1f", $col["avg_ts"])
		}
		END { print (pp == "" ? "-" : pp), (tg == "" ? "-" : tg) }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else printf "-" }'; }

echo "# $(nproc) CPUs, $threads threads, prompt $prompt, generation $gen, best of $runs; $(go env GOVERSION)"
echo "# llama-bench: $([ -x "$llama_bench" ] && echo "$llama_bench" || echo "not found (LLAMA_BENCH)")"
header="| model | ggufkit pp$prompt tok/s (CPU s) | llama-bench pp$prompt | llama.cpp/ggufkit | ggufkit tg$gen tok/s (CPU s) | llama-bench tg$gen | llama.cpp/ggufkit |"
[ -n "${BASE:-}" ] && header="$header BASE pp$prompt (CPU s) | BASE tg$gen (CPU s) |"
echo "$header"
echo "$header" | sed -E 's/[^|]+/ --- /g'
for m in "${files[@]}"; do
	load=$(cut -d' ' -f1 /proc/loadavg)
	read -r opp otg opc otc < <(ours "$tmp/benchverify" "$m")
	read -r lpp ltg < <(theirs "$m")
	row="| $(basename "$m") (load $load) | $opp ($opc) | $lpp | $(ratio "$opp" "$lpp") | $otg ($otc) | $ltg | $(ratio "$otg" "$ltg") |"
	if [ -n "${BASE:-}" ]; then
		read -r bpp btg bpc btc < <(ours "$tmp/benchverify-base" "$m")
		row="$row $bpp ($bpc) | $btg ($btc) |"
	fi
	echo "$row"
done
