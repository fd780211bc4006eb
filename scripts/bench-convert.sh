#!/usr/bin/env bash
# End-to-end conversion benchmark (docs/performance.md, "Convert"): writes a
# Llama-shaped BF16 checkpoint with scripts/genllama (default 22 layers,
# about 2 GB), then times `ggufkit convert` to F16, Q8_0 and Q4_K_M next to
# `cp` of the same weights file, each with the page cache warm. Reports
# seconds, MB/s (source bytes / wall time) and peak RSS (GNU time).
#
# Usage: scripts/bench-convert.sh [LAYERS]   (needs ~3× the model size free in ${TMPDIR:-/tmp})
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${1:-22}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-convert.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ggufkit" ./cmd/ggufkit
go run ./scripts/genllama -o "$tmp/model" -layers "$layers"
src="$tmp/model/model.safetensors"
bytes=$(stat -c %s "$src")
cat "$src" > /dev/null # warm the cache
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), source $((bytes / 1048576)) MiB BF16"
printf '%-22s %8s %8s %8s %13s\n' command seconds MB/s vs_cp peak_RSS_MiB
run() { # NAME CMD...
	local name=$1
	shift
	local t0 t1 secs rss
	t0=$(date +%s.%N)
	if [ -x /usr/bin/time ]; then
		rss=$(/usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1)
	else
		"$@" >/dev/null
		rss=0
	fi
	t1=$(date +%s.%N)
	secs=$(awk "BEGIN { print $t1 - $t0 }")
	[ -n "${cp_secs:-}" ] || cp_secs=$secs
	printf '%-22s %8.2f %8.0f %8.2f %13.1f\n' "$name" "$secs" "$(awk "BEGIN { print $bytes / 1e6 / $secs }")" \
		"$(awk "BEGIN { print $cp_secs / $secs }")" "$(awk "BEGIN { print $rss / 1024 }")"
}
run "cp" cp "$src" "$tmp/copy.safetensors"
rm -f "$tmp/copy.safetensors"
for t in f16 q8_0 Q4_K_M; do
	run "convert --outtype $t" "$tmp/ggufkit" convert --quiet --outtype "$t" --outfile "$tmp/out-$t.gguf" "$tmp/model"
	rm -f "$tmp/out-$t.gguf"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
