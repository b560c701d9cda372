#!/usr/bin/env bash
# Makes every real-client capture afresh on loopback and checks the fresh
# set against the committed expectations (testdata/real/*.expect.json), so
# the committed captures cannot go stale: kgo against kfake
# (internal/realtraffic, pure Go) and librdkafka, kafkajs and kgo against
# kfake and librdkafka's mock cluster (realclients/, cgo and npm).
#
#   bash scripts/realclients.sh            # into a temporary directory, then check
#   bash scripts/realclients.sh --update   # remake the committed set in testdata/real, then check
#
# Needs root (AF_PACKET on lo), Go, gcc (cgo), node and npm (npm ci fetches
# kafkajs from the npm registry), and tshark for the comparison with it.
# Every client run is bounded in time; the whole takes about a minute and a
# half once the modules are downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

update=0
case ${1:-} in
--update) update=1 ;;
"") ;;
*)
	echo "usage: $0 [--update]" >&2
	exit 2
	;;
esac
if [[ $(id -u) != 0 ]]; then
	echo "$0: needs root (AF_PACKET capture on lo)" >&2
	exit 1
fi
for tool in go gcc node npm; do
	command -v "$tool" >/dev/null || {
		echo "$0: $tool is not installed" >&2
		exit 1
	}
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ $update == 1 ]]; then
	out=$root/testdata/real
	rm -f "$out"/*.pcap "$out"/*.meta.json
else
	out=$work/real
	mkdir -p "$out"
fi

echo "== node: npm ci (realclients/node)"
(cd realclients/node && timeout 300 npm ci --no-audit --no-fund --loglevel=error)

echo "== cgo: vet and build realclients"
(cd realclients && CGO_ENABLED=1 go vet ./... && CGO_ENABLED=1 go build -o "$work/realclients" .)
go build -o "$work/realtraffic" ./internal/realtraffic

echo "== capture: kgo against kfake"
timeout 180 "$work/realtraffic" -o "$out"
echo "== capture: librdkafka, kafkajs and kgo against kfake and the mock cluster"
(cd realclients && timeout 600 "$work/realclients" -o "$out" -node node)

echo "== check the fresh captures against testdata/real/*.expect.json"
KIDSCOPE_REAL_DIR=$out go test -count=1 -run '^(TestRealCaptures|TestMockQuirks)$' ./internal/realtraffic
echo "fresh captures agree with the expectations ($(ls "$out"/*.pcap | wc -l) files)"
