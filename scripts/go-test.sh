#!/usr/bin/env bash
# Runs every Go package's tests with the flags given (it names the packages
# itself) as three `go test` processes side by side: test/e2e's JVM suites
# (the tests whose names say JVM, 60 % of its time), the rest of test/e2e,
# and every other package (test/qemu's guests the longest of them).
# test/e2e, one test at a time, waits more than it computes: it took 1723 s
# by itself and 1703 s beside test/qemu's guests on 2 cores (2026-12-07).
# Each process keeps its own log, printed when it ends; when any fails,
# each failed test's name and first message are repeated at the end, where
# a log's last lines show it.
set -uo pipefail
go=${GO:-go}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

others=$("$go" list ./... | grep -v '/test/e2e$') || exit 1
declare -A pids
"$go" test "$@" -run JVM ./test/e2e/ >"$logs/e2e-jvm" 2>&1 &
pids[e2e-jvm]=$!
"$go" test "$@" -skip JVM ./test/e2e/ >"$logs/e2e" 2>&1 &
pids[e2e]=$!
# shellcheck disable=SC2086 # one package per word
"$go" test "$@" $others >"$logs/others" 2>&1 &
pids[others]=$!

rc=0
left=3
while [ "$left" -gt 0 ]; do
	wait -n -p done "${pids[@]}"
	status=$?
	for name in "${!pids[@]}"; do
		if [ "${pids[$name]}" = "$done" ]; then
			echo "== go test ($name) ended with exit $status after ${SECONDS} s:"
			cat "$logs/$name"
			unset "pids[$name]"
		fi
	done
	[ "$status" -ne 0 ] && rc=$status
	left=$((left - 1))
done

if [ "$rc" -ne 0 ]; then
	echo "== failed (go test exit $rc):"
	cat "$logs"/* | grep -E -A2 -- '^\s*--- FAIL|^panic:|^FAIL\s' | grep -v -- '^--$' | cut -c1-300 | head -60
fi
exit "$rc"
