"""Kernel-side bulk peer for scripts/bench-tcp.sh (runs inside a benchmark namespace).

  bulk_peer.py send ADDR PORT BYTES     connect, send BYTES, shut down, wait for close; print MB/s
  bulk_peer.py recv ADDR PORT BYTES     connect, receive BYTES (or until close); print MB/s
  bulk_peer.py sink ADDR PORT           accept one connection, read until close (a discard server)
  bulk_peer.py source ADDR PORT         accept one connection, send until the peer closes (a chargen server)
"""
import socket
import sys
import time

mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = b"\x5a" * (1 << 20)
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
