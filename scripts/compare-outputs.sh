#!/usr/bin/env bash
# compare-outputs.sh OLD_BIN NEW_BIN [FILES...]
#
# Runs two kidscope binaries on each capture and compares what they print:
# `frames -o json` and `analyze -o json --fail-on never`, each with
# --workers 1 and with the default workers (ARGS, if set, adds flags to
# every run, e.g. ARGS='--port auto'). Prints one line per file and
# command: identical or different, and exits 1 on any difference. Standard
# output and the exit status are compared; standard error is not (it
# carries no results). Without FILES, the repository's corpora and the
# synthetic variants (internal/synth, written to a temporary directory).
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BIN NEW_BIN [FILES...]" >&2; exit 2; }
old=$1 new=$2
shift 2
cd "$(dirname "$0")/.."
read -r -a extra <<<"${ARGS:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $# -eq 0 ]]; then
	go run ./internal/synth/dump "$tmp/synth" || exit 2
	set -- samples/captures/* testdata/real/*.pcap* \
		$(find cmd/kidscope/testdata pipeline/testdata capture/testdata "$tmp/synth" -name '*.pcap*' -type f | sort)
fi
differ=0
# run BIN OUT ARGS...: stdout into OUT, then the exit status appended.
run() {
	local bin=$1 out=$2
	shift 2
	"$bin" "$@" >"$out" 2>/dev/null
	echo "exit status $?" >>"$out"
}
for f in "$@"; do
	[[ -f $f ]] || continue
	for cmd in "frames -o json" "analyze -o json --fail-on never"; do
		for workers in "--workers 1" ""; do
			read -r -a argv <<<"$cmd $workers"
			run "$old" "$tmp/old" "${argv[@]}" "${extra[@]}" "$f"
			run "$new" "$tmp/new" "${argv[@]}" "${extra[@]}" "$f"
			label="$f: $cmd ${workers:-(default workers)}"
			if cmp -s "$tmp/old" "$tmp/new"; then
				echo "identical  $label"
			else
				echo "DIFFERENT  $label"
				diff <(head -c 2000000 "$tmp/old") <(head -c 2000000 "$tmp/new") | head -10 | sed 's/^/    /'
				differ=1
			fi
		done
	done
done
exit $differ
