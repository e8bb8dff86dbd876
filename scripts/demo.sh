#!/usr/bin/env bash
# The first demo: a sample server, weft tracing it, a little traffic, and the
# spans weft prints. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: weft loads BPF programs; run as root (sudo make demo)" >&2
	exit 1
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/websrv" ./test/e2e/testdata/websrv
OTEL_SERVICE_NAME=backend "$tmp/websrv" -mode=nethttp -addr=127.0.0.1:18081 >/dev/null &
pids+=($!)
OTEL_SERVICE_NAME=frontend "$tmp/websrv" -mode=thread -addr=127.0.0.1:18080 -downstream=127.0.0.1:18081 >/dev/null &
pids+=($!)
sleep 0.5

echo "== weft tracing the sample services (ports 18080, 18081); Ctrl-C to stop"
bin/weft run --port 18080,18081 --stats-interval=0 --log-level=warn &
pids+=($!)
sleep 2

for path in /call /call /hello; do curl -s -o /dev/null "http://127.0.0.1:18080$path"; done
for path in /hello /sleep?ms=120 /status/503 /users/42; do curl -s -o /dev/null "http://127.0.0.1:18081$path"; done
echo "== sent 7 requests; spans appear above as they finish. Try: curl http://127.0.0.1:18080/call"
wait "${pids[2]}"
