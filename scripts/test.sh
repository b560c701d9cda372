#!/usr/bin/env bash
# The project's test command: formatting, vet, staticcheck, every test, and
# a short run of every fuzz target (FUZZTIME, default 5s each; FUZZTIME=0
# skips them).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

if go list -m all | grep -q '^github.com/google/gopacket '; then
	echo "github.com/google/gopacket is in the module graph: use github.com/gopacket/gopacket" >&2
	exit 1
fi

if [[ ${STATICCHECK:-1} != 0 ]]; then
	echo "== staticcheck"
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
fi

if [[ ${LIBPCAP:-auto} != 0 ]] && [[ -e /usr/include/pcap.h ]]; then
	echo "== the libpcap build (-tags libpcap)"
	go vet -tags libpcap ./capture
	CGO_ENABLED=1 go build -tags libpcap -o /dev/null ./cmd/kidscope
fi

echo "== go test"
go test -count=1 ./...

FUZZTIME=${FUZZTIME:-5s}
if [[ $FUZZTIME != 0 ]]; then
	echo "== fuzz smoke runs ($FUZZTIME each)"
	# Every fuzz target in the module, found by name.
	# Go 1.26's fuzzing coordinator can fail a run that found nothing with
	# "context deadline exceeded" when -fuzztime expires while a worker is
	# busy (go.dev/issue/75804, fixed in Go 1.27). Such a run, with no
	# failing input written, is run once more; anything else fails.
	fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 10s "$1" >"$log" 2>&1; }
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
		pkg=./$(dirname "${f#./}")
		for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
			echo "-- $pkg $target"
			if ! fuzz "$pkg" "$target"; then
				if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
					echo "   (the fuzzing coordinator's deadline race, go.dev/issue/75804: once more)"
					fuzz "$pkg" "$target" || { cat "$log"; exit 1; }
				else
					cat "$log"
					exit 1
				fi
			fi
			tail -1 "$log"
		done
	done
fi
echo "all tests passed"
