"""Kernel-side bulk peer for scripts/bench-tcp.sh (runs inside a benchmark namespace).

  bulk_peer.py send ADDR PORT BYTES     connect, send BYTES, shut down, wait for close; print MB/s
  bulk_peer.py recv ADDR PORT BYTES     connect, receive BYTES; print MB/s (a stream that ends first: exit 1, no figure)
  bulk_peer.py sink ADDR PORT           accept one connection, read until close (a discard server)
  bulk_peer.py source ADDR PORT         accept one connection, send until the peer closes (a chargen server)
  bulk_peer.py blast ADDR PORT SECONDS  send 1448-byte UDP datagrams for SECONDS, 45 per system call with UDP GSO
                                        (UDP_SEGMENT, Linux 4.18+; one per call without it); print the count
"""
import socket
import sys
import time

mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = b"\x5a" * (1 << 20)
UDP_SEGMENT = 103  # linux/udp.h; Python's socket module does not name it
if not (addr.startswith("198.18.") or addr.startswith("198.19.")):
    sys.exit(f"benchmarks send only to 198.18.0.0/15, not {addr}")
if mode == "blast":
    # The tap's capacity, not a sender's system calls: the kernel cuts each 45-datagram buffer into 1448-byte
    # datagrams itself, so the sender makes one call per 45 frames.
    seconds = float(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((addr, port))
    per_call = 45
    try:
        s.setsockopt(socket.SOL_UDP, UDP_SEGMENT, 1448)
    except OSError:
        per_call = 1
    payload = b"\x5a" * (1448 * per_call)
    sent = 0
    t0 = time.time()
    end = t0 + seconds
    while time.time() < end:
        for _ in range(16):
            try:
                s.send(payload)
                sent += per_call
            except OSError:
                pass  # an ICMP error reported on the connected socket, or no buffer space: keep going (bounded)
    print(f"blast sent {sent} datagrams {time.time() - t0:.3f} s ({per_call} per call)", flush=True)
    sys.exit(0)
if mode in ("send", "recv"):
    total = int(sys.argv[4])
    s = socket.create_connection((addr, port), timeout=30)
    t0 = time.time()
    moved = 0
    if mode == "send":
        while moved < total:
            n = min(len(chunk), total - moved)
            s.sendall(chunk[:n])
            moved += n
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
    else:
        while moved < total:
            b = s.recv(1 << 20)
            if not b:
                break
            moved += len(b)
    dt = time.time() - t0
    s.close()
    if moved < total:
        # A figure for the shorter transfer would pass for the benchmark's; bench-tcp.sh's peer() fails on the exit code.
        sys.exit(f"{mode}: the stream ended after {moved} of {total} bytes (the sender closed early); no MB/s figure")
    print(f"{mode} {moved} bytes {dt:.3f} s {moved / dt / 1e6:.1f} MB/s", flush=True)
else:
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    ls.settimeout(30)
    print("listening", flush=True)
    s, _ = ls.accept()
    s.settimeout(30)
    try:
        if mode == "sink":
            while s.recv(1 << 20):
                pass
        else:
            while True:
                s.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    s.close()
