#!/usr/bin/env bash
# End-to-end benchmark of the source readers (docs/performance.md, "Source
# readers"): for each size, write a BF16 safetensors file with
# scripts/genbf16, then time `ggufkit inspect --checksum` (every tensor read
# as float32 and hashed) next to `cat FILE > /dev/null`, with the file's
# pages first dropped from the page cache (cold: only this file's pages,
# through dd iflag=nocache) and then cached (warm).
#
# Reports MB/s (file bytes / wall time), the CPU seconds used (user+sys,
# from GNU time: a loaded machine disturbs them less than the wall time) and
# memory: peak RSS (GNU time's "Maximum resident set size" when
# /usr/bin/time exists, else the last VmHWM sample) and, sampled every 50 ms
# from /proc, the peaks of RssAnon (the process's own memory) and RssFile
# (mapped file pages: clean page cache, which the kernel may drop at will).
#
# Usage: scripts/bench-readers.sh [MiB ...]     (default: 1024 2048 4096)
# Needs about the largest size free in ${TMPDIR:-/tmp}.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 2048 4096)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-readers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/ggufkit" ./cmd/ggufkit
go build -o "$tmp/genbf16" ./scripts/genbf16
gnutime=
[ -x /usr/bin/time ] && gnutime=/usr/bin/time

# sample PID: "RssAnon RssFile VmHWM" of /proc/PID/status in KiB (0 0 0
# once the process is gone).
sample() {
	awk '$1 == "RssAnon:" { a = $2 } $1 == "RssFile:" { f = $2 } $1 == "VmHWM:" { h = $2 }
		END { print a + 0, f + 0, h + 0 }' "/proc/$1/status" 2>/dev/null || echo 0 0 0
}

# calc EXPR: floating-point arithmetic.
calc() { awk "BEGIN { print $1 }"; }

# measure CMD ARGS…: runs the command (stdout discarded) and sets
# secs, cpu ("-" without GNU time), rss, anon, file (KiB).
measure() {
	local start end pid tpid hwm a f h u s
	anon=0 file=0 hwm=0
	start=$(date +%s.%N)
	if [ -n "$gnutime" ]; then
		"$gnutime" -f '%M %U %S' -o "$tmp/time.out" "$@" >/dev/null &
		tpid=$!
		pid=
		while [ -z "$pid" ] && kill -0 "$tpid" 2>/dev/null; do
			pid=$(cat "/proc/$tpid/task/$tpid/children" 2>/dev/null | awk '{ print $1 }')
		done
	else
		"$@" >/dev/null &
		tpid=$!
		pid=$tpid
	fi
	while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
		read -r a f h < <(sample "$pid")
		((a > anon)) && anon=$a
		((f > file)) && file=$f
		((h > hwm)) && hwm=$h
		sleep 0.05
	done
	wait "$tpid"
	end=$(date +%s.%N)
	secs=$(calc "$end - $start")
	rss=$hwm cpu=-
	if [ -n "$gnutime" ]; then
		read -r rss u s < <(tail -n 1 "$tmp/time.out")
		cpu=$(calc "$u + $s")
	fi
	return 0
}

uncache() { dd if="$1" iflag=nocache count=0 status=none; }

echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)"
printf '%-8s %-5s %-19s %8s %6s %6s %6s %13s %12s %12s\n' size cache command seconds MB/s ratio cpu_s peak_RSS_MiB RssAnon_MiB RssFile_MiB
for mib in "${sizes[@]}"; do
	model="$tmp/model.safetensors"
	"$tmp/genbf16" -o "$model" -mib "$mib"
	bytes=$(stat -c %s "$model")
	for cache in cold warm; do
		[ "$cache" = warm ] && cat "$model" >/dev/null
		[ "$cache" = cold ] && uncache "$model"
		measure cat "$model"
		catrate=$(calc "$bytes / $secs / 1e6")
		printf '%-8s %-5s %-19s %8.2f %6.0f %6s %6s %13.1f %12.1f %12.1f\n' "${mib}MiB" "$cache" "cat" "$secs" "$catrate" "1" "$cpu" \
			"$(calc "$rss / 1024")" "$(calc "$anon / 1024")" "$(calc "$file / 1024")"
		[ "$cache" = cold ] && uncache "$model"
		measure "$tmp/ggufkit" inspect --checksum --json "$model"
		rate=$(calc "$bytes / $secs / 1e6")
		printf '%-8s %-5s %-19s %8.2f %6.0f %6.2f %6s %13.1f %12.1f %12.1f\n' "${mib}MiB" "$cache" "inspect --checksum" "$secs" "$rate" \
			"$(calc "$rate / $catrate")" "$cpu" "$(calc "$rss / 1024")" "$(calc "$anon / 1024")" "$(calc "$file / 1024")"
	done
	rm -f "$model"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
