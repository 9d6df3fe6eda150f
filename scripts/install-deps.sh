#!/usr/bin/env bash
# Installs the system tools the tests and the demo use, from Debian's packages, when missing.
# As root it installs; otherwise it names what is missing and fails.
set -euo pipefail

# command-to-check : debian-package
NEEDED=(
  "ip:iproute2"
  "ping:iputils-ping"
  "curl:curl"
  "openssl:openssl"
  "tcpdump:tcpdump"
  "nft:nftables"
  "iperf3:iperf3"
  "mvn:maven"
  "wrk:wrk"
)
missing=()
for pair in "${NEEDED[@]}"; do
  cmd="${pair%%:*}"; pkg="${pair##*:}"
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
# scapy must be importable by Debian's python3 (the first python3 on PATH may be another one).
if ! /usr/bin/python3 -c 'import scapy.all' >/dev/null 2>&1; then
  missing+=("python3-scapy")
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "nicstack: missing system packages: ${missing[*]} (run as root to install them, or: apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "nicstack: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
