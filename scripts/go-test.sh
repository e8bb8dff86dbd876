#!/usr/bin/env bash
# Runs the Go tests and, when they fail, repeats each failed test's name and
# first message at the end, where a log's last lines show it.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "== failed (go test exit $rc):"
	grep -E -A2 -- '^\s*--- FAIL|^panic:|^FAIL\s' "$log" | grep -v -- '^--$' | cut -c1-300 | head -60
fi
exit "$rc"
