"""Reads a pcap written by the daemon and checks every IPv4/ICMP/UDP checksum by recomputing it.

usage: pcap_check.py FILE   prints "frames N icmp I udp U arp A bad B" and exits 1 if any checksum is wrong.

The file (~64 MB, half of it the kernel's frames) is read as a stream of raw frames: frames another host sent in
IPv4 and the daemon's fragments, whose IPv4 header checksum is all there is to check, are looked at in their bytes;
scapy dissects only the rest.
"""
import sys

from scapy.all import ARP, ICMP, IP, UDP, RawPcapReader, checksum, conf

DAEMON = "198.18.0.2"
DAEMON_BYTES = bytes(int(b) for b in DAEMON.split("."))
ETHERNET = 1  # pcap LINKTYPE_ETHERNET


def ipv4_header(data):
    """The IPv4 header of an untagged Ethernet frame, or None when it is not one or not complete."""
    if len(data) < 34 or data[12:14] != b"\x08\x00" or data[14] >> 4 != 4:
        return None
    ihl = (data[14] & 0x0F) * 4
    return data[14:14 + ihl] if ihl >= 20 and len(data) >= 14 + ihl else None


frames = icmp = udp = arp = bad = 0
reader = RawPcapReader(sys.argv[1])
link = conf.l2types.num2layer.get(reader.linktype, conf.raw_layer)
for data, _ in reader:
    frames += 1
    header = ipv4_header(data) if reader.linktype == ETHERNET else None
    if header is not None:
        if header[12:16] != DAEMON_BYTES:
            continue  # only what the daemon sent is ours to check
        fragment = (int.from_bytes(header[6:8], "big") & 0x3FFF) != 0  # MF or a fragment offset
        if fragment:
            # The same sum scapy's IP.post_build computes, over the header as sent, its checksum field zeroed.
            if checksum(header[:10] + b"\0\0" + header[12:]) != int.from_bytes(header[10:12], "big"):
                bad += 1
            continue  # L4 checksum spans fragments
    f = link(data)
    if ARP in f:
        arp += 1
    if IP not in f:
        continue
    ip = f[IP]
    if ip.src != DAEMON:
        continue
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
reader.close()
print(f"frames {frames} icmp {icmp} udp {udp} arp {arp} bad {bad}")
sys.exit(1 if bad else 0)
