#!/usr/bin/env bash
# Installs the system tools the tests and the demo use, from Debian's packages, when missing.
# As root it installs; otherwise it names what is missing, and fails only when something the non-root test run
# needs is missing (tools only the kernel-tagged tests, the benchmarks and the demo use are a warning: as non-root
# scripts/test.sh leaves the kernel tests out, and the benchmarks and the demo need root anyway).
set -euo pipefail
# nft lives in /usr/sbin, which Debian's PATH for users other than root leaves out: look there too (last, so no
# command found earlier changes).
PATH="$PATH:/usr/sbin:/sbin"

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
# A JDK 17 or newer: Debian's maven package depends on a JRE only (default-jre-headless), with which the build stops at
# "No compiler is provided in this environment". So javac must be there, and java and javac must be 17 or newer.
java_major() { # COMMAND: the major version COMMAND -version reports (1 for Java 8 and older), or nothing
  "$1" -version 2>&1 | sed -n -e 's/^.* version "\([0-9]*\).*/\1/p' -e 's/^javac \([0-9]*\).*/\1/p' | head -n 1
}
jdk_ok() {
  local c v
  for c in java javac; do
    command -v "$c" >/dev/null 2>&1 || return 1
    v=$(java_major "$c")
    [ -n "$v" ] && [ "$v" -ge 17 ] || return 1
  done
}
if ! jdk_ok; then
  missing+=("JDK")
  missing_for_all+=("JDK")
fi
# scapy must be importable by Debian's python3 (the first python3 on PATH may be another one); PcapWritingDeviceTest
# (tagged "tools", not "kernel") reads a pcap with it, so the non-root run needs it too.
if ! /usr/bin/python3 -c 'import scapy.all' >/dev/null 2>&1; then
  missing+=("python3-scapy")
  missing_for_all+=("python3-scapy")
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
# The JDK's package: openjdk-17-jdk-headless (Debian 12), else default-jdk-headless on a release that has no
# openjdk-17 (a newer default JDK is fine). Before `apt-get update` apt-cache may know neither: the first is named.
jdk_package() {
  if ! apt-cache show openjdk-17-jdk-headless >/dev/null 2>&1 && apt-cache show default-jdk-headless >/dev/null 2>&1; then
    echo default-jdk-headless
  else
    echo openjdk-17-jdk-headless
  fi
}
name_jdk() { # replace the placeholder JDK in missing and missing_for_all by the package's name
  local i pkg
  pkg=$(jdk_package)
  for i in "${!missing[@]}"; do [ "${missing[$i]}" != JDK ] || missing[i]=$pkg; done
  for i in "${!missing_for_all[@]}"; do [ "${missing_for_all[$i]}" != JDK ] || missing_for_all[i]=$pkg; done
}
if [ "$(id -u)" -ne 0 ]; then
  name_jdk
  if [ ${#missing_for_all[@]} -gt 0 ]; then
    echo "nicstack: missing system packages: ${missing[*]} (run as root to install them, or: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "nicstack: WARNING: missing system packages only the kernel tests, benchmarks and demo use: ${missing[*]}" \
    "(not root: those are left out; run as root to install them, or: apt-get install ${missing[*]})" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
name_jdk
echo "nicstack: installing ${missing[*]}" >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
