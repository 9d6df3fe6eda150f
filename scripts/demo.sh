#!/usr/bin/env bash
# ./nicstack demo [--serve]: the daemon on a tap inside a fresh network namespace, the kernel on the other side.
# Pings it, UDP-echoes through it, serves a generated 20 MB file with the HTTP example app (a host app that
# talks to the daemon only through shared memory) and downloads it with curl from the kernel side, checking
# its SHA-256; prints the counters and removes everything it created.
# With --serve it then keeps running and prints the curl command to try, until Ctrl-C.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/lib.sh"

SERVE=0
for arg in "$@"; do
  case "$arg" in
    --serve) SERVE=1 ;;
    -h|--help) echo "usage: nicstack demo [--serve]"; exit 0 ;;
    *) echo "nicstack demo: unknown option '$arg' (usage: nicstack demo [--serve])" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "nicstack demo: needs root (it creates a network namespace and a tap device)" >&2
  exit 1
fi
"$ROOT/scripts/install-deps.sh"

# Every name carries this shell's pid: a run killed by SIGKILL (no trap) leaves them, and the next run deletes those
# whose pid is gone.
reap_stale "nicstack demo" 'nst-demo-([0-9]+)' /dev/shm/nicstack-demo /tmp/nicstack-demo-www /tmp/nicstack-demo-download
NS="nst-demo-$$"
TAP="nstap0"
SHM="$(mktemp -d "/dev/shm/nicstack-demo.$$.XXXXXX")"
LOG="$SHM/daemon.log"
WWW="$(mktemp -d "/tmp/nicstack-demo-www.$$.XXXXXX")"
DOWNLOAD="$(mktemp -d "/tmp/nicstack-demo-download.$$.XXXXXX")"
APP_LOG="$DOWNLOAD/app.log"
DAEMON_PID=""
APP_PID=""
# The daemon and the app get SIGKILL when this script dies, even by SIGKILL (util-linux setpriv, PR_SET_PDEATHSIG).
PDEATH=(); command -v setpriv >/dev/null && PDEATH=(setpriv --pdeathsig KILL)

cleanup() {
  if [ -n "$APP_PID" ] && kill -0 "$APP_PID" 2>/dev/null; then
    kill -TERM "$APP_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$APP_PID" 2>/dev/null || true
  fi
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
  fi
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$SHM" "$WWW" "$DOWNLOAD"
}
trap cleanup EXIT
trap 'echo "nicstack demo: interrupted" >&2; exit 130' INT TERM

echo "== network namespace $NS, tap $TAP: daemon 198.18.0.2/24, kernel 198.18.0.1/24"
# IPv6 off before the tap exists: no DAD, router solicitations or MLD reports (addresses outside 198.18.0.0/15).
fresh_ns "$NS"
"${PDEATH[@]}" ip netns exec "$NS" "$ROOT/nicstack" daemon --device "tap:$TAP" --ip 198.18.0.2/24 --host-ip 198.18.0.1/24 \
    --shm "$SHM" --services echo >"$LOG" 2>&1 &
DAEMON_PID=$!

for _ in $(seq 100); do
  grep -q '^nicstack ready' "$LOG" 2>/dev/null && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { echo "daemon exited:"; cat "$LOG"; exit 1; }
  sleep 0.1
done
grep '^nicstack ready' "$LOG" || { echo "daemon not ready after 10 s:"; cat "$LOG"; exit 1; }

echo "== ping from the kernel side"
ip netns exec "$NS" ping -c 5 -i 0.2 -W 1 198.18.0.2
echo "== ping with 4000-byte payload (fragmented both ways)"
ip netns exec "$NS" ping -c 2 -i 0.2 -W 1 -s 4000 198.18.0.2
echo "== kernel neighbour entry"
ip netns exec "$NS" ip neigh show 198.18.0.2

echo "== UDP echo (port 7) from a kernel socket"
ip netns exec "$NS" /usr/bin/python3 - <<'PY'
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for size in (1, 100, 1472, 4000, 8000):
    data = os.urandom(size)
    s.sendto(data, ("198.18.0.2", 7))
    back, _ = s.recvfrom(65535)
    print(f"  {size:5d} bytes echoed {'exactly' if back == data else 'WRONG'}")
    assert back == data
# Only a connected UDP socket hears about ICMP errors (Linux, RFC 1122 4.1.3.3).
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.settimeout(2)
c.connect(("198.18.0.2", 9999))
c.send(b"anyone?")
try:
    c.recv(100)
    print("  closed port: unexpected answer")
except ConnectionRefusedError:
    print("  closed port 9999: connection refused (ICMP port unreachable)")
PY

echo "== HTTP app (a host JVM on the shared-memory pipes) serving a generated 20 MB file"
head -c $((20 * 1024 * 1024)) /dev/urandom >"$WWW/big.bin"
echo '<html><body><p>served by nicstack through shared-memory pipes</p><a href="big.bin">big.bin</a></body></html>' \
  >"$WWW/index.html"
EXPECTED="$(sha256sum "$WWW/big.bin" | cut -d' ' -f1)"
"${PDEATH[@]}" "$ROOT/nicstack" app http --shm "$SHM" --port 80 --root "$WWW" >"$APP_LOG" 2>&1 &
APP_PID=$!
for _ in $(seq 300); do
  grep -q '^nicstack app ready' "$APP_LOG" 2>/dev/null && break
  kill -0 "$APP_PID" 2>/dev/null || { echo "nicstack demo: the HTTP app exited:" >&2; cat "$APP_LOG" >&2; exit 1; }
  sleep 0.1
done
grep '^nicstack app ready' "$APP_LOG" || { echo "nicstack demo: HTTP app not ready after 30 s:" >&2; cat "$APP_LOG" >&2; exit 1; }

echo "== curl from the kernel side: http://198.18.0.2/big.bin"
if ! ip netns exec "$NS" curl -sS --max-time 120 -o "$DOWNLOAD/big.bin" \
    -w '  HTTP %{http_code}, %{size_download} bytes in %{time_total} s (%{speed_download} bytes/s)\n' \
    http://198.18.0.2/big.bin; then
  echo "nicstack demo: FAILED: curl could not download big.bin (app log: $(tail -3 "$APP_LOG"))" >&2
  exit 1
fi
GOT="$(sha256sum "$DOWNLOAD/big.bin" | cut -d' ' -f1)"
echo "  sha256 served     $EXPECTED"
echo "  sha256 downloaded $GOT"
if [ "$GOT" != "$EXPECTED" ]; then
  echo "nicstack demo: FAILED: the downloaded file differs from the served one" \
    "($(stat -c %s "$DOWNLOAD/big.bin") of $(stat -c %s "$WWW/big.bin") bytes)" >&2
  exit 1
fi
echo "  byte-exact"
rm -f "$DOWNLOAD/big.bin"

echo "== counters (nicstack stats --shm $SHM)"
"$ROOT/nicstack" stats --shm "$SHM"

if [ "$SERVE" -eq 1 ]; then
  echo
  echo "== serving until Ctrl-C; try (as root, in another terminal):"
  echo "  ip netns exec $NS curl -s -o /dev/null -w '%{http_code} %{size_download} bytes %{speed_download} B/s\\n' http://198.18.0.2/big.bin"
  echo "  ip netns exec $NS curl -s http://198.18.0.2/"
  echo "  $ROOT/nicstack stats --shm $SHM"
  echo "  $ROOT/nicstack conns --shm $SHM"
  trap 'echo; echo "== stopping"; exit 0' INT TERM
  while kill -0 "$DAEMON_PID" 2>/dev/null && kill -0 "$APP_PID" 2>/dev/null; do
    sleep 1 &
    wait $! || true
  done
  echo "nicstack demo: the daemon or the HTTP app exited unexpectedly" >&2
  tail -5 "$LOG" "$APP_LOG" >&2 || true
  exit 1
fi
echo "== done; cleaning up"
