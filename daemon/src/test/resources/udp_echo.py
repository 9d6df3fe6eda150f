"""UDP echo client run by the kernel-peer tests inside the test's namespace.

usage: udp_echo.py ADDR FROM TO       echo one datagram of every size FROM..TO, exact comparison
       udp_echo.py ADDR refused PORT  send to a closed port and print the error the kernel raises
"""
import os
import socket
import sys

addr = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
if sys.argv[2] == "refused":
    s.connect((addr, int(sys.argv[3])))
    s.send(b"is anyone there")
    try:
        s.recv(100)
        print("unexpected answer")
        sys.exit(1)
    except ConnectionRefusedError as e:
        print("ConnectionRefusedError", e)
        sys.exit(0)
    except socket.timeout:
        print("timeout: no ICMP port unreachable")
        sys.exit(1)

lo, hi = int(sys.argv[2]), int(sys.argv[3])
count = 0
for size in range(lo, hi + 1):
    data = os.urandom(size)
    for attempt in range(3):
        s.sendto(data, (addr, 7))
        try:
            back, _ = s.recvfrom(65535)
            break
        except socket.timeout:
            continue
    else:
        print(f"no echo for size {size}")
        sys.exit(1)
    if back != data:
        print(f"echo of size {size} differs ({len(back)} bytes back)")
        sys.exit(1)
    count += 1
print(f"echoed {count} datagrams exactly")
