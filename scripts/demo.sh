#!/usr/bin/env bash
# ./nicstack demo: the daemon on a tap inside a fresh network namespace, the kernel on the other side.
# Pings it, UDP-echoes through it, prints its counters, and removes everything it created.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ "$(id -u)" -ne 0 ]; then
  echo "nicstack demo: needs root (it creates a network namespace and a tap device)" >&2
  exit 1
fi
"$ROOT/scripts/install-deps.sh"

NS="nst-demo-$$"
TAP="nstap0"
SHM="$(mktemp -d /dev/shm/nicstack-demo.XXXXXX)"
LOG="$SHM/daemon.log"
DAEMON_PID=""

cleanup() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
  fi
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$SHM"
}
trap cleanup EXIT INT TERM

echo "== network namespace $NS, tap $TAP: daemon 198.18.0.2/24, kernel 198.18.0.1/24"
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" "$ROOT/nicstack" daemon --device "tap:$TAP" --ip 198.18.0.2/24 --host-ip 198.18.0.1/24 \
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

echo "== counters (nicstack stats --shm $SHM)"
"$ROOT/nicstack" stats --shm "$SHM"
echo "== done; cleaning up"
