#!/usr/bin/env bash
# Makes decode/apis_gen.go, the decoder's API table, from the request
# schemas inside released Apache Kafka client jars (internal/genapis), or
# with --check fails if the committed table is not what they give (CI).
#
#   bash scripts/gen-apis.sh            # rewrite decode/apis_gen.go
#   bash scripts/gen-apis.sh --check    # compare only
#
# The jars come from Maven Central through mvn, into a repository of the
# run's own (MAVEN_REPO, default a temporary directory), never ~/.m2.
# RELEASES are oldest first: 3.9.1 still has every version 4.0 removed,
# which captures of older clusters hold; 4.4.0 is the newest release.
set -euo pipefail
cd "$(dirname "$0")/.."
RELEASES=(3.9.1 4.4.0)
mode=-o
case ${1:-} in
--check) mode=-check ;;
"") ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac
repo=${MAVEN_REPO:-}
if [[ -z $repo ]]; then
	repo=$(mktemp -d)
	trap 'rm -rf "$repo"' EXIT
fi
args=()
for v in "${RELEASES[@]}"; do
	mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$repo" dependency:get -Dtransitive=false \
		-Dartifact="org.apache.kafka:kafka-clients:$v" >&2
	args+=(-schemas "$repo/org/apache/kafka/kafka-clients/$v/kafka-clients-$v.jar")
done
go run ./internal/genapis "${args[@]}" "$mode" decode/apis_gen.go
[[ $mode == -check ]] && echo "decode/apis_gen.go is what kafka-clients ${RELEASES[*]} and the overlay give"
exit 0
