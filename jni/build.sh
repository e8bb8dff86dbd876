#!/usr/bin/env bash
# Builds jni/build/libweft_jni.so against the JDK that javac belongs to.
# A no-op when the library is newer than its sources.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/build/libweft_jni.so"

if [[ -f "$out" && "$out" -nt "$here/weft_jni.c" && "$out" -nt "$here/weft_tls.c" && "$out" -nt "$here/weft_jni.h" && "$out" -nt "$here/build.sh" ]]; then
  exit 0
fi

if [[ -n "${JAVA_HOME:-}" && -f "$JAVA_HOME/include/jni.h" ]]; then
  jdk="$JAVA_HOME"
else
  jdk="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
[[ -f "$jdk/include/jni.h" ]] || { echo "jni/build.sh: no jni.h under $jdk (set JAVA_HOME to a JDK)" >&2; exit 1; }

mkdir -p "$here/build"
# -ffile-prefix-map and no -g keep the bytes independent of where the tree is.
gcc -O2 -fPIC -shared -std=gnu11 -Wall -Wextra -Werror \
  -ffile-prefix-map="$here"=. \
  -I"$jdk/include" -I"$jdk/include/linux" \
  -o "$out.tmp" "$here/weft_jni.c" "$here/weft_tls.c"
mv "$out.tmp" "$out"
