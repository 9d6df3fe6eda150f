#!/usr/bin/env bash
# JMH benchmarks of the fast path (see BENCHMARKS.md): build stack-core, nic-driver and jmh into a
# private build directory, then run the suite with the short settings the 2-core CI box affords.
#
#   scripts/bench-jmh.sh [results.json] [benchmark-regex] [extra JMH options...]
#   scripts/bench-jmh.sh --build-only      (print the jar's path; scripts/bench-tcp-paths.sh uses it)
#
# With a JSON path, JMH also writes machine-readable results there (-rf json -rff PATH).
# NICSTACK_JMH_BUILD_DIR overrides the build directory (default: target/jmh-build in this checkout).
# NICSTACK_JMH_OPTS replaces the run settings (default: -f 1 -wi 3 -w 1 -i 5 -r 1 -prof gc).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${NICSTACK_JMH_BUILD_DIR:-$ROOT/target/jmh-build}"
BUILD_ONLY=false
if [ "${1:-}" = "--build-only" ]; then
  BUILD_ONLY=true
  shift
fi
JSON="${1:-}"
if [ -n "$JSON" ]; then
  mkdir -p "$(dirname "$JSON")"
  JSON="$(cd "$(dirname "$JSON")" && pwd)/$(basename "$JSON")"
fi
REGEX="${2:-io.nicstack.jmh.}"
shift $(( $# > 2 ? 2 : $# ))

cd "$ROOT"
# Offline when the local repository already has everything; online again only when the offline build failed for an
# artifact it does not have (Maven says "in offline mode" then), so that a compile error shows at once.
# Maven's output goes to stderr, so that stdout carries only what this script prints (the jar's path).
MVN=(mvn -B -q -pl stack-core,nic-driver,jmh -am "-Dnicstack.buildDir=$BUILD_DIR/\${project.artifactId}" -DskipTests package)
MVN_LOG="$(mktemp /tmp/nicstack-jmh-build.XXXXXX)"
if ! "${MVN[@]}" -o 2>&1 | tee "$MVN_LOG" >&2; then
  if grep -q 'in offline mode' "$MVN_LOG"; then
    rm -f "$MVN_LOG"
    echo "bench-jmh: the offline build lacks artifacts (above); building online to fetch them" >&2
    "${MVN[@]}" >&2
  else
    rm -f "$MVN_LOG"
    echo "bench-jmh: the build failed (above), not for a missing artifact; no online retry" >&2
    exit 1
  fi
fi
rm -f "$MVN_LOG"
if $BUILD_ONLY; then
  echo "$BUILD_DIR/jmh/benchmarks.jar"
  exit 0
fi

read -r -a OPTS <<< "${NICSTACK_JMH_OPTS:--f 1 -wi 3 -w 1 -i 5 -r 1 -prof gc}"
if [ -n "$JSON" ]; then
  OPTS+=(-rf json -rff "$JSON")
fi

echo "nicstack: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Agrona 2.x reaches into jdk.internal.misc: the runner JVM needs the export too (the forks get it from @Fork).
exec java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar "$BUILD_DIR/jmh/benchmarks.jar" "$REGEX" "${OPTS[@]}" "$@"
