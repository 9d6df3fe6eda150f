"""Malformed and hostile frames sent from the kernel side of the tap to the daemon.

usage: hostile.py IFACE DAEMON_IP DAEMON_MAC PEER_IP
Prints one line: "sent N". Every frame goes to the daemon's MAC or to broadcast on IFACE only.
"""
import random
import sys

from scapy.all import ARP, ICMP, IP, UDP, Ether, Raw, conf, sendp

iface, dst_ip, dst_mac, src_ip = sys.argv[1:5]
conf.verb = 0
random.seed(1234)
eth = Ether(dst=dst_mac, type=0x0800)  # explicit: raw bytes follow, scapy would pick 0x9000
frames = []


def raw_ip(pkt):
    """Bytes of an IP packet as scapy builds it (checksums and lengths filled)."""
    return bytes(pkt)


good = IP(src=src_ip, dst=dst_ip) / ICMP(id=1, seq=1) / Raw(b"x" * 32)
good_bytes = bytearray(raw_ip(good))

# Runts: frames shorter than an Ethernet header, and IPv4 shorter than its header.
frames.append(bytes(eth)[:10])
frames.append(bytes(eth / Raw(b"\x45\x00\x00")))
# Bad IHL (below 5, beyond the packet), bad version.
for ihl in (0, 3, 15):
    b = bytearray(good_bytes)
    b[0] = 0x40 | ihl
    frames.append(bytes(eth) + bytes(b))
b = bytearray(good_bytes)
b[0] = 0x65
frames.append(bytes(eth) + bytes(b))
# Total length beyond the frame, and below the header.
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, len=1400) / ICMP() / Raw(b"y" * 20)))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, len=12) / ICMP()))
# Bad IPv4 header checksum, bad ICMP checksum, bad UDP checksum.
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, chksum=0x1234) / ICMP()))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip) / ICMP(chksum=0x1234) / Raw(b"z" * 8)))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip) / UDP(sport=1, dport=7, chksum=0x1234) / Raw(b"u" * 8)))
# UDP length field lies (longer than the IP payload, shorter than its header).
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip) / UDP(sport=1, dport=7, len=200) / Raw(b"u" * 8)))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip) / UDP(sport=1, dport=7, len=3) / Raw(b"u" * 8)))
# Bad IP option lengths: zero length, length past the header, truncated option.
for opts in (b"\x07\x00\x00\x00", b"\x07\x28\x04\x00", b"\x01\x01\x01\x44"):
    frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, options=[]) / ICMP()))
    pkt = bytearray(bytes(IP(src=src_ip, dst=dst_ip, ihl=6, options=opts) / ICMP()))
    frames.append(bytes(eth) + bytes(pkt))
# TTL 0 (taken and answered: RFC 1122 3.2.1.7), multicast source, not for us.
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, ttl=0) / ICMP()))
frames.append(bytes(eth / IP(src="224.0.0.1", dst=dst_ip) / ICMP()))
frames.append(bytes(eth / IP(src=src_ip, dst="198.18.0.77") / ICMP()))
# Overlapping fragments (a Teardrop-like pair) and fragments that never complete.
payload = bytes(ICMP(id=9, seq=9) / Raw(b"F" * 1200))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=4242, flags="MF", frag=0, proto=1) / Raw(payload[:800])))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=4242, flags="MF", frag=50, proto=1) / Raw(payload[400:1200])))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=4242, frag=150, proto=1) / Raw(payload[1200:])))
for i in range(40):
    frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=5000 + i, flags="MF", frag=10 * i, proto=17) / Raw(b"N" * 64)))
# Fragment running past 65535, non-multiple-of-8 middle fragment.
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=7, frag=8190, proto=1) / Raw(b"E" * 100)))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, id=8, flags="MF", frag=0, proto=1) / Raw(b"E" * 13)))
# Garbage ARP: wrong hardware length, unknown opcode, truncated, multicast sender.
frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP(hwlen=8, pdst=dst_ip)))
frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP(op=9, pdst=dst_ip)))
frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / Raw(b"\x00\x01\x08\x00\x06")))
frames.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP(hwsrc="01:00:5e:00:00:01", psrc="198.18.0.9", pdst=dst_ip)))
# Unknown ethertype, unknown IP protocol.
frames.append(bytes(Ether(dst=dst_mac, type=0x88B5) / Raw(b"?" * 50)))
frames.append(bytes(eth / IP(src=src_ip, dst=dst_ip, proto=253) / Raw(b"?" * 20)))
# Random garbage after a valid Ethernet header, and random bit flips of a good frame.
for _ in range(300):
    frames.append(bytes(eth) + bytes(random.getrandbits(8) for _ in range(random.randint(0, 120))))
good_frame = bytearray(bytes(eth) + bytes(good_bytes))
for _ in range(300):
    b = bytearray(good_frame)
    for _ in range(random.randint(1, 4)):
        at = random.randrange(14, len(b))
        b[at] ^= 1 << random.randrange(8)
    frames.append(bytes(b))

sendp(frames, iface=iface, verbose=False)
print(f"sent {len(frames)}")
