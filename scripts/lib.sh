# shellcheck shell=bash
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

# pid_gone PID: no process PID runs (kill -0 answers for root; /proc as well for a caller that may not signal it).
pid_gone() { ! kill -0 "$1" 2>/dev/null && [ ! -e "/proc/$1" ]; }

# reap_stale WHO NS_REGEX [DIR_PREFIX...]: delete what an earlier run of the calling script left when it died without
# running its trap (SIGKILL): namespaces whose whole name matches NS_REGEX, whose first group is that run's pid, and
# directories DIR_PREFIX.<pid>.<mktemp suffix> (made by `mktemp -d DIR_PREFIX.$$.XXXXXX`) of this user, no symbolic
# links. Only when that pid is no running process, or is this shell's own (a run with our pid died before we started;
# call this before creating anything). Processes still in such a namespace get SIGKILL first (a daemon started without
# setpriv would otherwise keep its tap in a namespace nobody can name). A name without a pid is left alone.
reap_stale() {
  local who=$1 ns_re=$2 ns pid prefix d base p
  shift 2
  while read -r ns _; do
    [[ "$ns" =~ ^${ns_re}$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] && { [ "$pid" = "$$" ] || pid_gone "$pid"; } || continue
    echo "$who: deleting namespace $ns, left by an earlier run (pid $pid) which is gone" >&2
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || echo "$who: could not delete namespace $ns" >&2
  done < <(ip netns list 2>/dev/null)
  for prefix in "$@"; do
    for d in "$prefix".*; do
      base=${d##*/}
      [[ "$base" =~ ^"${prefix##*/}"\.([1-9][0-9]*)\.[A-Za-z0-9]{6}$ ]] || continue
      pid=${BASH_REMATCH[1]}
      [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || continue
      [ "$pid" = "$$" ] || pid_gone "$pid" || continue
      echo "$who: deleting $d, left by an earlier run (pid $pid) which is gone" >&2
      rm -rf -- "$d"
    done
  done
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
