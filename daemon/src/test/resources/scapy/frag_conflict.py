"""A UDP datagram in fragments one of which repeats a held range with the other MF flag, then a good one.

usage: frag_conflict.py CASE IFACE DAEMON_IP DAEMON_MAC IP_ID

A fake host, 198.18.0.78 (an address no one in the namespace owns) with a locally administered MAC, sends hand-made
fragments to the daemon's UDP echo (port 7) from a high port (the echo drops datagrams from ports below 1024) and
reads the answers, with one AF_PACKET socket on IFACE only; it announces itself with an ARP request and answers the
daemon's ARP requests for its address. Its own address keeps the daemon's per-source reassembly limit clear of what
earlier tests left from the kernel's address. A datagram is 40 bytes of UDP payload, so 48 bytes of IP payload in
fragments [0, 16) MF, [16, 32) MF and [32, 48) last; the echo comes back in one frame. CASE is one of:
  middle-as-last  the first two fragments, then the middle range again with MF clear ("it ends here")
  last-with-more  the last fragment, then its range again with MF set ("more follows")
Either contradicts what is held about where the datagram ends (a conflict, not a duplicate): no echo may come back.
Then a well-formed datagram with the same IP ID and other bytes, in the same three fragments: it must be echoed exactly.

Prints one line per step and a verdict line "PASS CASE ..." (exit 0) or "FAIL CASE ..." (exit 1). Every wait is
bounded; the whole run is killed by an alarm.
"""
import os
import random
import select
import signal
import sys
import time

from scapy.all import ARP, IP, UDP, Ether, Raw, conf

conf.verb = 0

FAKE_IP = "198.18.0.78"
FAKE_MAC = "02:00:c6:12:00:4e"
ECHO = 7
PAYLOAD = 40
CUTS = ((0, 16), (16, 32), (32, PAYLOAD + 8))
RUN_LIMIT_SECONDS = 30
NO_ECHO_WAIT = 1.5
ECHO_WAIT = 3.0


class Fail(Exception):
    pass


class Host:
    """The fake host: one L2 socket, answers ARP for FAKE_IP, keeps the UDP datagrams the daemon sends it."""

    def __init__(self, iface, daemon_ip, daemon_mac):
        self.dip = daemon_ip
        self.dmac = daemon_mac
        self.sock = conf.L2socket(iface=iface, promisc=False)
        self.inbox = []
        self.sock.send(Ether(src=FAKE_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=FAKE_MAC, psrc=FAKE_IP,
                                                                        hwdst="00:00:00:00:00:00", pdst=daemon_ip))
        self.pump(0.2)
        self.inbox.clear()

    def close(self):
        self.sock.close()

    def pump(self, seconds):
        """Read frames for up to `seconds` (bounded), answering ARP and keeping UDP datagrams for us."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.sock.ins], [], [], left)
            if not r:
                continue
            p = self.sock.recv()
            if p is None:
                continue
            if ARP in p and p[ARP].op == 1 and p[ARP].pdst == FAKE_IP:
                self.sock.send(Ether(src=FAKE_MAC, dst=p[ARP].hwsrc) / ARP(op=2, hwsrc=FAKE_MAC, psrc=FAKE_IP,
                                                                         hwdst=p[ARP].hwsrc, pdst=p[ARP].psrc))
            elif IP in p and p[IP].src == self.dip and p[IP].dst == FAKE_IP:
                self.inbox.append(p)

    def send_fragments(self, ident, udp, pieces):
        """Send (start, end, more) pieces of the IP payload `udp` as fragments of datagram `ident`."""
        for lo, hi, more in pieces:
            self.sock.send(Ether(src=FAKE_MAC, dst=self.dmac) / IP(src=FAKE_IP, dst=self.dip, id=ident,
                                                                   flags="MF" if more else 0, frag=lo // 8, proto=17)
                           / Raw(udp[lo:hi]))

    def answers(self, seconds):
        """Every datagram from the daemon to us within `seconds`, as (udp payload or None, packet)."""
        self.pump(seconds)
        got = [(bytes(p[UDP].payload) if UDP in p else None, p) for p in self.inbox]
        self.inbox.clear()
        return got


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("middle-as-last", "last-with-more"):
        print(__doc__)
        sys.exit(2)
    case, iface, dip, dmac, ident = sys.argv[1:6]
    ident = int(ident)

    def on_alarm(signum, frame):
        print("FAIL %s: timed out after %d s" % (case, RUN_LIMIT_SECONDS), flush=True)
        os._exit(1)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(RUN_LIMIT_SECONDS)
    sport = random.randint(20000, 60000)
    h = Host(iface, dip, dmac)

    def udp_bytes(data):
        """The UDP header and payload (the IP payload), its checksum over the pseudo-header filled by scapy."""
        return bytes(IP(src=FAKE_IP, dst=dip) / UDP(sport=sport, dport=ECHO) / Raw(data))[20:]

    try:
        bad = bytes((i * 7 + 1) & 0xFF for i in range(PAYLOAD))
        udp = udp_bytes(bad)
        assert len(udp) == CUTS[-1][1]
        (a, b), (c, d), (e, f) = CUTS
        if case == "middle-as-last":
            pieces = [(a, b, True), (c, d, True), (c, d, False)]
        else:
            pieces = [(e, f, False), (e, f, True)]
        h.send_fragments(ident, udp, pieces)
        got = h.answers(NO_ECHO_WAIT)
        print("conflicting fragments %s (id %d, port %d): %d answers in %.1f s" % (
            ["[%d,%d)%s" % (lo, hi, " MF" if more else "") for lo, hi, more in pieces], ident, sport, len(got),
            NO_ECHO_WAIT))
        if got:
            raise Fail("the datagram with conflicting fragments was answered: %s" % got[0][1].summary())

        good = bytes((i * 11 + 5) & 0xFF for i in range(PAYLOAD))
        h.send_fragments(ident, udp_bytes(good), [(a, b, True), (c, d, True), (e, f, False)])
        got = h.answers(ECHO_WAIT)
        print("well-formed datagram with the same id %d: %d answers %s" % (ident, len(got),
                                                                        [g[1].summary() for g in got]))
        if not got:
            raise Fail("the well-formed datagram with the same IP ID was not echoed within %.1f s" % ECHO_WAIT)
        if got[0][0] != good:
            raise Fail("the answer is not the well-formed datagram's echo: %r (the conflicting one's bytes: %s)" % (
                got[0][0], got[0][0] == bad))
        if len(got) != 1:
            raise Fail("%d answers to one datagram" % len(got))
        print("PASS %s: no echo for the conflicting fragments; the same ID then echoed %d bytes exactly" % (
            case, PAYLOAD), flush=True)
        code = 0
    except Fail as err:
        print("FAIL %s: %s" % (case, err), flush=True)
        code = 1
    finally:
        h.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
