#!/usr/bin/env bash
# Installs the system tools the tests and the demo use, from Debian's packages, when missing.
# As root it installs; otherwise it names what is missing, and fails only when something the non-root test run
# needs is missing (tools only the kernel-tagged tests, the benchmarks and the demo use are a warning: as non-root
# scripts/test.sh leaves the kernel tests out, and the benchmarks and the demo need root anyway).
set -euo pipefail

# command-to-check : debian-package : who needs it (all = the non-root test run too; kernel = kernel tests,
# benchmarks and demo, which run as root only)
NEEDED=(
  "ip:iproute2:kernel"
  "ping:iputils-ping:kernel"
  "curl:curl:kernel"
  "openssl:openssl:kernel"
  "tcpdump:tcpdump:kernel"
  "nft:nftables:kernel"
  "iperf3:iperf3:kernel"
  "mvn:maven:all"
  "wrk:wrk:kernel"
)
missing=()
missing_for_all=()
for entry in "${NEEDED[@]}"; do
  IFS=: read -r cmd pkg scope <<<"$entry"
  if ! command -v "$cmd" >/dev/null 2>&1; then
    missing+=("$pkg")
    [ "$scope" = all ] && missing_for_all+=("$pkg")
  fi
done
# scapy must be importable by Debian's python3 (the first python3 on PATH may be another one); PcapWritingDeviceTest
# (tagged "tools", not "kernel") reads a pcap with it, so the non-root run needs it too.
if ! /usr/bin/python3 -c 'import scapy.all' >/dev/null 2>&1; then
  missing+=("python3-scapy")
  missing_for_all+=("python3-scapy")
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing_for_all[@]} -gt 0 ]; then
    echo "nicstack: missing system packages: ${missing[*]} (run as root to install them, or: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "nicstack: WARNING: missing system packages only the kernel tests, benchmarks and demo use: ${missing[*]}" \
    "(not root: those are left out; run as root to install them, or: apt-get install ${missing[*]})" >&2
  exit 0
fi
echo "nicstack: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
