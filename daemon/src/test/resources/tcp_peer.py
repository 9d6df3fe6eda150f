"""Kernel-side TCP peer for the daemon's kernel tests (runs inside the test's namespace).

usage:
  tcp_peer.py echo ADDR BYTES               stream BYTES through the echo service, compare SHA-256
  tcp_peer.py parallel ADDR CONNS BYTES     CONNS concurrent echo connections of BYTES each
  tcp_peer.py chargen ADDR BYTES            read BYTES from chargen, check the RFC 864 pattern
  tcp_peer.py discard ADDR BYTES            send BYTES to discard, expect a clean close
  tcp_peer.py refused ADDR PORT             connect to a closed port, expect ConnectionRefusedError at once
  tcp_peer.py hold ADDR SECONDS             keep one connection to discard open for SECONDS
  tcp_peer.py server ADDR PORT BYTES        accept one connection: receive BYTES (SHA-256 of the
                                            deterministic stream), send BYTES back, print both digests
Prints one summary line; exits non-zero on any mismatch. Every loop is bounded by a socket timeout.
"""
import hashlib
import os
import selectors
import socket
import sys
import threading
import time

TIMEOUT = 30


def stream_chunk(offset, n, salt):
    """Deterministic bytes: the same function in tcp_peer.py and the Java test (see KernelTcpTest)."""
    base = bytes((((i * 7) + salt) & 0xFF) for i in range(256))
    start = offset % 256
    reps = (start + n) // 256 + 1
    return (base * reps)[start:start + n]


def echo(addr, total, sock=None):
    s = sock or socket.create_connection((addr, 7), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    data = os.urandom(1 << 20)
    sent_hash, recv_hash = hashlib.sha256(), hashlib.sha256()
    errors = []

    def sender():
        try:
            left = total
            while left > 0:
                chunk = data[: min(len(data), left)]
                s.sendall(chunk)
                sent_hash.update(chunk)
                left -= len(chunk)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            errors.append(e)

    t = threading.Thread(target=sender)
    t0 = time.time()
    t.start()
    got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        recv_hash.update(b)
        got += len(b)
    t.join(TIMEOUT)
    s.close()
    dt = time.time() - t0
    ok = not errors and got == total and sent_hash.digest() == recv_hash.digest()
    return ok, got, dt, errors


def parallel(addr, conns, size):
    sel = selectors.DefaultSelector()
    payloads = {}
    for i in range(conns):
        s = socket.create_connection((addr, 7), timeout=TIMEOUT)
        s.setblocking(False)
        data = os.urandom(size)
        state = {"data": data, "sent": 0, "recv": bytearray(), "sock": s}
        payloads[s.fileno()] = state
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, state)
    done = 0
    deadline = time.time() + 120
    while done < conns and time.time() < deadline:
        for key, events in sel.select(timeout=1):
            st = key.data
            s = st["sock"]
            if events & selectors.EVENT_WRITE and st["sent"] < size:
                try:
                    st["sent"] += s.send(st["data"][st["sent"]: st["sent"] + 65536])
                except BlockingIOError:
                    pass
                if st["sent"] == size:
                    s.shutdown(socket.SHUT_WR)
                    sel.modify(s, selectors.EVENT_READ, st)
            if events & selectors.EVENT_READ:
                try:
                    b = s.recv(65536)
                except BlockingIOError:
                    continue
                if not b:
                    sel.unregister(s)
                    s.close()
                    done += 1
                    if bytes(st["recv"]) != st["data"]:
                        print(f"connection echoed {len(st['recv'])} of {size} bytes, content differs")
                        sys.exit(1)
                else:
                    st["recv"] += b
    print(f"parallel {done} of {conns} connections echoed {size} bytes each exactly")
    sys.exit(0 if done == conns else 1)


def chargen(addr, total):
    s = socket.create_connection((addr, 19), timeout=TIMEOUT)
    line = 74
    pattern = bytearray()
    for n in range(95):
        pattern += bytes(32 + (n + i) % 95 for i in range(72)) + b"\r\n"
    period = len(pattern)
    pattern = bytes(pattern) * ((1 << 16) // period + 2)
    got = 0
    t0 = time.time()
    while got < total:
        b = s.recv(min(1 << 16, total - got))
        if not b:
            break
        off = got % period
        if b != pattern[off: off + len(b)]:
            print(f"chargen pattern mismatch at byte {got}")
            sys.exit(1)
        got += len(b)
    s.close()
    dt = time.time() - t0
    print(f"chargen {got} bytes in {dt:.2f}s, pattern exact")
    sys.exit(0 if got == total else 1)


def discard(addr, total):
    s = socket.create_connection((addr, 9), timeout=TIMEOUT)
    data = os.urandom(1 << 20)
    left = total
    t0 = time.time()
    while left > 0:
        n = min(len(data), left)
        s.sendall(data[:n])
        left -= n
    s.shutdown(socket.SHUT_WR)
    rest = s.recv(10)
    s.close()
    dt = time.time() - t0
    print(f"discard {total} bytes in {dt:.2f}s, peer closed cleanly={rest == b''}")
    sys.exit(0 if rest == b"" else 1)


def refused(addr, port):
    t0 = time.time()
    try:
        socket.create_connection((addr, port), timeout=5)
    except ConnectionRefusedError:
        print(f"ConnectionRefusedError after {(time.time() - t0) * 1000:.1f} ms")
        sys.exit(0)
    print("connected to a port that should be closed")
    sys.exit(1)


def server(addr, port, total):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    ls.settimeout(TIMEOUT)
    print("listening", flush=True)
    s, _ = ls.accept()
    s.settimeout(TIMEOUT)
    recv_hash = hashlib.sha256()
    errors = []

    def sender():
        try:
            off = 0
            while off < total:
                n = min(1 << 16, total - off)
                s.sendall(stream_chunk(off, n, 2))
                off += n
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            errors.append(e)

    t = threading.Thread(target=sender)
    t.start()
    got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        recv_hash.update(b)
        got += len(b)
    t.join(TIMEOUT)
    s.close()
    print(f"server received {got} sha256 {recv_hash.hexdigest()} errors {len(errors)}", flush=True)
    sys.exit(0 if not errors else 1)


mode = sys.argv[1]
if mode == "echo":
    ok, got, dt, errors = echo(sys.argv[2], int(sys.argv[3]))
    print(f"echo {got} of {sys.argv[3]} bytes in {dt:.2f}s ({got / max(dt, 1e-9) / 1e6:.1f} MB/s) exact={ok} errors={errors}")
    sys.exit(0 if ok else 1)
elif mode == "parallel":
    parallel(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif mode == "chargen":
    chargen(sys.argv[2], int(sys.argv[3]))
elif mode == "discard":
    discard(sys.argv[2], int(sys.argv[3]))
elif mode == "refused":
    refused(sys.argv[2], int(sys.argv[3]))
elif mode == "hold":
    # Connect to discard, send a little, and keep the connection open for SECONDS.
    s = socket.create_connection((sys.argv[2], 9), timeout=TIMEOUT)
    s.sendall(b"x" * 1000)
    print("holding", flush=True)
    time.sleep(float(sys.argv[3]))
    s.close()
elif mode == "server":
    server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
else:
    print("unknown mode", mode)
    sys.exit(2)
