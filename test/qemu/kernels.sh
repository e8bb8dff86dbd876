#!/usr/bin/env bash
# kernels.sh fetches stock Debian kernels for the QEMU test harness.
#
# Usage: kernels.sh [SERIES|PACKAGE ...]
#   SERIES  a kernel series such as 6.1 or 6.12: the newest plain
#           linux-image-<ver>-amd64 package of that series is used.
#   PACKAGE an exact package name, e.g. linux-image-6.1.0-57-amd64.
# Default: 6.1 6.12.
#
# It installs qemu-system-x86 and busybox-static when missing, downloads each
# kernel package with apt-get download, and keeps only vmlinuz and config in
# test/qemu/.cache/<kver>/. The vmlinuz paths are printed on stdout, one per
# line; progress goes to stderr. A second run does no downloads.
# WEFT_QEMU_CACHE overrides the cache directory.
#
# No modules are kept: every feature the tests need is checked below to be
# built in (=y), and the script fails if a kernel does not meet that.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${WEFT_QEMU_CACHE:-$here/.cache}"

# Built-in options the harness and weft's kprobe path rely on.
required_config=(
	CONFIG_BLK_DEV_INITRD CONFIG_RD_GZIP CONFIG_DEVTMPFS CONFIG_TMPFS
	CONFIG_BINFMT_ELF CONFIG_BINFMT_SCRIPT CONFIG_PROC_FS CONFIG_SYSFS
	CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE
	CONFIG_NET CONFIG_INET CONFIG_UNIX
	CONFIG_BPF CONFIG_BPF_SYSCALL CONFIG_BPF_JIT CONFIG_BPF_EVENTS
	CONFIG_KPROBES CONFIG_KRETPROBES CONFIG_KPROBE_EVENTS
	CONFIG_PERF_EVENTS CONFIG_KALLSYMS
	CONFIG_DEBUG_INFO_BTF CONFIG_FTRACE CONFIG_FUNCTION_TRACER
	CONFIG_DYNAMIC_FTRACE CONFIG_TRACING CONFIG_DEBUG_FS
	CONFIG_CGROUPS CONFIG_CGROUP_BPF
)

# Temporary download dirs, removed on exit even when a step fails.
tmpdirs=()
cleanup() { ((${#tmpdirs[@]} == 0)) || rm -rf "${tmpdirs[@]}"; }
trap cleanup EXIT

log() { printf 'kernels.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

ensure_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	# The dynamic busybox package also ships /bin/busybox, so ask dpkg.
	installed busybox-static || missing+=(busybox-static)
	((${#missing[@]} == 0)) && return 0
	[[ $(id -u) == 0 ]] || die "need root to install ${missing[*]}"
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
}

installed() {
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# newest_in_series prints the newest plain amd64 image package of a series.
newest_in_series() {
	local series="$1" re
	re="^linux-image-${series//./\\.}\\.[0-9]+(-[0-9]+|\\+deb[0-9]+)-amd64$"
	apt-cache search --names-only "$re" | awk '{print $1}' | grep -E "$re" | sort -V | tail -n 1 || true
}

# kver_of maps a package name to the kernel release it installs.
kver_of() {
	local k="${1#linux-image-}"
	printf '%s\n' "${k%-unsigned}"
}

check_config() {
	local cfg="$1" opt missing=()
	for opt in "${required_config[@]}"; do
		grep -qx "${opt}=y" "$cfg" || missing+=("$opt")
	done
	((${#missing[@]} == 0)) || die "$(basename "$cfg"): not built in: ${missing[*]}"
}

# fetch_one downloads pkg (or its -unsigned twin) and leaves vmlinuz+config.
fetch_one() {
	local pkg="$1" kver dest tmp deb debs candidate candidates
	kver="$(kver_of "$pkg")"
	dest="$cache/$kver"
	if [[ -s $dest/vmlinuz && -s $dest/config ]]; then
		printf '%s\n' "$dest/vmlinuz"
		return 0
	fi
	# Unique enough: runs are serialised by the lock taken in main.
	tmp="$cache/.tmp-$kver.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	tmpdirs+=("$tmp")
	local started=$SECONDS
	candidates=("$pkg")
	[[ $pkg == *-unsigned ]] || candidates+=("$pkg-unsigned")
	for candidate in "${candidates[@]}"; do
		rm -f "$tmp"/*.deb
		log "downloading $candidate"
		(cd "$tmp" && apt-get download "$candidate" 2>&1 | { grep -v '^W: Download is performed unsandboxed' || true; } >&2) ||
			continue
		debs=("$tmp"/*.deb)
		deb="${debs[0]}"
		[[ -f $deb ]] || continue
		# Only boot/ is needed; skipping the module tree saves ~400 MB a kernel.
		mkdir -p "$tmp/root"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/root" --wildcards './boot/*' || true
		if [[ -s $tmp/root/boot/vmlinuz-$kver ]]; then
			break
		fi
		log "$candidate has no /boot/vmlinuz-$kver"
	done
	[[ -s $tmp/root/boot/vmlinuz-$kver ]] || die "no package provides /boot/vmlinuz-$kver (tried $pkg)"
	[[ -s $tmp/root/boot/config-$kver ]] || die "$pkg has no /boot/config-$kver"
	check_config "$tmp/root/boot/config-$kver"
	mkdir -p "$tmp/out"
	mv "$tmp/root/boot/vmlinuz-$kver" "$tmp/out/vmlinuz"
	mv "$tmp/root/boot/config-$kver" "$tmp/out/config"
	printf '%s\n' "$pkg" >"$tmp/out/package"
	rm -rf "$dest"
	mv "$tmp/out" "$dest"
	rm -rf "$tmp"
	log "$kver ready in $((SECONDS - started))s"
	printf '%s\n' "$dest/vmlinuz"
}

main() {
	local args=("$@") arg pkg pkgs=()
	((${#args[@]} > 0)) || args=(6.1 6.12)
	mkdir -p "$cache"
	# Serialise concurrent runs (e.g. parallel test binaries) on the cache.
	[[ -e $cache/.lock ]] || : >"$cache/.lock"
	# Read-only so that a non-root user can use a cache root filled.
	exec 9<"$cache/.lock"
	flock 9
	# Leftovers of a killed run; safe to drop while holding the lock.
	rm -rf "$cache"/.tmp-*
	ensure_tools
	for arg in "${args[@]}"; do
		if [[ $arg == linux-image-* ]]; then
			pkg="$arg"
		else
			pkg="$(newest_in_series "$arg")"
			[[ -n $pkg ]] || die "no linux-image-$arg.*-amd64 package in apt-cache (run apt-get update?)"
		fi
		pkgs+=("$pkg")
	done
	for pkg in "${pkgs[@]}"; do
		fetch_one "$pkg"
	done
}

main "$@"
