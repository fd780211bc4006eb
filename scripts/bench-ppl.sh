#!/usr/bin/env bash
# Perplexity and importance-matrix speed beside llama.cpp's llama-perplexity
# and llama-imatrix (docs/performance.md, "perplexity and imatrix").
#
# Builds ggufkit in a temporary folder, then for each MODEL.gguf runs, one
# after the other with THREADS threads and a context of CTX, `ggufkit
# perplexity` and `llama-perplexity`, `ggufkit imatrix` and `llama-imatrix`
# over TEXT (default: perplexity/testdata/text.txt repeated REPEAT times),
# and prints wall seconds and evaluated tokens per second side by side,
# with both tools' final perplexity. On a shared machine only figures of
# the same run compare.
#
# Environment:
#   LLAMA_BIN  folder with llama.cpp's llama-perplexity and llama-imatrix
#              (default /work/scratch/llama-build/bin; built outside the
#              repo from the llama-cpp-python sdist as the reference data's
#              README says). Without them the llama.cpp columns stay empty.
#   THREADS (2), CTX (128), REPEAT (4), TEXT, CHUNKS (all: score at most that many chunks).
#
# Usage: scripts/bench-ppl.sh MODEL.gguf…   (default: ../shared's tiny-llama and stories260K F32)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-2}
ctx=${CTX:-128}
chunks=()
[ -z "${CHUNKS:-}" ] || chunks=(--chunks "$CHUNKS")
bin=${LLAMA_BIN:-/work/scratch/llama-build/bin}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-ppl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ggufkit" ./cmd/ggufkit
text=${TEXT:-}
if [ -z "$text" ]; then
	text=$tmp/text.txt
	for _ in $(seq "${REPEAT:-4}"); do cat perplexity/testdata/text.txt; done >"$text"
fi
[ $# -gt 0 ] || set -- ../shared/reference/tiny-llama/gguf/tiny-llama-F32.gguf ../shared/reference/stories260K/gguf/stories260K-F32.gguf
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), $(git rev-parse --short HEAD), $threads threads, context $ctx"
printf '%-28s %-20s %9s %9s %12s\n' model tool seconds tok/s PPL
timed() { # LOG CMD...: runs CMD with its output in LOG, prints the wall seconds
	local log=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"$@" >"$log" 2>&1 || { echo "failed: $*" >&2; tail -5 "$log" >&2; echo nan; return; }
	t1=$(date +%s.%N)
	awk "BEGIN { printf \"%.2f\", $t1 - $t0 }"
}
for model in "$@"; do
	name=$(basename "$model" .gguf)
	# The evaluated tokens: whole chunks of the tokenized text.
	ntok=$("$tmp/ggufkit" tokenize --plain "$model" <"$text" | wc -w)
	nchunks=$((ntok / ctx))
	[ -z "${CHUNKS:-}" ] || nchunks=$((CHUNKS < nchunks ? CHUNKS : nchunks))
	tokens=$((nchunks * ctx))
	row() { # TOOL SECONDS LOG
		local ppl
		ppl=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$3" | tail -1)
		printf '%-28s %-20s %9s %9s %12s\n' "$name" "$1" "$2" "$(awk "BEGIN { if ($2 > 0) printf \"%.0f\", $tokens / $2; else print \"-\" }")" "${ppl:--}"
	}
	s=$(timed "$tmp/p.log" "$tmp/ggufkit" perplexity -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}")
	row "ggufkit perplexity" "$s" "$tmp/p.log"
	if [ -x "$bin/llama-perplexity" ]; then
		s=$(timed "$tmp/lp.log" "$bin/llama-perplexity" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads" "${chunks[@]}")
		row "llama-perplexity" "$s" "$tmp/lp.log"
	fi
	s=$(timed "$tmp/i.log" "$tmp/ggufkit" imatrix -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}" -o "$tmp/i.gguf")
	row "ggufkit imatrix" "$s" "$tmp/i.log"
	if [ -x "$bin/llama-imatrix" ]; then
		s=$(timed "$tmp/li.log" "$bin/llama-imatrix" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads" "${chunks[@]}" -o "$tmp/li.gguf")
		row "llama-imatrix" "$s" "$tmp/li.log"
	fi
done
