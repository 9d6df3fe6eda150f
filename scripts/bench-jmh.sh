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
# Offline when the local repository already has everything; fall back to online for a fresh machine.
# Maven's output goes to stderr, so that stdout carries only what this script prints (the jar's path).
mvn -B -q -o -pl stack-core,nic-driver,jmh -am "-Dnicstack.buildDir=$BUILD_DIR/\${project.artifactId}" -DskipTests package >&2 \
  || mvn -B -q -pl stack-core,nic-driver,jmh -am "-Dnicstack.buildDir=$BUILD_DIR/\${project.artifactId}" -DskipTests package >&2
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
