#!/usr/bin/env bash
# Rebuilds the Java agent jar from javaagent/ and jni/ (the build is
# reproducible) and fails when it differs from the committed
# pkg/javaagent/weft-agent.jar, which weft embeds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jni/build.sh
mvn -q -B -f javaagent/pom.xml package -DskipTests
if ! cmp -s javaagent/target/weft-agent.jar pkg/javaagent/weft-agent.jar; then
	echo "pkg/javaagent/weft-agent.jar is out of date with javaagent/ and jni/: run scripts/build-agent.sh and commit it" >&2
	exit 1
fi
echo "embedded Java agent matches its sources"
