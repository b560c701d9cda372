#!/usr/bin/env bash
# live-bench.sh [RATE...]: kidscope live beside tcpdump -w /dev/null on the
# same loopback traffic (internal/loadloop) at each packet rate; prints, per
# rate, the packets each captured, kernel drops, and CPU use (user+system
# seconds over the run, as % of one core). Needs root. tcpdump runs with
# -Z root: dropping to its user, it would chown /dev/null, its -w file.
#   DURATION=20s CONNS=100 scripts/live-bench.sh 20000 50000 100000
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20s}
RATES=("$@")
[[ ${#RATES[@]} -gt 0 ]] || RATES=(20000 50000 100000 200000)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
go build -o "$W/kidscope" ./cmd/kidscope
go build -o "$W/loadloop" ./internal/loadloop
secs=${DURATION%s}
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; } # clock ticks
hz=$(getconf CLK_TCK)
printf '| rate asked (pkt/s) | rate sent (pkt/s) | kidscope packets | kidscope drops | kidscope CPU | tcpdump packets | tcpdump drops | tcpdump CPU |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for rate in "${RATES[@]}"; do
	"$W/kidscope" live -i lo -p 29092 -o ndjson --no-status --duration $((secs + 3))s >"$W/k.ndjson" 2>"$W/k.err" &
	kpid=$!
	tcpdump -i lo -n -Z root -w /dev/null 'tcp port 29092' 2>"$W/t.err" &
	tpid=$!
	sleep 1
	sent=$("$W/loadloop" -port 29092 -rate "$rate" -duration "$DURATION" -conns "${CONNS:-20}" | sed 's/.*rate=\([0-9]*\).*/\1/')
	kcpu=$(cpu $kpid); tcpu=$(cpu $tpid)
	kill -INT $tpid; wait $tpid || true
	wait $kpid || true
	read -r kp kd < <(tail -1 "$W/k.ndjson" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["packets"], d.get("kernel_drops", 0))')
	tp=$(sed -n 's/^\([0-9]*\) packets captured.*/\1/p' "$W/t.err")
	td=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$W/t.err")
	printf '| %s | %s | %s | %s | %.1f%% | %s | %s | %.1f%% |\n' "$rate" "$((sent * 2))" "$kp" "$kd" \
		"$(echo "$kcpu * 100 / $hz / ($secs + 1)" | bc -l)" "$tp" "$td" "$(echo "$tcpu * 100 / $hz / ($secs + 1)" | bc -l)"
done

# PUBLISH=1: also live --publish to a kfake cluster (internal/kfakeserve) on
# the same loopback traffic, beside live without --publish: the CPU
# publishing costs, and what was published, delivered and dropped.
# LOAD=violate (the default): every request breaks a rule (loadloop
# -violate: each request is an observation and a finding);
# LOAD=telemetry: every request is a PushTelemetry that breaks none (loadloop
# -telemetry: each exchange is two observations, the request and its answer).
# Observations/s are the records published less the findings (and the
# agent's own few records) over the run.
if [[ ${PUBLISH:-0} == 1 ]]; then
	LOAD=${LOAD:-violate}
	go build -o "$W/kfakeserve" ./internal/kfakeserve
	"$W/kfakeserve" >"$W/kafka.addr" &
	fpid=$!
	until [[ -s $W/kafka.addr ]]; do sleep 0.1; done
	kafka=$(cat "$W/kafka.addr")
	printf '\nLOAD=%s\n\n| rate asked (pkt/s) | live CPU | live --publish CPU | records published | delivered | dropped | findings | observations/s |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n' "$LOAD"
	for rate in "${RATES[@]}"; do
		"$W/kidscope" live -i lo -p 29092 -o ndjson -q --no-status --duration $((secs + 3))s >/dev/null 2>"$W/k.err" &
		kpid=$!
		"$W/kidscope" live -i lo -p 29092 -o ndjson -q --no-status --duration $((secs + 3))s \
			--publish "$kafka" --agent bench >"$W/p.ndjson" 2>"$W/p.err" &
		ppid=$!
		sleep 1
		"$W/loadloop" -port 29092 -rate "$rate" -duration "$DURATION" -conns "${CONNS:-20}" "-$LOAD" >/dev/null
		kcpu=$(cpu $kpid); pcpu=$(cpu $ppid)
		wait $kpid || true
		wait $ppid || true
		read -r pub del drop < <(sed -n 's/.*published \([0-9]*\) records.*: \([0-9]*\) delivered\(, \([0-9]*\) dropped\)\?.*/\1 \2 \4/p' "$W/p.err")
		found=$(tail -1 "$W/p.ndjson" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["findings_by_severity"].values()))')
		printf '| %s | %.1f%% | %.1f%% | %s | %s | %s | %s | %s |\n' "$rate" \
			"$(echo "$kcpu * 100 / $hz / ($secs + 1)" | bc -l)" "$(echo "$pcpu * 100 / $hz / ($secs + 1)" | bc -l)" \
			"$pub" "$del" "${drop:-0}" "$found" "$(((pub - found) / secs))"
	done
	kill $fpid
fi
