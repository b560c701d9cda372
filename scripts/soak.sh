#!/usr/bin/env bash
# soak.sh: kidscope live and kidscope fleet, side by side, for SOAK_DURATION
# (default 8m, so that the whole script stays within ten minutes), on a
# steady mixed load whose connections open and close: loadloop sends
# PushTelemetry exchanges (observations) on one port and requests that break
# header-id-changed (findings) on another, each connection replaced every
# few seconds; live captures both, publishes to an in-memory Kafka
# (internal/kfakeserve), and fleet consumes the topic as it grows.
#
# Every SOAK_EVERY (5s) it samples, for each process: resident memory and
# open descriptors (from /proc), the Go heap in use and goroutines (from
# its metrics). Over the second half of the run (the first is warm-up:
# buffers, pools and the heap find their size) it fits a least-squares
# line to each series, and calls the series flat when the growth that line
# predicts over the half, slope x span, is within the noise: no more than
# two standard deviations of the residuals about the line, or than three
# standard errors of the slope (a series too noisy to tell). A busy machine
# widens the noise and the bound with it; nothing here is a fixed number of
# bytes. It prints a Markdown table (docs/soak.md has one) and exits 1 when
# a series grows. Needs root (live captures on lo).
#   SOAK_DURATION=2h scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${SOAK_DURATION:-8m}
EVERY=${SOAK_EVERY:-5}
W=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
go build -o "$W/kidscope" ./cmd/kidscope
go build -o "$W/loadloop" ./internal/loadloop
go build -o "$W/kfakeserve" ./internal/kfakeserve
secs=$(python3 -c "import re,sys; d=sys.argv[1]; print(sum(int(n)*{'h':3600,'m':60,'s':1}[u] for n,u in re.findall(r'(\d+)([hms])', d)) or int(d))" "$DURATION")

# Free loopback ports, from the kernel.
read -r tport vport lmetrics fmetrics < <(python3 -c '
import socket
s=[socket.socket() for _ in range(4)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')

"$W/kfakeserve" -partitions 3 >"$W/kafka.addr" 2>"$W/kafka.err" &
pids+=($!)
until [[ -s $W/kafka.addr ]]; do sleep 0.1; done
kafka=$(cat "$W/kafka.addr")

"$W/kidscope" live -i lo -p "$tport,$vport" -o ndjson -q --no-status --idle-timeout 30s \
	--duration $((secs + 30))s --metrics-addr "127.0.0.1:$lmetrics" --publish "$kafka" --agent soak \
	>"$W/live.ndjson" 2>"$W/live.err" &
live=$!
pids+=($live)
"$W/kidscope" fleet --brokers "$kafka" --group soak --from-beginning --window 10s --flush-after 5s \
	-o ndjson -q --metrics-addr "127.0.0.1:$fmetrics" >"$W/fleet.ndjson" 2>"$W/fleet.err" &
fleet=$!
pids+=($fleet)
sleep 2
"$W/loadloop" -port "$tport" -rate 8000 -conns 40 -churn 3s -telemetry -duration "${secs}s" >"$W/load-t.out" 2>&1 &
pids+=($!)
"$W/loadloop" -port "$vport" -rate 2000 -conns 10 -churn 2s -violate -duration "${secs}s" >"$W/load-v.out" 2>&1 &
pids+=($!)

metric() { # metric URL NAME: one unlabelled sample of a metric
	curl -sf "$1" | awk -v n="$2" '$1 == n { print $2; exit }'
}
sample() { # sample PID METRICS_PORT: rss_kb fds heap goroutines
	local rss fds
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status")
	fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l)
	local url="http://127.0.0.1:$2/metrics"
	echo "$rss $fds $(metric "$url" go_memstats_heap_inuse_bytes) $(metric "$url" go_goroutines)"
}
start=$(date +%s)
: >"$W/samples"
while (($(date +%s) - start < secs)); do
	sleep "$EVERY"
	t=$(($(date +%s) - start))
	kill -0 "$live" 2>/dev/null || { echo "soak: live ended early:" >&2; cat "$W/live.err" >&2; exit 1; }
	kill -0 "$fleet" 2>/dev/null || { echo "soak: fleet ended early:" >&2; cat "$W/fleet.err" >&2; exit 1; }
	echo "$t live $(sample "$live" "$lmetrics")" >>"$W/samples"
	echo "$t fleet $(sample "$fleet" "$fmetrics")" >>"$W/samples"
done
published=$(metric "http://127.0.0.1:$lmetrics/metrics" kidscope_publish_records_total || echo "?")

python3 - "$W/samples" "$DURATION" "$EVERY" "$published" <<'PY'
import math, sys
path, duration, every, published = sys.argv[1:]
series = {}
for line in open(path):
    f = line.split()
    if len(f) != 6:
        continue
    t, proc = float(f[0]), f[1]
    for name, v in zip(("RSS (MiB)", "open fds", "Go heap in use (MiB)", "goroutines"), f[2:]):
        v = float(v)
        if name == "RSS (MiB)":
            v /= 1024
        elif name.startswith("Go heap"):
            v /= 1 << 20
        series.setdefault((proc, name), []).append((t, v))

def fit(pts):
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    sxx = sum((t - mt) ** 2 for t, _ in pts)
    b = sum((t - mt) * (v - mv) for t, v in pts) / sxx
    res = [v - (mv + b * (t - mt)) for t, v in pts]
    sigma = math.sqrt(sum(r * r for r in res) / max(n - 2, 1))
    se = sigma / math.sqrt(sxx)
    return mv, b, sigma, se

print(f"soak: {duration}, a sample every {every}s; {published} records published\n")
print("| process | series | mean (2nd half) | slope per hour | growth over the half | bound (noise) | flat |")
print("|---|---|---:|---:|---:|---:|---|")
grows = []
for (proc, name), pts in series.items():
    half = [p for p in pts if p[0] >= pts[-1][0] / 2]
    if len(half) < 6:
        print(f"soak: too few samples ({len(half)}) in the second half", file=sys.stderr)
        sys.exit(1)
    mean, b, sigma, se = fit(half)
    span = half[-1][0] - half[0][0]
    growth, bound = b * span, max(2 * sigma, 3 * se * span)
    flat = growth <= bound
    if not flat:
        grows.append(f"{proc} {name}")
    print(f"| {proc} | {name} | {mean:.2f} | {b * 3600:+.3f} | {growth:+.3f} | {bound:.3f} | {'yes' if flat else 'NO'} |")
if grows:
    print("\nsoak: grows past the noise: " + ", ".join(grows), file=sys.stderr)
    sys.exit(1)
print("\nsoak: every series flat over the second half")
PY
