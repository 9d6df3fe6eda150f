#!/usr/bin/env bash
# Host CPU per request and per GB served: the HTTP example app on nicstack vs the same server on the
# JDK's NIO sockets over the kernel, same files, same wrk load, in one run (results are medians of REPS):
#   1. nicstack:        daemon on a tap in a namespace + `app http` (a host JVM on the pipes; bodies of
#                       32 KiB and more go by SEND_FILE: the daemon reads the file, the app copies nothing);
#                       wrk in the namespace -> 198.18.0.2:80
#   1b. nicstack-copy:  the same with `app http --copy` (the app preads each body into the TX pipe)
#   2. kernel sendfile: `app nio-http` (NioHttpApp, FileChannel.transferTo = sendfile) in one namespace,
#                       wrk in another, joined by a veth pair -> 198.18.1.2:80
#   3. kernel copy:     the same with --copy (pread into a direct ByteBuffer + write, the data crosses
#                       user space once, as it does in the pipe app)
# For each file (1 MiB and 64 KiB) and variant: a warm-up wrk run (JIT), then the measured run
# `wrk -t2 -c32 -d${DURATION}s`; the app JVM's CPU (utime+stime from /proc/PID/stat, all threads) is
# the delta across the measured run. Also recorded: the daemon's CPU (the "NIC" side, not host CPU),
# wrk's own CPU, and the whole machine's busy time and softirq time (/proc/stat).
# Every namespace is created here and deleted on exit; addresses are 198.18.0.0/15 only.
# usage: scripts/bench-http.sh [REPS=3] [SECONDS=10]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/lib.sh"
REPS="${1:-3}"
DURATION="${2:-10}"
WARMUP="${NICSTACK_BENCH_WARMUP:-3}"
for n in "$REPS" "$DURATION" "$WARMUP"; do
  case "$n" in ''|*[!0-9]*|0) echo "usage: $0 [REPS >= 1] [SECONDS >= 1] (NICSTACK_BENCH_WARMUP >= 1)" >&2; exit 2 ;; esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-http: needs root (namespaces, taps)" >&2; exit 1; }
"$ROOT/scripts/install-deps.sh"
command -v wrk >/dev/null || { echo "bench-http: wrk is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
# The build goes under this checkout's target/ (not a fixed /tmp path another user could plant jars in).
BUILD="${NICSTACK_BENCH_BUILD_DIR:-$ROOT/target/bench-http-build}"
(cd "$ROOT" && mvn -B -q -DskipTests -Dnicstack.buildDir="$BUILD/\${project.artifactId}" -pl daemon,examples -am \
    package >/dev/null)
# The daemon as ./nicstack runs it; both apps with the same JVM and the same (default) flags.
DAEMON=(java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -XX:+UseParallelGC -Xms256m -Xmx1g
  -cp "$BUILD/daemon/nicstack-daemon.jar:$BUILD/daemon/lib/*" io.nicstack.daemon.Main daemon)
APP=(java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  -cp "$BUILD/examples/nicstack-examples.jar:$BUILD/examples/lib/*" io.nicstack.examples.Main app)
# Long-lived children get SIGKILL when this script dies, even by SIGKILL (util-linux setpriv, PR_SET_PDEATHSIG).
PDEATH=(); command -v setpriv >/dev/null && PDEATH=(setpriv --pdeathsig KILL)
# Every name carries this shell's pid: a run killed by SIGKILL (no trap) leaves them, and the next run deletes those
# whose pid is gone.
reap_stale bench-http 'nst-hbench-([0-9]+)-[ab]' /dev/shm/nicstack-hbench /tmp/nicstack-hbench
NS1="nst-hbench-$$-a"; NS2="nst-hbench-$$-b"
SHM="$(mktemp -d "/dev/shm/nicstack-hbench.$$.XXXXXX")"
WORK="$(mktemp -d "/tmp/nicstack-hbench.$$.XXXXXX")"
WWW="$WORK/www"
HZ="$(getconf CLK_TCK)"
PIDS=()
cleanup() {
  stop_pids
  ip netns del "$NS1" 2>/dev/null || true
  ip netns del "$NS2" 2>/dev/null || true
  rm -rf "$SHM" "$WORK"
}
trap cleanup EXIT
trap 'echo "bench-http: interrupted" >&2; exit 130' INT
trap 'echo "bench-http: terminated" >&2; exit 143' TERM

mkdir -p "$WWW"
head -c $((1024 * 1024)) /dev/urandom >"$WWW/1m.bin"
head -c $((64 * 1024)) /dev/urandom >"$WWW/64k.bin"
FILES=(1m.bin 64k.bin)
cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK requests=%.0f duration_us=%.0f errors=%.0f status_errors=%.0f\n",
    summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout, e.status))
end
LUA

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# utime+stime of a whole process (all threads, live and exited), in clock ticks; fields 14 and 15.
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# Machine: busy ticks (user nice system irq softirq steal) and softirq ticks, summed over all CPUs.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $8}' /proc/stat; }
# FILE PATTERN PID: up to 20 s for PATTERN in FILE while PID lives. FILE must have been emptied (: >FILE) before PID
# was started: `cmd >FILE &` truncates it in the child, after the fork, so a line of an earlier run could still match.
wait_for() {
  for _ in $(seq 400); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench-http: '$2' did not appear in $1:" >&2; cat "$1" >&2; exit 1
}
stop() { # PID: SIGTERM, up to 15 s, then SIGKILL; wait, forget it (so the trap never signals a reused pid)
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && { echo "bench-http: pid $1 ignored SIGTERM for 15 s: killed" >&2; kill -KILL "$1" 2>/dev/null || true; }
  wait "$1" 2>/dev/null || true
  local keep=() p; for p in "${PIDS[@]:-}"; do [ -n "$p" ] && [ "$p" != "$1" ] && keep+=("$p"); done
  PIDS=("${keep[@]:-}")
}
is_java() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = java ] || { echo "bench-http: pid $1 is not the JVM" >&2; exit 1; }; }

# measure VARIANT REP CLIENT_NS URL_BASE APP_PID DAEMON_PID(or -): one line into $WORK/results per file
measure() {
  local variant=$1 rep=$2 ns=$3 base=$4 app=$5 daemon=$6 f
  for f in "${FILES[@]}"; do
    ip netns exec "$ns" timeout --foreground $((WARMUP + 30)) wrk -t2 -c32 -d"${WARMUP}s" "$base/$f" >"$WORK/warm.log" 2>&1 \
      || { echo "bench-http: warm-up wrk failed ($variant $f):" >&2; cat "$WORK/warm.log" >&2; exit 1; }
    sleep 0.5
    local a0 d0=0 m0 t0 a1 d1=0 m1 t1 out
    a0=$(cpu_ticks "$app"); [ "$daemon" = - ] || d0=$(cpu_ticks "$daemon"); m0=$(machine_ticks); t0=$(date +%s%N)
    # wrk's own CPU: cutime+cstime of the shell that waited for it (fields 16 and 17).
    out=$(ip netns exec "$ns" bash -c 'timeout --foreground '"$((DURATION + 30))"' wrk -t2 -c32 -d'"$DURATION"'s -s "$1" "$2" >"$3" 2>&1
                                       st=$?; sed "s/^.*) //" /proc/$$/stat | awk "{print \"WRKCPU\", \$14 + \$15}"; exit $st' \
          _ "$WORK/report.lua" "$base/$f" "$WORK/wrk.log") \
      || { echo "bench-http: wrk failed ($variant $f):" >&2; cat "$WORK/wrk.log" >&2; exit 1; }
    a1=$(cpu_ticks "$app"); [ "$daemon" = - ] || d1=$(cpu_ticks "$daemon"); m1=$(machine_ticks); t1=$(date +%s%N)
    local line; line=$(grep '^WRK ' "$WORK/wrk.log") || { echo "bench-http: no summary from wrk:" >&2; cat "$WORK/wrk.log" >&2; exit 1; }
    local req bytes errs serrs
    # Bytes from wrk's own "N requests in Ts, X.YYGB read" line (1024-based units, 3 significant digits or
    # more): the Lua summary's byte count saturates at 2^31 - 1 in Debian's wrk.
    req=$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")
    bytes=$(awk '/ requests in .* read$/ {v = $(NF - 1); u = v; sub(/^[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v)
                 m = 1; if (u == "KB") m = 1024; else if (u == "MB") m = 1024^2; else if (u == "GB") m = 1024^3
                 else if (u == "TB") m = 1024^4; printf "%.0f\n", v * m}' "$WORK/wrk.log")
    [ -n "$bytes" ] || { echo "bench-http: no byte count from wrk:" >&2; cat "$WORK/wrk.log" >&2; exit 1; }
    errs=$(sed 's/.*errors=\([0-9]*\) .*/\1/' <<<"$line"); serrs=$(sed 's/.*status_errors=\([0-9]*\).*/\1/' <<<"$line")
    [ "$req" -gt 0 ] || { echo "bench-http: no requests completed ($variant $f)" >&2; cat "$WORK/wrk.log" >&2; exit 1; }
    # A run with errors (connect, read, write, timeout or non-2xx) measured something else: fail, never count it.
    case "$errs" in ''|*[!0-9]*) echo "bench-http: no error count from wrk ($variant $f):" >&2; cat "$WORK/wrk.log" >&2; exit 1 ;; esac
    [ "$errs" -eq 0 ] || { echo "bench-http: $errs wrk errors ($serrs non-2xx) in $variant $f rep $rep; stopping (a run with errors is not counted):" >&2
                           cat "$WORK/wrk.log" >&2; exit 1; }
    read -r mb0 ms0 <<<"$m0"; read -r mb1 ms1 <<<"$m1"
    # variant file rep requests bytes wall_s app_s daemon_s wrk_s machine_busy_s machine_softirq_s errors
    awk -v v="$variant" -v f="$f" -v r="$rep" -v q="$req" -v b="$bytes" -v w="$(( (t1 - t0) / 1000000 ))" \
        -v a=$((a1 - a0)) -v d=$((d1 - d0)) -v k="$(awk '{print $2}' <<<"$out")" -v mb=$((mb1 - mb0)) \
        -v ms=$((ms1 - ms0)) -v hz="$HZ" -v e="$errs" \
        'BEGIN {printf "%s %s %s %.0f %.0f %.3f %.2f %.2f %.2f %.2f %.2f %.0f\n", v, f, r, q, b, w / 1000, a / hz, d / hz, k / hz, mb / hz, ms / hz, e}' \
        >>"$WORK/results"
    tail -1 "$WORK/results" | awk '{printf "  %-16s %-7s rep %s: %7d req, %6.2f GB, %6.0f MB/s; app %5.2f s, daemon %5.2f s, wrk %5.2f s, machine %5.2f s (softirq %4.2f) CPU\n",
        $1, $2, $3, $4, $5 / 1e9, $5 / 1e6 / $6, $7, $8, $9, $10, $11}' >&2
  done
}

run_nicstack() {
  local rep=$1 variant=$2; shift 2
  fresh_ns "$NS1"
  : >"$WORK/daemon.log"
  "${PDEATH[@]}" ip netns exec "$NS1" "${DAEMON[@]}" --device tap:nstap0 --ip 198.18.0.2/24 --host-ip 198.18.0.1/24 \
      --shm "$SHM/d" >"$WORK/daemon.log" 2>&1 &
  local dp=$!; PIDS+=("$dp")
  wait_for "$WORK/daemon.log" '^nicstack ready' "$dp"
  : >"$WORK/app.log"
  # shellcheck disable=SC2086 # NICSTACK_HTTP_APP_OPTS: extra options for the pipe app, word-split on purpose
  "${PDEATH[@]}" ip netns exec "$NS1" "${APP[@]}" http --shm "$SHM/d" --port 80 --root "$WWW" "$@" ${NICSTACK_HTTP_APP_OPTS:-} >"$WORK/app.log" 2>&1 &
  local ap=$!; PIDS+=("$ap")
  wait_for "$WORK/app.log" '^nicstack app ready http 80' "$ap"
  is_java "$dp"; is_java "$ap"
  measure "$variant" "$rep" "$NS1" http://198.18.0.2 "$ap" "$dp"
  stop "$ap"; stop "$dp"
  ip netns del "$NS1"
}

run_kernel() {
  local rep=$1 variant=$2; shift 2
  fresh_ns "$NS1"; fresh_ns "$NS2"
  ip link add nsthv0 netns "$NS1" type veth peer name nsthv1 netns "$NS2"
  ip netns exec "$NS1" ip addr add 198.18.1.1/24 dev nsthv0; ip netns exec "$NS1" ip link set nsthv0 up
  ip netns exec "$NS2" ip addr add 198.18.1.2/24 dev nsthv1; ip netns exec "$NS2" ip link set nsthv1 up
  : >"$WORK/app.log"
  "${PDEATH[@]}" ip netns exec "$NS2" "${APP[@]}" nio-http --port 80 --root "$WWW" --bind 198.18.1.2 "$@" >"$WORK/app.log" 2>&1 &
  local ap=$!; PIDS+=("$ap")
  wait_for "$WORK/app.log" '^nicstack app ready nio-http 80' "$ap"
  is_java "$ap"
  measure "$variant" "$rep" "$NS1" http://198.18.1.2 "$ap" -
  stop "$ap"
  ip netns del "$NS1"; ip netns del "$NS2"
}

echo "bench-http: $REPS reps, wrk -t2 -c32 -d${DURATION}s (after a ${WARMUP}s warm-up) per file and variant; $(nproc) CPUs" >&2
: >"$WORK/results"
for rep in $(seq "$REPS"); do
  run_nicstack "$rep" nicstack
  run_nicstack "$rep" nicstack-copy --copy
  run_kernel "$rep" kernel-sendfile
  run_kernel "$rep" kernel-copy --copy
done

col() { awk -v v="$1" -v f="$2" -v c="$3" '$1 == v && $2 == f {print $c}' "$WORK/results" | median; }
# per-run derived metrics: column expression over one result line
derived() { awk -v v="$1" -v f="$2" '$1 == v && $2 == f {print '"$3"'}' "$WORK/results" | median; }
echo
echo "medians of $REPS runs; wrk -t2 -c32 -d${DURATION}s; GB = 1e9 bytes as read by wrk (headers included);"
echo "CPU = utime+stime from /proc (all threads); machine = all $(nproc) CPUs' busy time from /proc/stat"
printf '%-8s %-16s %7s %7s %10s %9s %12s %9s %13s %13s %9s\n' file variant req/s MB/s "app ms/1k" "app s/GB" \
  "daemon s/GB" "wrk s/GB" "machine s/GB" "softirq s/GB" "app util"
for f in "${FILES[@]}"; do
  for v in nicstack nicstack-copy kernel-sendfile kernel-copy; do
    printf '%-8s %-16s %7.0f %7.0f %10.2f %9.3f %12.3f %9.3f %13.3f %13.3f %8.0f%%\n' "$f" "$v" \
      "$(derived "$v" "$f" '$4 / $6')" "$(derived "$v" "$f" '$5 / 1e6 / $6')" \
      "$(derived "$v" "$f" '$7 * 1e6 / $4')" "$(derived "$v" "$f" '$7 / ($5 / 1e9)')" \
      "$(derived "$v" "$f" '$8 / ($5 / 1e9)')" "$(derived "$v" "$f" '$9 / ($5 / 1e9)')" \
      "$(derived "$v" "$f" '$10 / ($5 / 1e9)')" "$(derived "$v" "$f" '$11 / ($5 / 1e9)')" \
      "$(derived "$v" "$f" '100 * $7 / $6')"
  done
done
echo
echo "host (app JVM) CPU per GB, nicstack / kernel (ratio of the medians; goal <= 0.5):"
for f in "${FILES[@]}"; do
  for nv in nicstack nicstack-copy; do
    n=$(derived "$nv" "$f" '$7 / ($5 / 1e9)')
    for v in kernel-sendfile kernel-copy; do
      k=$(derived "$v" "$f" '$7 / ($5 / 1e9)')
      echo "  $f $nv vs $v: $(awk -v n="$n" -v k="$k" 'BEGIN {if (k + 0 > 0) printf "%.2f", n / k; else printf "n/a (no kernel CPU measured)"}')"
    done
  done
done
echo
echo "per run (variant file rep requests bytes wall_s app_cpu_s daemon_cpu_s wrk_cpu_s machine_busy_s machine_softirq_s wrk_errors):"
cat "$WORK/results"
