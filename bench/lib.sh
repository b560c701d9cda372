# Shared by run.sh and scaling.sh: checks, building, load files, timed runs
# and the Markdown table.
# shellcheck shell=bash
set -euo pipefail
export LC_ALL=C

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_SRC/.." && pwd)
WORK=${BENCH_DIR:-/tmp/kidscope-bench}
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-1}

die() {
	echo "bench: $*" >&2
	exit 2
}
note() { echo "bench: $*" >&2; }

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BIN=$WORK/bin
case "$WORK/" in "$REPO/"*) die "BENCH_DIR ($WORK) must be outside the repository ($REPO)" ;; esac
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS=$RUNS: want a positive number"
command -v go >/dev/null || die "go is not installed (Go 1.26)"
/usr/bin/time --version 2>&1 | grep -q GNU || die "GNU time is needed at /usr/bin/time for peak memory (apt-get install time)"

# build compiles kidscope, the load generator and the cutter into $BIN.
build() {
	mkdir -p "$BIN"
	note "building into $BIN ($(go version | awk '{print $3}'))"
	(
		cd "$REPO"
		go build -o "$BIN/kidscope" ./cmd/kidscope
		go build -o "$BIN/loadgen" ./bench/loadgen
		go build -o "$BIN/pcapcut" ./bench/pcapcut
	)
	KID_ARGS=(analyze -o json --fail-on never --no-progress)
	NCPU=$(nproc)
}

# kidscope_variants lists "LABEL<TAB>EXTRA FLAGS": one worker and all.
kidscope_variants() {
	printf '1 worker\t--workers 1\n'
	printf 'all workers (%s)\t--workers %s\n' "$NCPU" "$NCPU"
}

# load SIZE CONNS SEED [TLS_SUITE] prints the path of that load, generating
# it unless one made by the same generator source with the same flags is
# there. With TLS_SUITE (aes128-gcm, aes256-gcm, chacha20-poly1305) every
# connection is TLS 1.3 and the key log is FILE.keys.
load() {
	local size=$1 conns=$2 seed=$3 suite=${4:-}
	local f=$WORK/load-$size-c$conns-s$seed.pcap
	local -a tlsflags=()
	if [[ -n $suite ]]; then
		f=$WORK/load-$size-c$conns-s$seed-tls-$suite.pcap
		tlsflags=(-tls -tls-suite "$suite" -keylog "$f.keys")
	fi
	local stamp
	# The generator's own Go files and those of the module's packages it
	# is built from (go.sum stands for the other modules').
	stamp="$(
		cd "$REPO"
		go list -deps -f '{{with .Module}}{{if .Main}}{{range $.GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}' ./bench/loadgen |
			xargs cat go.mod go.sum | sha256sum | cut -c1-16
	) -bytes $size -conns $conns -seed $seed${suite:+ -tls $suite}"
	if [[ -f $f && -f $f.expect.json && (-z $suite || -f $f.keys) && "$(cat "$f.stamp" 2>/dev/null)" == "$stamp" ]]; then
		note "reusing $f"
	else
		note "generating $f ($size, $conns connections, seed $seed${suite:+, TLS 1.3 $suite})"
		rm -f "$f" "$f.stamp" "$f.expect.json" "$f.keys" "${f%.pcap}".cut*
		"$BIN/loadgen" -q -bytes "$size" -conns "$conns" -seed "$seed" "${tlsflags[@]}" -o "$f" -expect "$f.expect.json"
		echo "$stamp" >"$f.stamp"
	fi
	echo "$f"
}

# cutof FILE SIZE prints the path of the first SIZE bytes of FILE's packets.
cutof() {
	local c=${1%.pcap}.cut$2.pcap
	if [[ ! -f $c || ! -f $c.packets ]]; then
		"$BIN/pcapcut" -bytes "$2" -o "$c" "$1" 2>"$c.log" || die "pcapcut: $(cat "$c.log")"
		awk '{for (i = 1; i < NF; i++) if ($i == "first") print $(i+1)}' "$c.log" >"$c.packets"
	fi
	echo "$c"
}

# packets FILE: the number of packets in a load or a cut.
packets() {
	if [[ -f $1.packets ]]; then
		cat "$1.packets"
	else
		grep -o '"packets": [0-9]*' "$1.expect.json" | head -1 | awk '{print $2}'
	fi
}

# ---- timed cases ----
# add_case LABEL FILE OUT CMD...: a case to time; CMD's standard output goes
# to OUT (/dev/null, or a file to check afterwards).
add_case() {
	local label=$1 file=$2 out=$3
	shift 3
	CASE_LABEL+=("$label")
	CASE_FILE+=("$file")
	CASE_OUT+=("$out")
	local IFS=$'\x1f'
	CASE_CMD+=("$*")
	WALLS+=("")
	CPUS+=("")
	PEAKS+=("")
}

# reset_cases forgets the cases (and their results: MEDIAN seconds, the
# median CPU seconds, MBPS, PPS, the input's BYTES and PKTS, and the PEAK
# RSS in KiB of case I, filled by summarise) for a new table.
reset_cases() {
	CASE_LABEL=()
	CASE_FILE=()
	CASE_OUT=()
	CASE_CMD=()
	WALLS=()
	CPUS=()
	PEAKS=()
	MEDIAN=()
	CPU=()
	MBPS=()
	PPS=()
	BYTES=()
	PKTS=()
	PEAK=()
}
reset_cases

# once I [record]: runs case I under GNU time; wall time from bash's
# microsecond clock, peak RSS (KiB) and CPU time (user + system) from GNU
# time. CPU time is what other tenants of a busy machine disturb least.
once() {
	local i=$1 record=${2:-}
	local -a cmd
	IFS=$'\x1f' read -r -a cmd <<<"${CASE_CMD[$i]}"
	local t0=$EPOCHREALTIME
	if ! /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "${cmd[@]}" >"${CASE_OUT[$i]}" 2>"$WORK/stderr"; then
		die "${CASE_LABEL[$i]}: ${cmd[*]}: failed: $(tail -3 "$WORK/stderr")"
	fi
	local t1=$EPOCHREALTIME
	if [[ -n $record ]]; then
		WALLS[i]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }') "
		PEAKS[i]+="$(tail -1 "$WORK/rss" | awk '{ print $1 }') "
		CPUS[i]+="$(tail -1 "$WORK/rss" | awk '{ printf "%.2f", $2 + $3 }') "
	fi
}

# run_cases: WARMUP untimed runs of each case, then RUNS rounds in which the
# cases take turns (A B C A B C ...), so that drift hits them alike.
run_cases() {
	local i r
	for ((r = 0; r < WARMUP; r++)); do
		for i in "${!CASE_LABEL[@]}"; do once "$i"; done
	done
	for ((r = 1; r <= RUNS; r++)); do
		note "round $r of $RUNS"
		for i in "${!CASE_LABEL[@]}"; do once "$i" record; done
	done
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maximum() { tr ' ' '\n' | grep . | sort -g | tail -1; }

# summarise fills the results of each case (see reset_cases).
summarise() {
	local i
	for i in "${!CASE_LABEL[@]}"; do
		MEDIAN[i]=$(median <<<"${WALLS[$i]}")
		CPU[i]=$(median <<<"${CPUS[$i]}")
		BYTES[i]=$(stat -c %s "${CASE_FILE[$i]}")
		PKTS[i]=$(packets "${CASE_FILE[$i]}")
		PEAK[i]=$(maximum <<<"${PEAKS[$i]}")
		MBPS[i]=$(awk -v b="${BYTES[$i]}" -v s="${MEDIAN[$i]}" 'BEGIN { printf "%.1f", b / 1e6 / s }')
		PPS[i]=$(awk -v p="${PKTS[$i]}" -v s="${MEDIAN[$i]}" 'BEGIN { printf "%.0f", p / s }')
	done
}

# table prints the cases as one Markdown table.
table() {
	local i
	echo "| case | input | MB | packets | median s | cpu s | MB/s | packets/s | peak RSS MB |"
	echo "|---|---|--:|--:|--:|--:|--:|--:|--:|"
	for i in "${!CASE_LABEL[@]}"; do
		printf '| %s | %s | %.1f | %d | %.3f | %.2f | %s | %s | %.1f |\n' "${CASE_LABEL[$i]}" "$(basename "${CASE_FILE[$i]}")" \
			"$(awk -v b="${BYTES[$i]}" 'BEGIN { print b / 1e6 }')" "${PKTS[$i]}" "${MEDIAN[$i]}" "${CPU[$i]}" "${MBPS[$i]}" \
			"$(awk -v n="${PPS[$i]}" 'BEGIN { printf "%d", n }')" "$(awk -v k="${PEAK[$i]}" 'BEGIN { print k * 1024 / 1e6 }')"
	done
}

# ratio A B: throughput (MB/s) of case A over case B, and peak RSS of A over
# B; the input is named when both read the same one.
ratio() {
	local a=$1 b=$2
	local on=
	if [[ ${CASE_FILE[$a]} == "${CASE_FILE[$b]}" ]]; then on=" ($(basename "${CASE_FILE[$a]}"))"; fi
	printf '| %s ÷ %s%s | %.3g× | %.3g× |\n' "${CASE_LABEL[$a]}" "${CASE_LABEL[$b]}" "$on" \
		"$(awk -v x="${MBPS[$a]}" -v y="${MBPS[$b]}" 'BEGIN { print x / y }')" \
		"$(awk -v x="${PEAK[$a]}" -v y="${PEAK[$b]}" 'BEGIN { print x / y }')"
}

ratio_header() {
	echo "| ratio | throughput (MB/s) | peak RSS |"
	echo "|---|--:|--:|"
}

machine() {
	echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(go version | awk '{print $3}'); kidscope $(cd "$REPO" && git describe --always --dirty 2>/dev/null || echo '?'); $(date -u +%FT%TZ)."
}

TSHARK_ARGS=(-o tcp.reassemble_out_of_order:TRUE -Y kafka -T fields -e kafka.request_key -e kafka.correlation_id)
