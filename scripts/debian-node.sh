#!/usr/bin/env bash
# Debian's own Node.js (bookworm: 18.x, built against libnode and the
# shared libuv, unlike the machine's), unpacked into .cache/debian-node:
# its package has the same name as the machine's, so apt cannot install
# both. The libraries and externalized modules it loads come from Debian
# packages that scripts/deps.sh installs. Prints the node binary's path.
# Idempotent: nothing is fetched when it is there and runs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
root=$repo/.cache/debian-node
node=$root/usr/bin/node
libs=$root/usr/lib/x86_64-linux-gnu
if [ -x "$node" ] && LD_LIBRARY_PATH=$libs "$node" --version >/dev/null 2>&1; then
	echo "$node"
	exit 0
fi

debian_version() {
	apt-cache madison nodejs | awk -F' [|] ' '$3 ~ /debian\.org/ {print $2; exit}'
}
ver=$(debian_version)
if [ -z "$ver" ]; then
	apt-get update -qq
	ver=$(debian_version)
fi
[ -n "$ver" ] || { echo "debian-node: Debian offers no nodejs package" >&2; exit 1; }
libnode=$(apt-cache depends "nodejs=$ver" | awk '/Depends: libnode/ {print $2; exit}')
[ -n "$libnode" ] || { echo "debian-node: nodejs $ver depends on no libnode" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt's download sandbox user writes here
(cd "$tmp" && apt-get download -qq "nodejs=$ver" "$libnode=$ver" 2>/dev/null)
rm -rf "$root"
mkdir -p "$root"
for deb in "$tmp"/*.deb; do
	dpkg-deb -x "$deb" "$root"
done
LD_LIBRARY_PATH=$libs "$node" --version >/dev/null
echo "$node"
