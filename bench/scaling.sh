#!/usr/bin/env bash
# bench/scaling.sh [--with-4gb]: how do kidscope's time and memory scale?
#
#  1. with connections: 1,000 vs 100,000 client connections for the same
#     bytes (SIZE, default 1GB): the per-connection state (reassembly,
#     decoder, rules) against the same packets and bytes;
#  2. with file size: 100 MB vs 1 GB (vs 4 GB with --with-4gb: 4 GB more
#     disk and a minute more) of the same traffic (CONNS, default 200):
#     time should grow with the bytes and peak memory not at all.
#
# kidscope analyze runs with 1 worker and with all of them. Loads are built
# and kept as run.sh does, under $BENCH_DIR (default /tmp/kidscope-bench; 1 GB with 1,000 and 100,000
# connections, 100 MB, 1 GB and 4 GB with 200: about 3.2 GB of disk, 7.2 GB
# with --with-4gb).
#
# Knobs (environment): RUNS=3 WARMUP=0 SIZE=1GB CONNS=200 FEW=1000
# MANY=100000 SIZES='100MB 1GB' SEED=1 BENCH_DIR=/tmp/kidscope-bench.
set -euo pipefail
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-0}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZE=${SIZE:-1GB}
CONNS=${CONNS:-200}
FEW=${FEW:-1000}
MANY=${MANY:-100000}
SEED=${SEED:-1}
WITH4=0
for a in "$@"; do
	case $a in
	--with-4gb) WITH4=1 ;;
	*) die "usage: scaling.sh [--with-4gb]" ;;
	esac
done

build
echo
machine
echo "Each case: $RUNS timed runs after $WARMUP warm-up, the cases of a table taking turns; median wall time and CPU time (user + system); peak RSS is the largest of the runs."
echo "kidscope: ${KID_ARGS[*]} FILE > /dev/null."

# section TITLE times the cases and prints their table and the ratios of
# PAIRS under that title.
section() {
	run_cases
	summarise
	echo
	echo "## $1"
	echo
	table
	echo
	ratio_header
	local p
	for p in "${PAIRS[@]}"; do
		# shellcheck disable=SC2086
		ratio $p
	done
}

# ---- 1. connections ----
A=$(load "$SIZE" "$FEW" "$SEED")
B=$(load "$SIZE" "$MANY" "$SEED")
cat "$A" "$B" >/dev/null
PAIRS=()
while IFS=$'\t' read -r label extra; do
	# shellcheck disable=SC2206
	flags=($extra)
	add_case "$FEW connections, $label" "$A" /dev/null "$BIN/kidscope" "${KID_ARGS[@]}" "${flags[@]}" "$A"
	add_case "$MANY connections, $label" "$B" /dev/null "$BIN/kidscope" "${KID_ARGS[@]}" "${flags[@]}" "$B"
	PAIRS+=("$((${#CASE_LABEL[@]} - 1)) $((${#CASE_LABEL[@]} - 2))")
done < <(kidscope_variants)
note "1. connections: $FEW vs $MANY, $SIZE each"
section "1. Connections: $FEW vs $MANY for the same $SIZE"

# ---- 2. file size ----
# shellcheck disable=SC2206
SIZES=(${SIZES:-100MB 1GB})
if [[ $WITH4 == 1 ]]; then SIZES+=(4GB); fi
FILES=()
for s in "${SIZES[@]}"; do FILES+=("$(load "$s" "$CONNS" "$SEED")"); done
cat "${FILES[@]}" >/dev/null
reset_cases
PAIRS=()
while IFS=$'\t' read -r label extra; do
	# shellcheck disable=SC2206
	flags=($extra)
	first=${#CASE_LABEL[@]}
	for j in "${!SIZES[@]}"; do
		add_case "${SIZES[$j]}, $label" "${FILES[$j]}" /dev/null "$BIN/kidscope" "${KID_ARGS[@]}" "${flags[@]}" "${FILES[$j]}"
		if ((j > 0)); then PAIRS+=("$((first + j)) $((first + j - 1))"); fi
	done
done < <(kidscope_variants)
note "2. sizes: ${SIZES[*]}, $CONNS connections"
section "2. File size: ${SIZES[*]} of the same traffic ($CONNS connections)"
echo
echo "MB = 10^6 bytes. A throughput ratio of 1 means time grows with the bytes alone; below 1, the second case is faster per byte."
