#!/usr/bin/env bash
# Builds the demo services' jars (demo/services/<module>/target/<module>.jar).
# Skips Maven when every jar is newer than every source and pom, since even a
# no-op Maven run costs seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

svc=demo/services
modules=(backend frontend jfront)
inputs=("$svc/pom.xml")
for m in "${modules[@]}"; do inputs+=("$svc/$m/pom.xml" "$svc/$m/src"); done

# Why a build is needed, or empty when every jar is up to date. find also lists
# directories, so a deleted source shows up through its directory's mtime.
reason=
for m in "${modules[@]}"; do
	jar=$svc/$m/target/$m.jar
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
	echo "build-demo: jars up to date in $svc/{$(IFS=,; echo "${modules[*]}")}/target, Maven skipped"
	exit 0
fi

echo "build-demo: $reason; building ${modules[*]} with Maven"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Maven 3.8 with -q still prints bare colour codes, so its output is kept
# and shown (without them) only when the build fails.
if ! mvn -q -B -f "$svc/pom.xml" package -DskipTests >"$log" 2>&1; then
	sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
	# A half-done build can leave a plain, unshaded jar that looks up to date.
	for m in "${modules[@]}"; do rm -f "$svc/$m/target/$m.jar"; done
	echo "build-demo: Maven failed" >&2
	exit 1
fi
