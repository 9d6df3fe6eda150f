# Shared by the bench scripts and the demo (sourced, not run). Network safety: each run makes namespaces of its own,
# turns IPv6 off in them before any link exists (no traffic outside 198.18.0.0/15), and stops every pid it started.

# ipv6_off NS: IPv6 off in namespace NS, so links made there send no DAD, router solicitations or MLD reports.
ipv6_off() {
  ip netns exec "$1" sh -c '[ ! -d /proc/sys/net/ipv6 ] || { echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
                            echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6; }'
}

# fresh_ns NS: namespace NS anew (deleted first if a crashed run left it), IPv6 off, loopback up.
fresh_ns() {
  ip netns del "$1" 2>/dev/null || true
  ip netns add "$1"
  ipv6_off "$1"
  ip netns exec "$1" ip link set lo up
}

# stop_pids: TERM every pid in the caller's PIDS array, give them 10 s to go, KILL what is left, and reap them.
stop_pids() {
  local p alive
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do
    alive=0
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
