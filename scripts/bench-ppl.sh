#!/usr/bin/env bash
# Perplexity and importance-matrix speed beside llama.cpp's llama-perplexity
# and llama-imatrix (docs/performance.md, "perplexity and imatrix").
#
# Builds ggufkit in a temporary folder, then for each MODEL.gguf runs, one
# after the other with THREADS threads and a context of CTX, `ggufkit
# perplexity` and `llama-perplexity`, `ggufkit imatrix` and `llama-imatrix`
# over TEXT (default: perplexity/testdata/text.txt repeated REPEAT times),
# and prints wall seconds, evaluated tokens per second and CPU seconds (user
# + system) side by side, with both tools' final perplexity. On a shared
# machine only figures of the same run compare, and CPU seconds vary least.
#
# Environment:
#   LLAMA_BIN  folder with llama.cpp's llama-perplexity and llama-imatrix
#              (default /work/scratch/llama-build/bin; built outside the
#              repo from the llama-cpp-python sdist as the reference data's
#              README says). Without them the llama.cpp columns stay empty.
#   BASE       a git revision: its ggufkit is built too (git archive into
#              the temporary folder) and run before ours for each tool, so
#              before and after are measured under the same load.
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
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go build -o "$tmp/ggufkit-base" ./cmd/ggufkit)
fi
text=${TEXT:-}
if [ -z "$text" ]; then
	text=$tmp/text.txt
	for _ in $(seq "${REPEAT:-4}"); do cat perplexity/testdata/text.txt; done >"$text"
fi
[ $# -gt 0 ] || set -- ../shared/reference/tiny-llama/gguf/tiny-llama-F32.gguf ../shared/reference/stories260K/gguf/stories260K-F32.gguf
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), $(git rev-parse --short HEAD), $threads threads, context $ctx"
printf '%-28s %-24s %9s %9s %9s %12s\n' model tool seconds tok/s CPU-s PPL
timed() { # LOG CMD...: runs CMD with its output in LOG, prints the wall and CPU seconds
	local log=$1 t
	shift
	t=$( { TIMEFORMAT='%R %U %S'; time "$@" >"$log" 2>&1; } 2>&1 ) || { echo "failed: $*" >&2; tail -5 "$log" >&2; echo nan nan; return; }
	awk -v t="$t" 'BEGIN { split(t, f, " "); printf "%.2f %.2f", f[1], f[2] + f[3] }'
}
for model in "$@"; do
	name=$(basename "$model" .gguf)
	# The evaluated tokens: whole chunks of the tokenized text.
	ntok=$("$tmp/ggufkit" tokenize --plain "$model" <"$text" | wc -w)
	nchunks=$((ntok / ctx))
	[ -z "${CHUNKS:-}" ] || nchunks=$((CHUNKS < nchunks ? CHUNKS : nchunks))
	tokens=$((nchunks * ctx))
	row() { # TOOL "SECONDS CPU" LOG
		local ppl secs cpu
		ppl=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$3" | tail -1)
		read -r secs cpu <<<"$2"
		printf '%-28s %-24s %9s %9s %9s %12s\n' "$name" "$1" "$secs" "$(awk "BEGIN { if ($secs > 0) printf \"%.0f\", $tokens / $secs; else print \"-\" }")" "$cpu" "${ppl:--}"
	}
	if [ -n "${BASE:-}" ]; then
		s=$(timed "$tmp/bp.log" "$tmp/ggufkit-base" perplexity -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}")
		row "ggufkit@BASE perplexity" "$s" "$tmp/bp.log"
	fi
	s=$(timed "$tmp/p.log" "$tmp/ggufkit" perplexity -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}")
	row "ggufkit perplexity" "$s" "$tmp/p.log"
	if [ -x "$bin/llama-perplexity" ]; then
		s=$(timed "$tmp/lp.log" "$bin/llama-perplexity" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads" "${chunks[@]}")
		row "llama-perplexity" "$s" "$tmp/lp.log"
	fi
	if [ -n "${BASE:-}" ]; then
		s=$(timed "$tmp/bi.log" "$tmp/ggufkit-base" imatrix -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}" -o "$tmp/bi.gguf")
		row "ggufkit@BASE imatrix" "$s" "$tmp/bi.log"
	fi
	s=$(timed "$tmp/i.log" "$tmp/ggufkit" imatrix -m "$model" -f "$text" -c "$ctx" -t "$threads" "${chunks[@]}" -o "$tmp/i.gguf")
	row "ggufkit imatrix" "$s" "$tmp/i.log"
	if [ -x "$bin/llama-imatrix" ]; then
		s=$(timed "$tmp/li.log" "$bin/llama-imatrix" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads" "${chunks[@]}" -o "$tmp/li.gguf")
		row "llama-imatrix" "$s" "$tmp/li.log"
	fi
	if [ -n "${BASE:-}" ] && ! cmp -s "$tmp/bi.gguf" "$tmp/i.gguf"; then
		echo "$name: the imatrix files of BASE and HEAD differ" >&2
	fi
done
