#!/usr/bin/env bash
# Builds the JVM agent: jni/ (libweft_jni.so), then javaagent/ (shaded jar,
# tests run against it), and copies it to pkg/javaagent/weft-agent.jar.
# Does nothing when that jar is newer than every source and pom.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/pkg/javaagent/weft-agent.jar"

newer_input() {
  [[ ! -f "$out" ]] && return 0
  local f
  while IFS= read -r -d '' f; do
    [[ "$f" -nt "$out" ]] && return 0
  done < <(find "$root/jni" "$root/javaagent" \
             \( -path "$root/javaagent/target" -o -path "$root/jni/build" \) -prune -o \
             -type f -print0)
  [[ "${BASH_SOURCE[0]}" -nt "$out" ]] && return 0
  return 1
}

if ! newer_input; then
  exit 0
fi

bash "$root/jni/build.sh"
mvn -q -B -f "$root/javaagent/pom.xml" package
mkdir -p "$(dirname "$out")"
cp "$root/javaagent/target/weft-agent.jar" "$out.tmp"
mv "$out.tmp" "$out"
echo "built $out"
