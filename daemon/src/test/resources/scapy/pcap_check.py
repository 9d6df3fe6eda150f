"""Reads a pcap written by the daemon and checks every IPv4/ICMP/UDP checksum by recomputing it.

usage: pcap_check.py FILE   prints "frames N icmp I udp U arp A bad B" and exits 1 if any checksum is wrong.
"""
import sys

from scapy.all import ARP, ICMP, IP, UDP, rdpcap

frames = rdpcap(sys.argv[1])
icmp = udp = arp = bad = 0
for f in frames:
    if ARP in f:
        arp += 1
    if IP not in f:
        continue
    ip = f[IP]
    if ip.src != "198.18.0.2":
        continue  # only what the daemon sent is ours to check
    rebuilt = ip.copy()
    del rebuilt.chksum
    if IP(bytes(rebuilt)).chksum != ip.chksum:
        bad += 1
    if ip.flags.MF or ip.frag:
        continue  # L4 checksum spans fragments
    if ICMP in ip:
        icmp += 1
        c = ip[ICMP].copy()
        del c.chksum
        if ICMP(bytes(c)).chksum != ip[ICMP].chksum:
            bad += 1
    if UDP in ip:
        udp += 1
        c = ip.copy()
        del c[UDP].chksum
        if IP(bytes(c))[UDP].chksum != ip[UDP].chksum:
            bad += 1
print(f"frames {len(frames)} icmp {icmp} udp {udp} arp {arp} bad {bad}")
sys.exit(1 if bad else 0)
