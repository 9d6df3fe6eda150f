package io.nicstack.stack.wire;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Byte fixtures. The IP frames were captured with tcpdump on Linux loopback (which has zero MAC
 * addresses; 52:54:00:12:34:56 and 02:42:ac:11:00:02 are patched in so Ethernet fields are not all
 * zero).
 */
final class Fixtures
{
    /** Destination MAC patched into the captured frames. */
    static final long DST_MAC = 0x5254_0012_3456L;

    /** Source MAC patched into the captured frames. */
    static final long SRC_MAC = 0x0242_ac11_0002L;

    /** 127.0.0.1. */
    static final int LOCALHOST = 0x7F00_0001;

    /**
     * {@code ping -c 1 127.0.0.1} (iputils): IPv4 DF, TTL 64, id 56135; ICMP echo request id 5166
     * seq 1, 16 bytes of timeval then 0x10..0x37. Checksums as sent.
     */
    static final String ICMP_ECHO_REQUEST =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 00 " +
        "00 54 db 47 40 00 40 01 61 5f 7f 00 00 01 7f 00 " +
        "00 01 08 00 93 d9 14 2e 00 01 c5 31 02 6b 00 00 " +
        "00 00 c2 87 07 00 00 00 00 00 10 11 12 13 14 15 " +
        "16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23 24 25 " +
        "26 27 28 29 2a 2b 2c 2d 2e 2f 30 31 32 33 34 35 " +
        "36 37";

    /**
     * Linux 6.x {@code connect()} SYN 127.0.0.1:59678 to :47001, seq 4202832634, window 65495,
     * options MSS 65495, SACK-permitted, TS val 2519564278 ecr 0, NOP, WS 10 (40-byte header). The
     * loopback capture carried the offload placeholder checksum 0xfe30; the correct 0x7ba5
     * (tcpdump "incorrect -> 0x7ba5") is patched in.
     */
    static final String TCP_SYN =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 00 " +
        "00 3c 68 8f 40 00 40 06 d4 2a 7f 00 00 01 7f 00 " +
        "00 01 e9 1e b7 99 fa 82 22 fa 00 00 00 00 a0 02 " +
        "ff d7 7b a5 00 00 02 04 ff d7 04 02 08 0a 96 2d " +
        "7f f6 00 00 00 00 01 03 03 0a";

    /**
     * The matching Linux SYN-ACK: seq 2621951659, ack 4202832635, window 65483, MSS, SACK-permitted,
     * TS val 3126699940 ecr 2519564278, NOP, WS 10; correct checksum 0xaeaa patched in.
     */
    static final String TCP_SYN_ACK =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 00 " +
        "00 3c 00 00 40 00 40 06 3c ba 7f 00 00 01 7f 00 " +
        "00 01 b7 99 e9 1e 9c 47 ce ab fa 82 22 fb a0 12 " +
        "ff cb ae aa 00 00 02 04 ff d7 04 02 08 0a ba 5d " +
        "a7 a4 96 2d 7f f6 01 03 03 0a";

    /**
     * Linux PSH|ACK, seq 4202832635 ack 2621951660 window 64, NOP, NOP, TS, payload
     * {@code "hello, nicstack\n"}; correct checksum 0xc95f patched in.
     */
    static final String TCP_DATA =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 00 " +
        "00 44 68 91 40 00 40 06 d4 20 7f 00 00 01 7f 00 " +
        "00 01 e9 1e b7 99 fa 82 22 fb 9c 47 ce ac 80 18 " +
        "00 40 c9 5f 00 00 01 01 08 0a 96 2d 7f f6 ba 5d " +
        "a7 a4 68 65 6c 6c 6f 2c 20 6e 69 63 73 74 61 63 " +
        "6b 0a";

    /**
     * UDP 127.0.0.1:58193 to :47002 with payload {@code "nicstack udp payload"}; correct checksum
     * 0xe87a patched in over the offload placeholder.
     */
    static final String UDP_DATAGRAM =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 00 " +
        "00 30 c2 af 40 00 40 11 7a 0b 7f 00 00 01 7f 00 " +
        "00 01 e3 51 b7 9a 00 1c e8 7a 6e 69 63 73 74 61 " +
        "63 6b 20 75 64 70 20 70 61 79 6c 6f 61 64";

    /**
     * The kernel's answer to {@link #UDP_DATAGRAM}: TOS 0xc0, ICMP destination unreachable, port
     * unreachable, quoting the whole original datagram (with its placeholder UDP checksum 0xfe2f).
     */
    static final String ICMP_PORT_UNREACHABLE =
        "52 54 00 12 34 56 02 42 ac 11 00 02 08 00 45 c0 " +
        "00 4c db 6b 00 00 40 01 a0 83 7f 00 00 01 7f 00 " +
        "00 01 03 03 e5 77 00 00 00 00 45 00 00 30 c2 af " +
        "40 00 40 11 7a 0b 7f 00 00 01 7f 00 00 01 e3 51 " +
        "b7 9a 00 1c fe 2f 6e 69 63 73 74 61 63 6b 20 75 " +
        "64 70 20 70 61 79 6c 6f 61 64";

    /**
     * Who-has 10.0.2.2 tell 10.0.2.15 from 52:54:00:12:34:56, as received from the wire: a
     * 42-byte frame padded with zeros to the 60-byte Ethernet minimum.
     */
    static final String ARP_REQUEST =
        "ff ff ff ff ff ff 52 54 00 12 34 56 08 06 00 01 " +
        "08 00 06 04 00 01 52 54 00 12 34 56 0a 00 02 0f " +
        "00 00 00 00 00 00 0a 00 02 02 00 00 00 00 00 00 " +
        "00 00 00 00 00 00 00 00 00 00 00 00";

    private Fixtures()
    {
    }

    /** Bytes of a hex string, whitespace ignored. */
    static byte[] bytes(final String hex)
    {
        final String digits = hex.replaceAll("\\s", "");
        final byte[] bytes = new byte[digits.length() / 2];
        for (int i = 0; i < bytes.length; i++)
        {
            bytes[i] = (byte)Integer.parseInt(digits.substring(2 * i, 2 * i + 2), 16);
        }
        return bytes;
    }

    /** A buffer of exactly the fixture's length, so any out-of-bounds access throws. */
    static UnsafeBuffer buffer(final String hex)
    {
        return new UnsafeBuffer(bytes(hex));
    }

    /** A buffer of {@code length} bytes pre-filled with 0xA5, so unwritten bytes show up. */
    static UnsafeBuffer filled(final int length)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[length]);
        buffer.setMemory(0, length, (byte)0xA5);
        return buffer;
    }

    /** The bytes of {@code buffer[offset, offset + length)}. */
    static byte[] slice(final UnsafeBuffer buffer, final int offset, final int length)
    {
        final byte[] bytes = new byte[length];
        buffer.getBytes(offset, bytes);
        return bytes;
    }
}
