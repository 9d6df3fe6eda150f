#!/usr/bin/env bash
# Bulk TCP goodput over a tap, side by side in one run (results are medians of REPS runs):
#   1. raw tap capacity, measured by TapCapacity (jmh/.../tools, the same TapDevice code as the daemon) in three modes:
#      - reflect (issue 3's reference): a UDP flood of 1448-byte datagrams, which the kernel cuts from 45-datagram
#        buffers (UDP GSO, scripts/bench/bulk_peer.py blast) so the sender's system calls are not the limit, is
#        written straight back, one frame per read(2) and per write(2), to a kernel socket the tool binds and never
#        reads (so no ICMP port unreachable per datagram); capacity = frames written back per second x 1448 (the MSS
#        with timestamps). TCP with offload crosses the tap in TSO superframes (many segments per system call) and
#        passes this figure by far, so it is no bound for TCP: the summary prints TCP's ratio to it, worded so
#      - sink: the same flood, read and counted only: the limit of kernel -> nicstack at one frame per read(2)
#        (--no-offload); with offload TCP arrives in TSO superframes of up to 45 segments per read and can pass it
#      - source: 1448-byte datagrams written into the tap as fast as it takes them, counted by the kernel's UDP
#        as they reach a socket the tool never reads (dropped there): the limit of nicstack -> kernel at one frame
#        per write(2) (--no-offload); with offload TCP leaves in TSO superframes of up to 32 segments per writev(2)
#        and can pass it
#   2. nicstack daemon: kernel -> nicstack (discard service) and nicstack -> kernel (chargen), with the
#      tap's checksum offload (the default) and with --no-offload; each daemon first moves WARMUP bytes each way
#      untimed, so the timed transfers see compiled code, as a long-running daemon does
#   3. kernel -> kernel over a veth pair between two namespaces, same client, for context
# Every namespace is created here and deleted on exit; addresses are 198.18.0.0/15 only.
# usage: scripts/bench-tcp.sh [BYTES=500000000] [REPS=3] [WARMUP=300000000]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/lib.sh"
BYTES="${1:-500000000}"
REPS="${2:-3}"
WARMUP="${3:-300000000}"
for n in "$BYTES" "$REPS" "$WARMUP"; do
  case "$n" in ''|*[!0-9]*|0) echo "usage: $0 [BYTES >= 1] [REPS >= 1] [WARMUP >= 1]" >&2; exit 2 ;; esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-tcp: needs root (namespaces, taps)" >&2; exit 1; }
"$ROOT/scripts/install-deps.sh"
# The build goes under this checkout's target/ (not a fixed /tmp path another user could plant jars in).
BUILD="${NICSTACK_BENCH_BUILD_DIR:-$ROOT/target/bench-tcp-build}"
(cd "$ROOT" && mvn -B -q -DskipTests -Dnicstack.buildDir="$BUILD/\${project.artifactId}" package >/dev/null)
JAVA=(java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED)
DAEMON_CP="$BUILD/daemon/nicstack-daemon.jar:$BUILD/daemon/lib/*"
TOOLS_CP="$BUILD/jmh/benchmarks.jar"
PEER=/usr/bin/python3
PEER_PY="$ROOT/scripts/bench/bulk_peer.py"
# Long-lived children get SIGKILL when this script dies, even by SIGKILL (util-linux setpriv, PR_SET_PDEATHSIG).
PDEATH=(); command -v setpriv >/dev/null && PDEATH=(setpriv --pdeathsig KILL)
# Every name carries this shell's pid: a run killed by SIGKILL (no trap) leaves them, and the next run deletes those
# whose pid is gone.
reap_stale bench-tcp 'nst-bench-([0-9]+)-[ab]' /dev/shm/nicstack-bench
NS1="nst-bench-$$-a"; NS2="nst-bench-$$-b"; SHM="$(mktemp -d "/dev/shm/nicstack-bench.$$.XXXXXX")"
# Every background pid this shell starts, until it has been waited for (so cleanup never signals a reused pid).
# Everything that starts one runs in this shell, never in a $( ) or <( ) subshell.
PIDS=()
forget() { local keep=() p; for p in "${PIDS[@]:-}"; do [ -n "$p" ] && [ "$p" != "$1" ] && keep+=("$p"); done; PIDS=("${keep[@]:-}"); }
cleanup() {
  stop_pids
  ip netns del "$NS1" 2>/dev/null || true
  ip netns del "$NS2" 2>/dev/null || true
  rm -rf "$SHM"
}
trap cleanup EXIT
trap 'echo "bench-tcp: interrupted" >&2; exit 130' INT
trap 'echo "bench-tcp: terminated" >&2; exit 143' TERM

# figure WHAT FILE: the MB/s figure FILE reports (the number before "MB/s"); a run with none, or with 0, fails the
# whole script (a rep must never drop out of a median, or make a ratio divide by zero, without a word)
figure() {
  local v
  v=$(awk '{for (i=2;i<=NF;i++) if ($i=="MB/s") v=$(i-1)} END {if (v ~ /^[0-9.]+$/ && v+0 > 0) print v}' "$2")
  [ -n "$v" ] || { echo "bench-tcp: no MB/s figure (or 0) from $1; its output:" >&2; cat "$2" >&2; exit 1; }
  echo "$v"
}
# peer NS SECONDS LOG ARGS...: bulk_peer.py ARGS in namespace NS, bounded, output to LOG; a failure fails the script
peer() {
  local ns=$1 secs=$2 log=$3; shift 3
  ip netns exec "$ns" timeout --foreground "$secs" "$PEER" "$PEER_PY" "$@" >"$log" 2>&1 \
    || { echo "bench-tcp: bulk_peer.py $* failed (exit $?); its output:" >&2; cat "$log" >&2; exit 1; }
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# FILE PATTERN PID SECONDS: PATTERN in FILE while PID lives, or fail loudly. FILE must have been emptied (: >FILE)
# before PID was started: `cmd >FILE &` truncates it in the child, after the fork, so a line of an earlier run (the
# logs are reused across reps) could still match.
wait_for() {
  for _ in $(seq $(($4 * 20))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "$2" "$1" 2>/dev/null && return 0
  echo "bench-tcp: '$2' did not appear in $1 within $4 s:" >&2; cat "$1" >&2; exit 1
}
finish() { # PID SECONDS: wait for PID to exit on its own, SIGKILL it after SECONDS; forget it; its exit code
  local st=0
  for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then echo "bench-tcp: pid $1 still running after $2 s: killed" >&2; kill -KILL "$1" 2>/dev/null || true; fi
  wait "$1" 2>/dev/null || st=$?
  forget "$1"
  return "$st"
}
stop() { # PID: SIGTERM, up to 15 s, then SIGKILL; forget it
  kill -TERM "$1" 2>/dev/null || true
  finish "$1" 15 || true
}

# tap_capacity MODE: one TapCapacity run in a fresh namespace; prints the MB/s it reports (frames/s x 1448), or fails
tap_capacity() {
  local mode="$1"
  fresh_ns "$NS1"
  : >"$SHM/cap.log"
  "${PDEATH[@]}" ip netns exec "$NS1" "${JAVA[@]}" -cp "$TOOLS_CP" io.nicstack.jmh.tools.TapCapacity "$mode" nstap0 6 \
      >"$SHM/cap.log" 2>&1 &
  local rp=$!; PIDS+=("$rp")
  wait_for "$SHM/cap.log" ready "$rp" 20
  ip netns exec "$NS1" ip addr add 198.18.0.1/24 dev nstap0
  ip netns exec "$NS1" ip link set nstap0 up
  ip netns exec "$NS1" ip neigh replace 198.18.0.2 lladdr 02:00:c6:12:00:02 dev nstap0
  # reflect binds the socket its reflections land on once the link is up: no flood before that
  [ "$mode" != reflect ] || wait_for "$SHM/cap.log" '^capacity bound' "$rp" 20
  if [ "$mode" != source ]; then
    peer "$NS1" 60 "$SHM/blast.log" blast 198.18.0.2 5201 4
  fi
  finish "$rp" 60 || { echo "bench-tcp: TapCapacity $mode failed (exit $?); its output:" >&2; cat "$SHM/cap.log" >&2; exit 1; }
  figure "TapCapacity $mode" "$SHM/cap.log"
}

# nicstack_bulk [DAEMON OPTIONS]: writes "UP DOWN" (MB/s) to $SHM/bulk.out
nicstack_bulk() {
  fresh_ns "$NS1"
  # extra daemon options (e.g. --no-offload) come as arguments
  : >"$SHM/daemon.log"
  "${PDEATH[@]}" ip netns exec "$NS1" "${JAVA[@]}" -Xmx1g -cp "$DAEMON_CP" io.nicstack.daemon.Main daemon --device tap:nstap0 \
      --ip 198.18.0.2/24 --host-ip 198.18.0.1/24 --services discard,chargen --shm "$SHM/d" "$@" >"$SHM/daemon.log" 2>&1 &
  local dp=$!; PIDS+=("$dp")
  wait_for "$SHM/daemon.log" '^nicstack ready' "$dp" 30
  local up down
  peer "$NS1" 120 "$SHM/peer.log" send 198.18.0.2 9 "$WARMUP"
  peer "$NS1" 120 "$SHM/peer.log" recv 198.18.0.2 19 "$WARMUP"
  peer "$NS1" 120 "$SHM/peer.log" send 198.18.0.2 9 "$BYTES"; up=$(figure "kernel -> nicstack (send to discard)" "$SHM/peer.log")
  peer "$NS1" 120 "$SHM/peer.log" recv 198.18.0.2 19 "$BYTES"; down=$(figure "nicstack -> kernel (recv from chargen)" "$SHM/peer.log")
  stop "$dp"
  ip netns del "$NS1"
  echo "$up $down" >"$SHM/bulk.out"
}

# kernel_veth: writes "UP DOWN" (MB/s) to $SHM/veth.out
kernel_veth() {
  fresh_ns "$NS1"; fresh_ns "$NS2"
  ip link add nstv0 netns "$NS1" type veth peer name nstv1 netns "$NS2"
  ip netns exec "$NS1" ip addr add 198.18.1.1/24 dev nstv0; ip netns exec "$NS1" ip link set nstv0 up
  ip netns exec "$NS2" ip addr add 198.18.1.2/24 dev nstv1; ip netns exec "$NS2" ip link set nstv1 up
  local up down sp
  # bulk_peer.py prints "listening" once its socket listens: the client connects only then
  : >"$SHM/sink.log"
  "${PDEATH[@]}" ip netns exec "$NS2" timeout 120 "$PEER" "$PEER_PY" sink 198.18.1.2 9 >"$SHM/sink.log" 2>&1 &
  sp=$!; PIDS+=("$sp")
  wait_for "$SHM/sink.log" '^listening' "$sp" 10
  peer "$NS1" 120 "$SHM/peer.log" send 198.18.1.2 9 "$BYTES"; up=$(figure "kernel veth send" "$SHM/peer.log")
  finish "$sp" 130 || true
  : >"$SHM/source.log"
  "${PDEATH[@]}" ip netns exec "$NS2" timeout 120 "$PEER" "$PEER_PY" source 198.18.1.2 19 >"$SHM/source.log" 2>&1 &
  sp=$!; PIDS+=("$sp")
  wait_for "$SHM/source.log" '^listening' "$sp" 10
  peer "$NS1" 120 "$SHM/peer.log" recv 198.18.1.2 19 "$BYTES"; down=$(figure "kernel veth recv" "$SHM/peer.log")
  finish "$sp" 130 || true
  ip netns del "$NS2"; ip netns del "$NS1"
  echo "$up $down" >"$SHM/veth.out"
}

: >"$SHM/cap"; : >"$SHM/capin"; : >"$SHM/capout"; : >"$SHM/up"; : >"$SHM/down"; : >"$SHM/nup"; : >"$SHM/ndown"; : >"$SHM/kup"; : >"$SHM/kdown"
for rep in $(seq "$REPS"); do
  tap_capacity reflect >>"$SHM/cap"; tap_capacity sink >>"$SHM/capin"; tap_capacity source >>"$SHM/capout"
  nicstack_bulk; read -r up down <"$SHM/bulk.out"; echo "$up" >>"$SHM/up"; echo "$down" >>"$SHM/down"
  nicstack_bulk --no-offload; read -r nup ndown <"$SHM/bulk.out"; echo "$nup" >>"$SHM/nup"; echo "$ndown" >>"$SHM/ndown"
  kernel_veth; read -r kup kdown <"$SHM/veth.out"; echo "$kup" >>"$SHM/kup"; echo "$kdown" >>"$SHM/kdown"
  echo "rep $rep: tap capacity reflect $(tail -1 "$SHM/cap") / in $(tail -1 "$SHM/capin") / out $(tail -1 "$SHM/capout") MB/s; nicstack kernel->nicstack $up MB/s, nicstack->kernel $down MB/s (--no-offload: $nup / $ndown MB/s); kernel veth $kup / $kdown MB/s" >&2
done
CAP=$(median <"$SHM/cap"); CAPIN=$(median <"$SHM/capin"); CAPOUT=$(median <"$SHM/capout")
UP=$(median <"$SHM/up"); DOWN=$(median <"$SHM/down"); NUP=$(median <"$SHM/nup"); NDOWN=$(median <"$SHM/ndown")
KUP=$(median <"$SHM/kup"); KDOWN=$(median <"$SHM/kdown")
pct() { awk -v a="$1" -v b="$2" 'BEGIN{if (b+0 > 0) printf "%.0f", 100*a/b; else printf "n/a"}'; }
echo "medians of $REPS runs, $BYTES bytes per transfer (nicstack after $WARMUP bytes each way untimed):"
echo "  tap capacity, reflector (frames written back/s x 1448): $CAP MB/s (issue 3's reference; one frame per system call)"
echo "  tap capacity, kernel -> device (sink):     $CAPIN MB/s"
echo "  tap capacity, device -> kernel (source):   $CAPOUT MB/s"
echo "  (the reflector, sink and source move one frame per read(2)/write(2); TCP with offload moves TSO superframes,"
echo "   so it can pass all three: they bound it only with --no-offload, the sink and source each one way)"
echo "  kernel -> nicstack (discard):  $UP MB/s  ($(pct "$UP" "$CAP")% vs the one-frame-per-syscall reflector (not a bound for TSO superframes), $(pct "$UP" "$CAPIN")% of the sink)"
echo "  nicstack -> kernel (chargen):  $DOWN MB/s  ($(pct "$DOWN" "$CAP")% vs the one-frame-per-syscall reflector (not a bound for TSO superframes), $(pct "$DOWN" "$CAPOUT")% of the source)"
echo "  with --no-offload:            $NUP MB/s up ($(pct "$NUP" "$CAPIN")% of the sink), $NDOWN MB/s down ($(pct "$NDOWN" "$CAPOUT")% of the source)"
echo "  kernel -> kernel over veth:    $KUP MB/s up, $KDOWN MB/s down (context)"
