#!/usr/bin/env bash
# Builds the demo services' jars (demo/services/<module>/target/<module>.jar)
# and the JVM test applications (test/apps/jvm/<module>/target/<module>.jar,
# whose pom inherits the demo's). Skips Maven for a reactor when every jar is
# newer than every source and pom, since even a no-op Maven run costs seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# build_reactor DIR MODULE... [-- EXTRA_INPUT...]
build_reactor() {
	local dir=$1
	shift
	local modules=() inputs=("$dir/pom.xml")
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		modules+=("$1")
		inputs+=("$dir/$1/pom.xml")
		# A module may build a source set it shares with others (named after --).
		[ -d "$dir/$1/src" ] && inputs+=("$dir/$1/src")
		shift
	done
	[ $# -gt 0 ] && shift
	inputs+=("$@")

	# Why a build is needed, or empty when every jar is up to date. find also lists
	# directories, so a deleted source shows up through its directory's mtime.
	local reason= m jar newer
	for m in "${modules[@]}"; do
		jar=$dir/$m/target/$m.jar
		if [ ! -f "$jar" ]; then
			reason="$jar is missing"
			break
		fi
		newer=$(find "${inputs[@]}" -newer "$jar" -print -quit)
		if [ -n "$newer" ]; then
			reason="$newer is newer than $jar"
			break
		fi
	done

	if [ -z "$reason" ]; then
		echo "build-demo: jars up to date in $dir/{$(IFS=,; echo "${modules[*]}")}/target, Maven skipped"
		return 0
	fi

	echo "build-demo: $reason; building ${modules[*]} with Maven"
	local log
	log=$(mktemp)
	# Maven 3.8 with -q still prints bare colour codes, so its output is kept
	# and shown (without them) only when the build fails.
	if ! mvn -q -B -f "$dir/pom.xml" package -DskipTests >"$log" 2>&1; then
		sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
		rm -f "$log"
		# A half-done build can leave a plain, unshaded jar that looks up to date.
		for m in "${modules[@]}"; do rm -f "$dir/$m/target/$m.jar"; done
		echo "build-demo: Maven failed" >&2
		exit 1
	fi
	rm -f "$log"
}

build_reactor demo/services backend frontend jfront
# The test apps' parent is the demo's pom: a change there rebuilds them too.
build_reactor test/apps/jvm ktor2 ktor3 spring -- demo/services/pom.xml test/apps/jvm/ktor-app/src
