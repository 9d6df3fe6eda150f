"""A fake host on the kernel side of the daemon's tap, speaking hand-made TCP to the daemon.

usage: tcp_probe.py CHECK IFACE DAEMON_IP DAEMON_MAC

The fake host is 198.18.0.77 (an address no one in the namespace owns) with a locally administered
MAC. It announces itself with an ARP request to the daemon and answers the daemon's ARP requests
for 198.18.0.77 itself; every frame is sent and received with one AF_PACKET socket on IFACE only.
The kernel stays out of the way: frames the daemon sends to the fake MAC reach the kernel as
PACKET_OTHERHOST and are dropped (no forwarding in a fresh namespace), and the kernel does not
answer ARP for an address it does not own.

CHECK is one of:
  synack       a Linux-like SYN gets a SYN-ACK negotiating MSS, window scale, SACK-permitted, timestamps
  badcsum      data, a RST and a SYN with a bad TCP checksum are ignored; the good data is echoed
  challenge    in-window inexact RST and in-window SYN get a challenge ACK (RFC 5961); out-of-window RST is dropped
  outofwindow  data beyond the window and old data get an ACK with RCV.NXT and are not delivered
  paws         data with an old TSval is dropped with an ACK (RFC 7323 §5); the same data with a new TSval is echoed
  sack         out-of-order data gets ACKs with the right SACK blocks (RFC 2018); the data arrives once the holes fill
  oofin        a FIN out of order ends the stream: text past it is never echoed, the FIN is ACKed once the hole
               before it fills, and the echo service then closes (RFC 9293 §3.10.7.4)
  oddsyn       SYNs with odd or illegal options get an answer; a normal connection echoes afterwards
  synflood     20,000 spoofed SYNs from 198.18.0.0/24 in one sendp batch while a kernel client (198.18.0.1) echoes
               (its connection, got by a cookie, has timestamps, SACK and window scaling)
  ipoptions    an echo request with a malformed IP option gets Parameter Problem pointing at it (RFC 1122
               3.2.2.5, RFC 792); one with well-formed options gets its echo reply

Prints one line per finding and ends with exactly one verdict line "PASS <check> ..." (exit 0) or
"FAIL <check> ..." (exit 1). Every wait is bounded; the whole run is killed by an alarm.
"""
import os
import random
import select
import signal
import socket
import struct
import sys
import threading
import time

from scapy.all import ARP, ICMP, IP, TCP, Ether, Raw, conf, sendp

conf.verb = 0

FAKE_IP = "198.18.0.77"
FAKE_MAC = "02:00:c6:12:00:4d"
KERNEL_IP = "198.18.0.1"
ECHO = 7
MOD = 1 << 32
RUN_LIMIT_SECONDS = 75


class Fail(Exception):
    pass


def add(a, b):
    return (a + b) % MOD


def seq_lt(a, b):
    return ((a - b) & 0xFFFFFFFF) > 0x7FFFFFFF


def opts_dict(tcp):
    """TCP options as {name: value} (the last one of a kind wins)."""
    d = {}
    for o in tcp.options:
        if isinstance(o, tuple) and len(o) == 2:
            d[o[0]] = o[1]
    return d


def describe(p):
    t = p[TCP]
    return "flags=%s seq=%d ack=%d win=%d len=%d opts=%s" % (t.sprintf("%flags%"), t.seq, t.ack, t.window,
                                                            payload_len(p), t.options)


def payload_len(p):
    ip = p[IP]
    return ip.len - ip.ihl * 4 - p[TCP].dataofs * 4


def payload(p):
    raw = bytes(p[TCP])
    n = payload_len(p)
    start = p[TCP].dataofs * 4
    return raw[start:start + n]


class Host:
    """The fake host: one L2 socket, answers ARP for FAKE_IP, queues TCP segments from the daemon."""

    def __init__(self, iface, daemon_ip, daemon_mac):
        self.iface = iface
        self.dip = daemon_ip
        self.dmac = daemon_mac
        self.sock = conf.L2socket(iface=iface, promisc=False)
        self.inbox = []
        self.icmp_inbox = []
        self.arp_replies = 0
        # Tell the daemon who we are: an ARP request from the fake address (it learns the sender).
        self.send(Ether(src=FAKE_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=FAKE_MAC, psrc=FAKE_IP,
                                                                   hwdst="00:00:00:00:00:00", pdst=daemon_ip))
        self.pump(0.2)
        self.inbox.clear()

    def close(self):
        self.sock.close()

    def send(self, frame):
        self.sock.send(frame)

    def pump(self, seconds):
        """Read frames for up to `seconds` (bounded), answering ARP and queueing our TCP segments."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.sock.ins], [], [], left)
            if r:
                self._read_one()

    def _read_one(self):
        p = self.sock.recv()
        if p is None:
            return
        if ARP in p and p[ARP].op == 1 and p[ARP].pdst == FAKE_IP:
            self.send(Ether(src=FAKE_MAC, dst=p[ARP].hwsrc) / ARP(op=2, hwsrc=FAKE_MAC, psrc=FAKE_IP,
                                                                hwdst=p[ARP].hwsrc, pdst=p[ARP].psrc))
            self.arp_replies += 1
        elif IP in p and TCP in p and p[IP].src == self.dip and p[IP].dst == FAKE_IP:
            self.inbox.append(p)
        elif IP in p and ICMP in p and p[IP].src == self.dip and p[IP].dst == FAKE_IP:
            self.icmp_inbox.append(p)

    def take(self, pred, timeout, inbox=None):
        """The first queued segment (or, with inbox=self.icmp_inbox, ICMP message) matching pred, removed from its
        queue, waiting up to timeout; else None."""
        inbox = self.inbox if inbox is None else inbox
        end = time.monotonic() + timeout
        while True:
            for i, p in enumerate(inbox):
                if pred(p):
                    return inbox.pop(i)
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.sock.ins], [], [], min(left, 0.05))
            if r:
                self._read_one()


class Conn:
    """One hand-made TCP connection from FAKE_IP:sport to the daemon's port."""

    def __init__(self, host, dport=ECHO, sport=None):
        self.h = host
        self.dport = dport
        self.sport = sport or random.randint(20000, 60000)
        self.iss = random.getrandbits(32)
        self.snd_nxt = self.iss
        self.tsval = random.randint(1_000_000, 2_000_000)
        self.ts_recent = 0
        self.ts = False
        self.sack = False
        self.rcv_nxt = None
        self.peer_wscale = 0
        self.peer_window = 0
        self.received = bytearray()
        self.synack = None

    # ---- building segments
    def next_tsval(self):
        self.tsval += 1
        return self.tsval

    def frame(self, flags, seq=None, ack=None, data=b"", options=None, tsval=None, window=65535, chksum=None,
              raw_options=None):
        seq = self.snd_nxt if seq is None else seq
        if ack is None:
            ack = self.rcv_nxt if (self.rcv_nxt is not None and "A" in flags) else 0
        if options is None:
            options = []
            if self.ts and "R" not in flags:
                options = [("NOP", None), ("NOP", None),
                           ("Timestamp", (self.next_tsval() if tsval is None else tsval, self.ts_recent))]
        ip = IP(src=FAKE_IP, dst=self.h.dip, ttl=64)
        if raw_options is not None:
            # Options as raw bytes: data offset set by hand, scapy's checksum covers header + bytes.
            assert len(raw_options) % 4 == 0 and len(raw_options) <= 40
            tcp = TCP(sport=self.sport, dport=self.dport, seq=seq, ack=ack, flags=flags, window=window,
                      dataofs=5 + len(raw_options) // 4) / Raw(raw_options + data)
        else:
            tcp = TCP(sport=self.sport, dport=self.dport, seq=seq, ack=ack, flags=flags, window=window,
                      options=options)
            if data:
                tcp = tcp / Raw(data)
        pkt = ip / tcp
        if chksum is not None:
            good = IP(bytes(pkt))[TCP].chksum
            bad = chksum if chksum != good else (good ^ 0x5A5A)
            pkt[TCP].chksum = bad
        return Ether(src=FAKE_MAC, dst=self.h.dmac) / pkt

    def send(self, flags, **kw):
        self.h.send(self.frame(flags, **kw))

    def mine(self, p):
        return p[TCP].sport == self.dport and p[TCP].dport == self.sport

    def note(self, p):
        """Track the daemon's timestamps and window from a segment of this connection."""
        o = opts_dict(p[TCP])
        if "Timestamp" in o and (self.ts_recent == 0 or not seq_lt(o["Timestamp"][0], self.ts_recent)):
            self.ts_recent = o["Timestamp"][0]
        if not (p[TCP].flags & 0x02):
            self.peer_window = p[TCP].window << self.peer_wscale

    # ---- handshake
    def syn(self, options=None, raw_options=None, timeout=3.0):
        """Send a SYN, return the answer (SYN-ACK or RST) or None."""
        if options is None and raw_options is None:
            options = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (self.next_tsval(), 0)), ("NOP", None),
                       ("WScale", 7)]
        self.send("S", seq=self.iss, ack=0, options=options or [], raw_options=raw_options)
        return self.h.take(lambda p: self.mine(p) and (p[TCP].flags & 0x12 == 0x12 or p[TCP].flags & 0x04), timeout)

    def complete(self, synack):
        """ACK a SYN-ACK: the connection is ESTABLISHED on both sides."""
        t = synack[TCP]
        if t.ack != add(self.iss, 1):
            raise Fail("SYN-ACK acknowledges %d, expected ISS+1 = %d" % (t.ack, add(self.iss, 1)))
        o = opts_dict(t)
        self.synack = synack
        self.ts = "Timestamp" in o
        self.sack = "SAckOK" in o
        self.peer_wscale = o.get("WScale", 0)
        if "Timestamp" in o:
            self.ts_recent = o["Timestamp"][0]
        self.rcv_nxt = add(t.seq, 1)
        self.snd_nxt = add(self.iss, 1)
        self.peer_window = t.window
        self.send("A")

    def connect(self, **kw):
        a = self.syn(**kw)
        if a is None:
            raise Fail("no answer to SYN from port %d" % self.sport)
        if not a[TCP].flags & 0x02:
            raise Fail("SYN answered by %s" % describe(a))
        self.complete(a)
        return a

    # ---- data
    def send_data(self, data, **kw):
        self.send("PA", data=data, **kw)
        self.snd_nxt = add(self.snd_nxt, len(data))

    def absorb(self, p):
        """Take in-order data from a daemon segment, ACK it; return True if it carried data."""
        self.note(p)
        n = payload_len(p)
        if n <= 0:
            return False
        if p[TCP].seq == self.rcv_nxt:
            self.received += payload(p)
            self.rcv_nxt = add(self.rcv_nxt, n)
        self.send("A")
        return True

    def expect_echo(self, data, timeout=5.0):
        """Wait until `data` came back in order (bounded); return the segments seen on the way."""
        want = len(self.received) + len(data)
        start = len(self.received)
        seen = []
        end = time.monotonic() + timeout
        while len(self.received) < want:
            left = end - time.monotonic()
            p = self.h.take(self.mine, max(0.0, left))
            if p is None:
                raise Fail("echo: got %d of %d bytes back within %.1f s" % (len(self.received) - start, len(data), timeout))
            seen.append(p)
            self.absorb(p)
        got = bytes(self.received[start:want])
        if got != data:
            raise Fail("echo differs: sent %r... got %r..." % (data[:40], got[:40]))
        if len(self.received) > want:
            raise Fail("echo carried %d extra bytes: %r" % (len(self.received) - want, bytes(self.received[want:])[:60]))
        return seen

    def echo(self, data, timeout=5.0, settle=0.2):
        """Send data, wait for its echo, then absorb stragglers for `settle` s (so later checks see only answers)."""
        self.send_data(data)
        seen = self.expect_echo(data, timeout)
        return seen + self.quiet(settle)

    def quiet(self, seconds):
        """Collect this connection's segments for `seconds`, absorbing data; returns them."""
        seen = []
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return seen
            p = self.h.take(self.mine, left)
            if p is None:
                return seen
            seen.append(p)
            self.absorb(p)

    def reset(self):
        self.send("R", seq=self.snd_nxt, ack=0, options=[])


# ------------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------------

def check_synack(h):
    c = Conn(h)
    our_tsval = c.tsval + 1
    a = c.syn()
    if a is None:
        raise Fail("no answer to a Linux-like SYN")
    t = a[TCP]
    print("SYN-ACK: " + describe(a))
    if t.flags != 0x12:
        raise Fail("answer is not a SYN-ACK: " + describe(a))
    if t.ack != add(c.iss, 1):
        raise Fail("SYN-ACK ack %d != ISS+1 %d" % (t.ack, add(c.iss, 1)))
    o = opts_dict(t)
    problems = []
    mss = o.get("MSS")
    if mss is None or not (536 <= mss <= 1460):
        problems.append("MSS %r (want 536..1460 for a 1500-byte MTU)" % mss)
    ws = o.get("WScale")
    if ws is None or not (0 <= ws <= 14):
        problems.append("WScale %r (want 0..14, present because our SYN carried WS 7)" % ws)
    if "SAckOK" not in o:
        problems.append("no SACK-permitted (our SYN carried it)")
    ts = o.get("Timestamp")
    if ts is None:
        problems.append("no timestamps (our SYN carried TSval %d)" % our_tsval)
    elif ts[1] != our_tsval:
        problems.append("TSecr %d does not echo our TSval %d (RFC 7323 §3.2)" % (ts[1], our_tsval))
    if t.window == 0:
        problems.append("zero window in SYN-ACK")
    if problems:
        c.complete(a)
        c.reset()
        raise Fail("; ".join(problems))
    c.complete(a)
    # The established connection keeps the options: data segments carry timestamps, echo works.
    seen = c.echo(b"negotiated options work" * 10)
    for p in seen:
        po = opts_dict(p[TCP])
        if "Timestamp" not in po:
            raise Fail("segment after the handshake without timestamps: " + describe(p))
        if p[TCP].options and "WScale" in po:
            raise Fail("window scale option outside the SYN: " + describe(p))
    c.reset()
    return "mss=%d wscale=%d sack_permitted=yes ts=(val %d, ecr %d = our TSval)" % (mss, ws, ts[0], ts[1])


def check_badcsum(h):
    c = Conn(h)
    c.connect()
    c.echo(b"warm-up")
    c.quiet(0.3)
    data = b"bad-checksum-data"
    # 1. Data with a bad checksum: no ACK, no echo.
    c.h.send(c.frame("PA", data=data, chksum=0xBEEF))
    seen = c.quiet(1.0)
    if seen:
        raise Fail("answer to data with a bad checksum: " + describe(seen[0]))
    print("data with bad checksum: no answer in 1 s")
    # 2. A RST with the exact sequence number but a bad checksum: the connection lives on.
    c.h.send(c.frame("R", seq=c.snd_nxt, ack=0, options=[], chksum=0xBEEF))
    seen = c.quiet(0.5)
    if seen:
        raise Fail("answer to a RST with a bad checksum: " + describe(seen[0]))
    print("exact RST with bad checksum: ignored")
    # 3. A SYN with a bad checksum to the listener: no SYN-ACK.
    probe = Conn(h)
    probe.h.send(probe.frame("S", seq=probe.iss, ack=0, options=[("MSS", 1460)], chksum=0xBEEF))
    p = h.take(probe.mine, 1.0)
    if p is not None:
        raise Fail("answer to a SYN with a bad checksum: " + describe(p))
    print("SYN with bad checksum: no answer in 1 s")
    # 4. The same data with a good checksum is acknowledged and echoed (state unchanged by 1 and 2).
    c.send_data(data)
    c.expect_echo(data)
    print("same data with good checksum: echoed")
    c.reset()
    return "bad-checksum data, RST and SYN ignored; good data echoed"


# The stack's per-connection challenge ACK interval (TcpSettings.challengeAckIntervalNanos), with a margin.
CHALLENGE_INTERVAL = 0.6


def expect_challenge_ack(c, what, timeout=2.0):
    p = c.h.take(c.mine, timeout)
    if p is None:
        raise Fail("no challenge ACK to %s within %.1f s" % (what, timeout))
    t = p[TCP]
    print("answer to %s: %s" % (what, describe(p)))
    if t.flags != 0x10 or payload_len(p) != 0:
        raise Fail("answer to %s is not a bare ACK (RFC 5961 challenge ACK): %s" % (what, describe(p)))
    if t.seq != c.rcv_nxt or t.ack != c.snd_nxt:
        raise Fail("challenge ACK to %s: seq %d ack %d, want SND.NXT %d / RCV.NXT %d" % (what, t.seq, t.ack, c.rcv_nxt,
                                                                                       c.snd_nxt))
    c.note(p)


def check_challenge(h):
    c = Conn(h)
    c.connect()
    c.echo(b"before the attacks " * 5)
    # RFC 5961 §3.2: RST in the window but not exactly RCV.NXT -> challenge ACK, connection stays.
    c.send("R", seq=add(c.snd_nxt, 1000), ack=0, options=[])
    expect_challenge_ack(c, "in-window RST at RCV.NXT+1000")
    c.echo(b"alive after the RST")
    # RFC 5961 §7: one challenge ACK per connection per 500 ms answers RSTs and SYNs (as Linux's
    # tcp_invalid_ratelimit); wait that out before each further probe.
    time.sleep(CHALLENGE_INTERVAL)
    # Same with RST|ACK (how a Linux peer would send it).
    c.send("RA", seq=add(c.snd_nxt, 1), options=[])
    expect_challenge_ack(c, "in-window RST|ACK at RCV.NXT+1")
    c.echo(b"alive after the RST|ACK")
    # RFC 5961 §3.2: RST outside the window -> silently dropped.
    c.send("R", seq=add(c.snd_nxt, 1 << 30), ack=0, options=[])
    seen = c.quiet(0.7)
    if seen:
        raise Fail("answer to an out-of-window RST (must be dropped silently): " + describe(seen[0]))
    c.echo(b"alive after the out-of-window RST")
    # RFC 5961 §4.2: SYN in a synchronized state -> challenge ACK, whatever its sequence number.
    c.send("S", seq=add(c.snd_nxt, 2000), ack=0,
           options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (c.next_tsval(), 0)), ("NOP", None), ("WScale", 7)])
    expect_challenge_ack(c, "in-window SYN at RCV.NXT+2000")
    c.echo(b"alive after the SYN")
    time.sleep(CHALLENGE_INTERVAL)
    c.send("S", seq=c.snd_nxt, ack=0,
           options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (c.next_tsval(), 0)), ("NOP", None), ("WScale", 7)])
    expect_challenge_ack(c, "SYN at exactly RCV.NXT")
    c.echo(b"alive after the second SYN")
    c.reset()
    return "challenge ACKs for in-window RST, RST|ACK and SYNs; out-of-window RST dropped; echo alive throughout"


def expect_dup_ack(c, what, timeout=2.0):
    p = c.h.take(c.mine, timeout)
    if p is None:
        raise Fail("no ACK to %s within %.1f s" % (what, timeout))
    t = p[TCP]
    print("answer to %s: %s" % (what, describe(p)))
    if not t.flags & 0x10 or t.flags & 0x07:
        raise Fail("answer to %s is not an ACK: %s" % (what, describe(p)))
    if payload_len(p) != 0:
        raise Fail("answer to %s carries data (was something delivered?): %s" % (what, describe(p)))
    if t.ack != c.snd_nxt or t.seq != c.rcv_nxt:
        raise Fail("ACK to %s: seq %d ack %d, want <SEQ=SND.NXT %d><ACK=RCV.NXT %d>" % (what, t.seq, t.ack, c.rcv_nxt,
                                                                                     c.snd_nxt))
    c.note(p)
    return p


def check_outofwindow(h):
    c = Conn(h)
    c.connect()
    for _ in range(2):  # 2000 bytes, so "old" data below RCV.NXT exists
        c.echo(os.urandom(500).hex().encode())
    wnd = c.peer_window
    print("daemon's advertised window %d bytes (scale %d)" % (wnd, c.peer_wscale))
    # Far beyond the right edge: RFC 9293 §3.10.7.4 first check -> <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, drop.
    c.send("PA", seq=add(c.snd_nxt, 1 << 24), data=b"FAR-BEYOND-THE-WINDOW")
    expect_dup_ack(c, "data 16 MiB beyond RCV.NXT")
    # Beyond the advertised right edge (RCV.NXT + RCV.WND + 64 KiB, past the receive buffer too).
    c.send("PA", seq=add(c.snd_nxt, wnd + 65536), data=b"PAST-THE-RIGHT-EDGE")
    expect_dup_ack(c, "data at RCV.NXT + window + 64 KiB")
    # Old data entirely below RCV.NXT.
    c.send("PA", seq=add(c.snd_nxt, -1500), data=b"OLD-DATA" * 10)
    expect_dup_ack(c, "old data 1500 bytes below RCV.NXT")
    seen = c.quiet(0.7)
    if seen:
        raise Fail("more segments after the out-of-window data: " + describe(seen[0]))
    # Nothing was delivered: the next in-order data comes back alone.
    c.echo(b"in-order after the out-of-window data")
    c.reset()
    return "ACK with RCV.NXT for data past the window and below it; nothing delivered"


def check_paws(h):
    c = Conn(h)
    c.connect()
    if not c.ts:
        raise Fail("timestamps not negotiated")
    c.echo(b"fresh timestamp")
    current = c.tsval
    data = b"OLD-TIMESTAMP-DATA"
    # RFC 7323 §5.3 R1: SEG.TSval < TS.Recent -> not acceptable: send an ACK, drop the segment.
    c.send("PA", data=data, options=[("NOP", None), ("NOP", None), ("Timestamp", (current - 1000, c.ts_recent))])
    p = c.h.take(c.mine, 2.0)
    if p is None:
        raise Fail("no ACK to a segment with an old timestamp (RFC 7323 §5.3 R1: send an ACK)")
    print("answer to TSval %d (TS.Recent %d): %s" % (current - 1000, current, describe(p)))
    if payload_len(p) != 0 or p[TCP].ack != c.snd_nxt:
        raise Fail("old-timestamp data was accepted: " + describe(p))
    c.note(p)
    seen = c.quiet(0.7)
    if seen:
        raise Fail("more segments after the old-timestamp data: " + describe(seen[0]))
    # The same bytes with a fresh timestamp are accepted and echoed.
    c.send_data(data)
    c.expect_echo(data)
    c.reset()
    return "old TSval dropped with an ACK (ack %d unchanged); same data with a new TSval echoed" % p[TCP].ack


def sack_blocks(p):
    s = opts_dict(p[TCP]).get("SAck")
    if not s:
        return []
    return [(s[i], s[i + 1]) for i in range(0, len(s) - 1, 2)]


def check_sack(h):
    c = Conn(h)
    c.connect()
    if not c.sack:
        raise Fail("SACK not negotiated")
    c.echo(b"before the holes")
    base = c.snd_nxt
    data = bytes((i * 13 + 7) & 0xFF for i in range(400))

    def part(lo, hi):
        c.send("PA", seq=add(base, lo), data=data[lo:hi])

    def ack_with(what, want_ack, want_blocks):
        p = c.h.take(lambda q: c.mine(q) and q[TCP].flags & 0x10, 2.0)
        if p is None:
            raise Fail("no ACK after %s" % what)
        blocks = sack_blocks(p)
        print("after %s: %s sack=%s" % (what, describe(p), [((l - base) % MOD, (r - base) % MOD) for l, r in blocks]))
        if p[TCP].ack != want_ack:
            raise Fail("after %s: ack %d, want %d" % (what, p[TCP].ack, want_ack))
        want = [(add(base, l), add(base, r)) for l, r in want_blocks]
        if blocks[:len(want)] != want or len(blocks) != len(want):
            raise Fail("after %s: SACK blocks %s (relative to RCV.NXT: %s), want %s (RFC 2018 §4: the first block "
                       "covers the segment that triggered the ACK, then the most recent ones)" % (
                           what, blocks, [((l - base) % MOD, (r - base) % MOD) for l, r in blocks], want_blocks))
        if payload_len(p) == 0:
            c.note(p)
        else:
            c.absorb(p)
        return p

    warm = len(c.received)
    part(100, 200)
    ack_with("bytes 100-200 (hole 0-100)", base, [(100, 200)])
    part(300, 400)
    ack_with("bytes 300-400 (holes 0-100, 200-300)", base, [(300, 400), (100, 200)])
    if len(c.received) != warm:
        raise Fail("data delivered to the application while the hole at RCV.NXT remains")
    part(0, 100)
    c.snd_nxt = add(base, 200)
    ack_with("bytes 0-100 (hole 200-300 left)", add(base, 200), [(300, 400)])
    part(200, 300)
    c.snd_nxt = add(base, 400)
    end = time.monotonic() + 5
    while len(c.received) < warm + 400 and time.monotonic() < end:
        p = c.h.take(c.mine, max(0.0, end - time.monotonic()))
        if p is not None:
            if p[TCP].flags & 0x10 and seq_lt(p[TCP].ack, c.snd_nxt) and payload_len(p) == 0:
                print("ACK while filling the last hole: " + describe(p))
            c.absorb(p)
    got = bytes(c.received[warm:])
    if got != data:
        raise Fail("after filling the holes the echo is %d of 400 bytes, exact=%s" % (len(got), got == data))
    c.quiet(0.3)
    c.reset()
    return "SACK blocks [100,200) then [300,400)+[100,200) then [300,400); all 400 bytes echoed in order"


def check_oofin(h):
    """RFC 9293 §3.10.7.4: a FIN ends the stream where it stands, even when it arrives out of order.

    Relative to the stream after a warm-up: 0..99 in order, then FIN at 300 carrying 200..299 (a hole at 100..199),
    then 300..399 past the FIN, then the hole. Only 0..299 may come back, the FIN is acknowledged (ack 301) when the
    hole fills, and the echo service, which closes once its peer has closed and everything was echoed, sends its FIN.
    """
    FIN = 0x01
    c = Conn(h)
    c.connect()
    if not c.sack:
        raise Fail("SACK not negotiated")
    c.echo(b"before the out-of-order FIN")
    base = c.snd_nxt
    warm = len(c.received)
    data = bytes((i * 29 + 3) & 0xFF for i in range(400))

    def rel(s):
        return (s - base) % MOD

    def ack_with(what, want_ack, want_blocks):
        p = c.h.take(lambda q: c.mine(q) and q[TCP].flags & 0x10, 2.0)
        if p is None:
            raise Fail("no ACK after %s" % what)
        blocks = sack_blocks(p)
        print("after %s: %s ack=%d sack=%s" % (what, describe(p), rel(p[TCP].ack), [(rel(l), rel(r)) for l, r in blocks]))
        if p[TCP].ack != add(base, want_ack):
            raise Fail("after %s: ack %d (relative), want %d" % (what, rel(p[TCP].ack), want_ack))
        if [(rel(l), rel(r)) for l, r in blocks] != want_blocks:
            raise Fail("after %s: SACK blocks %s (relative), want %s" % (
                what, [(rel(l), rel(r)) for l, r in blocks], want_blocks))
        c.note(p)
        if payload_len(p) or p[TCP].flags & FIN:
            raise Fail("after %s: the daemon sent data or a FIN while the hole at 100 remains: %s" % (what, describe(p)))
        return p

    try:
        c.echo(data[0:100])
        # The FIN at 300, carrying 200..299: out of order, the hole 100..199 before it.
        c.send("FPA", seq=add(base, 200), data=data[200:300])
        ack_with("FIN at 300 with 200..299 (hole 100..199)", 100, [(200, 300)])
        # 300..399 lie past the FIN: not data (RFC 9293 §3.10.7.4), so neither held nor reported in a SACK block.
        c.send("PA", seq=add(base, 300), data=data[300:400])
        ack_with("300..399 past the FIN", 100, [(200, 300)])
        if len(c.received) != warm + 100:
            raise Fail("echo went past byte 100 while the hole at 100..199 remains")
        # Fill the hole: RCV.NXT reaches the FIN, which is taken (ack 301); our next segments sit after it.
        c.send("PA", seq=add(base, 100), data=data[100:200])
        c.snd_nxt = add(base, 301)
        acks = []
        fin_at = None
        end = time.monotonic() + 5
        while fin_at is None and time.monotonic() < end:
            p = c.h.take(c.mine, max(0.0, end - time.monotonic()))
            if p is None:
                break
            t = p[TCP]
            n = payload_len(p)
            c.note(p)
            if t.flags & 0x10:
                acks.append(rel(t.ack))
            if n > 0 and t.seq == c.rcv_nxt:
                c.received += payload(p)
                c.rcv_nxt = add(c.rcv_nxt, n)
            if t.flags & FIN and add(t.seq, n) == c.rcv_nxt:
                fin_at = len(c.received) - warm
                c.rcv_nxt = add(c.rcv_nxt, 1)
            if n > 0 or t.flags & FIN:
                c.send("A")
        # Anything still coming (data past the FIN, a retransmitted FIN) is caught here.
        for p in c.quiet(0.7):
            if p[TCP].flags & 0x10:
                acks.append(rel(p[TCP].ack))
            if p[TCP].flags & FIN and fin_at is None:
                fin_at = len(c.received) - warm
        got = bytes(c.received[warm:])
        print("after filling the hole: echoed %d bytes, ACKs %s, daemon's FIN after %s bytes" % (len(got), acks, fin_at))
        if len(got) > 300:
            raise Fail("echo carried %d bytes past the FIN (bytes 300..%d reached the application): %r..." % (
                len(got) - 300, len(got) - 1, got[300:320]))
        if got != data[:300]:
            raise Fail("echo is %d of 300 bytes, exact prefix=%s" % (len(got), got == data[:len(got)]))
        past = [a for a in acks if a > 301 and a < (1 << 31)]
        if past:
            raise Fail("ACKs past the FIN (want at most 301): %s" % sorted(set(past)))
        if 301 not in acks:
            raise Fail("the FIN at 300 was never acknowledged (ack 301 not seen; ACKs %s)" % acks)
        if fin_at != 300:
            raise Fail("no FIN from the echo service after the 300 bytes (it closes once its peer closed): FIN after %s"
                       % fin_at)
        # Our ACK of its FIN closed the connection (LAST-ACK -> CLOSED): a segment now gets a reset.
        c.send("PA", data=b"after the close")
        p = c.h.take(c.mine, 2.0)
        if p is None or not p[TCP].flags & 0x04:
            raise Fail("segment after the close not answered by a reset: %s" % (describe(p) if p else "no answer"))
        print("segment after the close: %s" % describe(p))
    except Fail:
        c.reset()
        raise
    return "bytes 0..299 echoed, 300..399 past the FIN never; FIN acked (301) when the hole filled; echo closed"


def opt_bytes(*parts):
    b = b"".join(parts)
    if len(b) % 4:
        b += b"\x00" * (4 - len(b) % 4)
    return b


MSS = b"\x02\x04\x05\xb4"
SACKOK = b"\x04\x02"
WS7 = b"\x03\x03\x07"


def ts(val):
    return b"\x08\x0a" + struct.pack("!II", val, 0)


# name, raw options (built with the TSval at send time), kind of case, options the SYN-ACK must NOT carry
ODD_SYNS = [
    ("option length 0 (MSS kind)", lambda v: opt_bytes(b"\x02\x00\x05\xb4", SACKOK, ts(v)), "illegal", []),
    ("option length 0 (unknown kind 30)", lambda v: opt_bytes(b"\x1e\x00", MSS), "illegal", []),
    ("option length 1 (timestamps kind)", lambda v: opt_bytes(MSS, b"\x08\x01", b"\x01\x01"), "illegal", []),
    ("option length past the header (WS length 8 at the end)", lambda v: opt_bytes(MSS, b"\x01\x01", b"\x03\x08\x07\x00"),
     "illegal", []),
    ("single kind byte at the end", lambda v: opt_bytes(MSS, b"\x01\x01\x01\x02"), "illegal", []),
    ("unknown kinds 30, 253, 99 then good options",
     lambda v: opt_bytes(b"\x1e\x04\xaa\xbb", b"\xfd\x06ABCD", b"\x63\x02", MSS, SACKOK, ts(v), b"\x01", WS7), "legal", []),
    ("MSS with length 3", lambda v: opt_bytes(b"\x02\x03\x05", b"\x01", SACKOK, ts(v)), "odd", []),
    ("MSS with length 6", lambda v: opt_bytes(b"\x02\x06\x05\xb4\x00\x00", SACKOK), "odd", []),
    ("MSS 0", lambda v: opt_bytes(b"\x02\x04\x00\x00", SACKOK, ts(v), b"\x01", WS7), "odd", []),
    ("MSS 1", lambda v: opt_bytes(b"\x02\x04\x00\x01"), "odd", []),
    ("window scale 15", lambda v: opt_bytes(MSS, SACKOK, ts(v), b"\x01", b"\x03\x03\x0f"), "odd", []),
    ("window scale 255", lambda v: opt_bytes(MSS, b"\x01", b"\x03\x03\xff"), "odd", []),
    ("window scale with length 4", lambda v: opt_bytes(MSS, b"\x03\x04\x07\x00"), "odd", ["WScale"]),
    ("36 NOPs then MSS (40 option bytes)", lambda v: opt_bytes(b"\x01" * 36, MSS), "legal", []),
    ("40 NOPs", lambda v: b"\x01" * 40, "legal", ["WScale", "SAckOK", "Timestamp"]),
    ("EOL in the middle (MSS, EOL, then SACK-permitted, WS, timestamps)",
     lambda v: opt_bytes(MSS, b"\x00\x00\x00\x00", SACKOK, ts(v), b"\x01", WS7), "legal", ["WScale", "SAckOK", "Timestamp"]),
    ("EOL first", lambda v: opt_bytes(b"\x00", b"\x01\x01\x01", MSS, WS7, b"\x01"), "legal", ["WScale"]),
    ("timestamps with length 8", lambda v: opt_bytes(MSS, b"\x08\x08" + struct.pack("!I", v) + b"\x00\x00"), "odd",
     ["Timestamp"]),
    ("timestamps with length 12", lambda v: opt_bytes(MSS, b"\x08\x0c" + struct.pack("!II", v, 0) + b"\x00\x00"), "odd",
     ["Timestamp"]),
    ("SACK-permitted with length 3", lambda v: opt_bytes(MSS, b"\x04\x03\x00", b"\x01"), "odd", ["SAckOK"]),
    ("SACK blocks in a SYN", lambda v: opt_bytes(MSS, b"\x01\x01", b"\x05\x0a" + struct.pack("!II", 1, 2)), "odd", []),
    ("SACK with length 3", lambda v: opt_bytes(MSS, b"\x05\x03\x00", b"\x01"), "odd", []),
    ("duplicate options (two MSS, two WS)", lambda v: opt_bytes(MSS, b"\x02\x04\x02\x18", WS7, b"\x01", b"\x03\x03\x02",
                                                               b"\x01"), "odd", []),
    ("option length 255", lambda v: opt_bytes(b"\x1e\xff", MSS), "illegal", []),
]


def check_oddsyn(h):
    failures = []
    answers = {"SYN-ACK": 0, "RST": 0}
    for name, build, kind, absent in ODD_SYNS:
        c = Conn(h)
        tsval = c.next_tsval()
        raw = build(tsval)
        a = c.syn(raw_options=raw, timeout=2.0)
        if a is None:
            failures.append("%s: no answer" % name)
            print("ODD %-62s -> NO ANSWER (options %s)" % (name, raw.hex()))
            continue
        t = a[TCP]
        if t.flags & 0x04:
            answers["RST"] += 1
            print("ODD %-62s -> RST %s" % (name, describe(a)))
            continue
        answers["SYN-ACK"] += 1
        o = opts_dict(t)
        shown = ", ".join("%s=%s" % (k, v) for k, v in o.items() if k not in ("NOP", "EOL"))
        note = ""
        bad = [k for k in absent if k in o]
        if bad:
            failures.append("%s: SYN-ACK carries %s although the SYN carried no valid such option" % (name, bad))
            note = "  <-- carries %s" % bad
        if "Timestamp" in o and o["Timestamp"][1] != tsval:
            failures.append("%s: TSecr %d != our TSval %d" % (name, o["Timestamp"][1], tsval))
        # Complete the handshake and echo a little: the connection must work with whatever was negotiated.
        try:
            c.complete(a)
            c.echo(b"odd syn " + name.encode()[:40], timeout=3.0)
            echoed = "echo ok"
        except Fail as e:
            failures.append("%s: connection after the SYN-ACK failed: %s" % (name, e))
            echoed = "ECHO FAILED: %s" % e
        c.reset()
        print("ODD %-62s -> SYN-ACK [%s] %s%s" % (name, shown, echoed, note))
    # A normal connection afterwards.
    c = Conn(h)
    c.connect()
    c.echo(b"normal connection after the odd SYNs" * 20)
    c.reset()
    print("normal connection after the odd SYNs: echo ok")
    if failures:
        raise Fail("; ".join(failures))
    return "%d odd SYNs: %d SYN-ACK, %d RST; normal echo afterwards" % (len(ODD_SYNS), answers["SYN-ACK"], answers["RST"])


def checksum(data):
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def syn_frame(src_mac, dst_mac, src_ip, dst_ip, sport, seq, ident):
    """A 54-byte Ethernet/IPv4/TCP SYN (MSS 1460) with correct checksums, without scapy (fast)."""
    tcp = struct.pack("!HHIIBBHHH", sport, ECHO, seq, 0, 6 << 4, 0x02, 64240, 0, 0) + b"\x02\x04\x05\xb4"
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(tcp))
    c = checksum(pseudo + tcp)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), ident, 0, 64, 6, 0, src_ip, dst_ip)
    iph = iph[:10] + struct.pack("!H", checksum(iph)) + iph[12:]
    return dst_mac + src_mac + b"\x08\x00" + iph + tcp


def check_synflood(h):
    count = int(os.environ.get("SYNFLOOD_COUNT", "20000"))
    rnd = random.Random(4987)
    dmac = bytes.fromhex(h.dmac.replace(":", ""))
    dip = socket.inet_aton(h.dip)
    sources = [i for i in range(3, 255) if i != 77]
    t0 = time.monotonic()
    frames = []
    for i in range(count):
        host = rnd.choice(sources)
        src_mac = bytes([0x02, 0x00, 0xc6, 0x12, 0x00, host])
        frames.append(syn_frame(src_mac, dmac, bytes([198, 18, 0, host]), dip, rnd.randint(1024, 65535),
                                rnd.getrandbits(32), i & 0xFFFF))
    print("built %d spoofed SYNs in %.2f s" % (count, time.monotonic() - t0))
    flood_done = {}

    def flood():
        s = time.monotonic()
        try:
            sendp(frames, iface=h.iface, verbose=False)
        except OSError as e:
            # ENETDOWN: the tap went away, i.e. the daemon (which owns it) is gone.
            flood_done["error"] = repr(e)
        flood_done["seconds"] = time.monotonic() - s

    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    time.sleep(0.3)
    # A real client from the kernel (198.18.0.1), during the flood.
    client = {}
    t1 = time.monotonic()
    try:
        s = socket.create_connection((h.dip, ECHO), timeout=20, source_address=(KERNEL_IP, 0))
        client["connect"] = time.monotonic() - t1
        client["during_flood"] = sender.is_alive()
        # struct tcp_info: tcpi_options (byte 5: 1 timestamps, 2 SACK, 4 window scale), snd_wscale (byte 6, low 4 bits).
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
        client["tcpi_options"] = info[5]
        client["snd_wscale"] = info[6] & 0xF
        s.settimeout(10)
        data = os.urandom(64 * 1024)
        got = bytearray()

        def writer():
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError as e:
                client["write_error"] = repr(e)

        w = threading.Thread(target=writer, daemon=True)
        w.start()
        end = time.monotonic() + 20
        while time.monotonic() < end:
            b = s.recv(65536)
            if not b:
                break
            got += b
        w.join(5)
        s.close()
        client["exact"] = bytes(got) == data
        client["bytes"] = len(got)
    except OSError as e:
        client["error"] = repr(e)
    client["seconds"] = time.monotonic() - t1
    sender.join(40)
    if sender.is_alive():
        raise Fail("sendp of the flood did not finish within 40 s")
    print("flood: %d SYNs sent in %.2f s (%.0f/s)" % (count, flood_done["seconds"], count / max(flood_done["seconds"], 1e-6)))
    print("kernel client: %s" % client)
    if "error" in flood_done:
        raise Fail("sending the flood failed after %.2f s with %s: the tap is gone, did the daemon die?" % (
            flood_done["seconds"], flood_done["error"]))
    if "error" in client:
        raise Fail("kernel client could not echo during the flood: %s" % client["error"])
    if not client.get("exact"):
        raise Fail("kernel client echo not exact: %d of %d bytes" % (client.get("bytes", 0), 64 * 1024))
    # A cookie SYN,ACK keeps the options in its TSval: the connection has them, as a stateful one would.
    if client["tcpi_options"] & 7 != 7 or client["snd_wscale"] == 0:
        raise Fail("kernel client's connection lacks timestamps, SACK or window scaling: %s" % client)
    return "%d SYNs in %.2f s; kernel client connected in %.3f s (%s the flood) and echoed 64 KiB exactly" % (
        count, flood_done["seconds"], client["connect"], "during" if client["during_flood"] else "after")


def echo_request_frame(h, ident, options):
    """An Ethernet/IPv4 ICMP echo request from the fake host carrying raw IP `options` (checksums right)."""
    assert len(options) % 4 == 0
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"options probe..."
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    header_length = 20 + len(options)
    iph = struct.pack("!BBHHHBBH4s4s", 0x40 | header_length // 4, 0, header_length + len(icmp), ident, 0, 64, 1, 0,
                      socket.inet_aton(FAKE_IP), socket.inet_aton(h.dip)) + options
    iph = iph[:10] + struct.pack("!H", checksum(iph)) + iph[12:]
    return bytes(Ether(src=FAKE_MAC, dst=h.dmac, type=0x0800)) + iph + icmp


def check_ipoptions(h):
    findings = []
    cases = [("an option of length 0", b"\x07\x00\x00\x00", 20),
             ("after a NOP, a length past the header", b"\x01\x07\x09\x00", 21)]
    for name, options, pointer in cases:
        ident = random.randint(1, 65535)
        h.send(echo_request_frame(h, ident, options))
        problem = h.take(lambda p: p[ICMP].type == 12, 2.0, h.icmp_inbox)
        if problem is None:
            raise Fail("%s: no Parameter Problem" % name)
        quoted = bytes(problem[ICMP].payload)
        if problem[ICMP].code != 0 or problem[ICMP].ptr != pointer:
            raise Fail("%s: Parameter Problem code %d pointer %d, expected code 0 pointer %d"
                       % (name, problem[ICMP].code, problem[ICMP].ptr, pointer))
        if len(quoted) < 28 or struct.unpack("!H", quoted[4:6])[0] != ident:
            raise Fail("%s: the Parameter Problem does not quote the datagram: %s" % (name, quoted[:28].hex()))
        if h.take(lambda p: p[ICMP].type == 0, 0.3, h.icmp_inbox) is not None:
            raise Fail("%s: a malformed datagram was answered with an echo reply" % name)
        findings.append("%s -> Parameter Problem pointer %d" % (name, pointer))
    ident = random.randint(1, 65535)
    h.send(echo_request_frame(h, ident, b"\x01\x01\x01\x00"))
    if h.take(lambda p: p[ICMP].type == 0 and p[ICMP].id == ident, 2.0, h.icmp_inbox) is None:
        raise Fail("an echo request with well-formed options (NOP NOP NOP EOL) got no reply")
    findings.append("well-formed options -> echo reply")
    return "; ".join(findings)


CHECKS = {
    "synack": check_synack,
    "badcsum": check_badcsum,
    "challenge": check_challenge,
    "outofwindow": check_outofwindow,
    "paws": check_paws,
    "sack": check_sack,
    "oofin": check_oofin,
    "oddsyn": check_oddsyn,
    "synflood": check_synflood,
    "ipoptions": check_ipoptions,
}


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in CHECKS:
        print(__doc__)
        sys.exit(2)
    name, iface, dip, dmac = sys.argv[1:5]

    def on_alarm(signum, frame):
        print("FAIL %s: timed out after %d s" % (name, RUN_LIMIT_SECONDS), flush=True)
        os._exit(1)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(RUN_LIMIT_SECONDS)
    random.seed()
    h = Host(iface, dip, dmac)
    try:
        verdict = CHECKS[name](h)
        print("PASS %s: %s" % (name, verdict), flush=True)
        code = 0
    except Fail as e:
        print("FAIL %s: %s" % (name, e), flush=True)
        code = 1
    finally:
        h.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
