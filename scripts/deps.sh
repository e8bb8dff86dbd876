#!/usr/bin/env bash
# Installs the Debian packages weft's build and tests need. Idempotent and
# quick when everything is present: apt runs only for what is missing.
set -euo pipefail

want=(clang llvm libbpf-dev bpftool curl wrk python3 qemu-system-x86 busybox-static redis-server redis-tools postgresql golang-1.19-go nginx
	# Debian's Node.js (scripts/debian-node.sh) loads these
	libc-ares2 libuv1 libicu72 libnghttp2-14 libbrotli1 node-cjs-module-lexer node-acorn node-undici
	# the Python asyncio tests on Debian's Python
	python3-aiohttp python3-uvicorn python3-fastapi python3-httpx
	# the gRPC tests' Python client
	python3-grpcio "$@")
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing ${missing[*]}; run as root (or install them) first" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
