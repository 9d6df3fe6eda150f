package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.linux.Linux;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.ReceiveBuffer;

/** The pipe-backed TCP buffers against the pipe layout, with the app's side played by hand. */
class PipeBuffersTest
{
    private static final int CAPACITY = 64;

    private final UnsafeBuffer pipe = new UnsafeBuffer(new byte[PipeDescriptor.length(CAPACITY)]);

    /** The app appends like a producer of the pipe: bytes at tail, then a release-store of the tail. */
    private void appAppend(final byte[] bytes)
    {
        appAppend(pipe, bytes);
    }

    private static void appAppend(final UnsafeBuffer pipe, final byte[] bytes)
    {
        long tail = pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET);
        for (final byte b : bytes)
        {
            pipe.putByte(PipeDescriptor.DATA_OFFSET + (int)(tail++ & (CAPACITY - 1)), b);
        }
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, tail);
    }

    private static byte[] bytes(final int from, final int length)
    {
        final byte[] b = new byte[length];
        for (int i = 0; i < length; i++)
        {
            b[i] = (byte)(from + i);
        }
        return b;
    }

    /**
     * SEND_FILE's half of the send buffer, randomized: the app appends, the daemon fills file bytes after them in
     * random chunks across the wrap while the app (misbehaving) scribbles on the tail, acknowledgements free space;
     * the stream is always the app's bytes and the file's bytes in order, and the app's tail is ignored while filling.
     */
    @Test
    void fillPutsTheFileAfterTheAppsBytesAcrossTheWrapAndIgnoresTheAppsTailMeanwhile(@TempDir final Path dir)
        throws Exception
    {
        final UnsafeBuffer direct = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(CAPACITY)));
        final byte[] file = new byte[5000];
        new SplittableRandom(3).nextBytes(file);
        final Path path = Files.write(dir.resolve("f.bin"), file);
        final int fd = Linux.LIBC.open(path.toString(), Linux.O_RDONLY);
        try
        {
            final SplittableRandom random = new SplittableRandom(4);
            final PipeSendBuffer tx = new PipeSendBuffer(direct, CAPACITY);
            tx.reset();
            final java.io.ByteArrayOutputStream model = new java.io.ByteArrayOutputStream();
            for (int round = 0; round < 300; round++)
            {
                final byte[] own = new byte[random.nextInt(0, tx.free() + 1)];
                random.nextBytes(own);
                appAppend(direct, own);
                model.writeBytes(own);
                assertEquals(model.size(), tx.end());

                int position = random.nextInt(0, file.length - 200);
                int remaining = random.nextInt(1, 200);
                tx.beginFill();
                while (remaining > 0)
                {
                    if (tx.free() == 0)
                    {
                        tx.release(tx.start() + random.nextInt(1, (int)(tx.end() - tx.start()) + 1)); // an ACK
                    }
                    direct.putLongRelease(PipeDescriptor.TAIL_OFFSET, random.nextLong()); // the app misbehaves
                    assertEquals(model.size(), tx.end(), "the app's tail is not followed while filling");
                    final long read = tx.fill(fd, position, Math.min(remaining, random.nextInt(1, 64)));
                    assertTrue(read > 0, "read " + read);
                    model.write(file, position, (int)read);
                    position += read;
                    remaining -= read;
                    assertEquals(model.size(), tx.end());
                    assertEquals(model.size(), direct.getLongVolatile(PipeDescriptor.TAIL_OFFSET), "published");
                }
                tx.endFill();
                final int held = (int)(tx.end() - tx.start());
                final byte[] out = new byte[held];
                tx.read(tx.start(), new UnsafeBuffer(out), 0, held);
                final byte[] expected = model.toByteArray();
                assertArrayEquals(java.util.Arrays.copyOfRange(expected, expected.length - held, expected.length), out,
                    "round " + round);
                tx.release(tx.start() + random.nextInt(0, held + 1));
            }
        }
        finally
        {
            Linux.LIBC.close(fd);
        }
    }

    @Test
    void sendBufferFollowsTheAppsTailAndReleasesTheHeadOnAck()
    {
        final PipeSendBuffer tx = new PipeSendBuffer(pipe, CAPACITY);
        tx.reset();
        assertEquals(0, tx.end());
        appAppend(bytes(0, 50));
        assertEquals(0, tx.start());
        assertEquals(50, tx.end());
        assertEquals(CAPACITY - 50, tx.free());

        tx.release(40);
        assertEquals(40, pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET), "released bytes go back to the app");
        appAppend(bytes(50, 54)); // wraps around the end of the ring
        assertEquals(104, tx.end());

        final byte[] out = new byte[64];
        final UnsafeBuffer dst = new UnsafeBuffer(out);
        tx.read(40, dst, 0, 64);
        assertArrayEquals(bytes(40, 64), out, "a read across the wrap");
        tx.read(60, dst, 0, 10); // retransmission: the same bytes again
        assertArrayEquals(bytes(60, 10), java.util.Arrays.copyOf(out, 10));

        assertThrows(IllegalArgumentException.class, () -> tx.read(39, dst, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> tx.read(100, dst, 0, 5));
        assertThrows(IllegalArgumentException.class, () -> tx.release(105));
    }

    @Test
    void sendBufferNeverTrustsABogusTail()
    {
        final PipeSendBuffer tx = new PipeSendBuffer(pipe, CAPACITY);
        tx.reset();
        appAppend(bytes(0, 10));
        assertEquals(10, tx.end());
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 1_000_000);
        assertEquals(CAPACITY, tx.end(), "never more than the pipe holds");
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 3);
        assertEquals(CAPACITY, tx.end(), "never backwards");
    }

    @Test
    void frozenSendBufferIgnoresLaterAppends()
    {
        final PipeSendBuffer tx = new PipeSendBuffer(pipe, CAPACITY);
        tx.reset();
        appAppend(bytes(0, 10));
        tx.freeze();
        appAppend(bytes(10, 10));
        assertEquals(10, tx.end(), "the FIN's place stays put after SHUTDOWN");
    }

    @Test
    void sendBufferAppendPublishesTheTail()
    {
        final PipeSendBuffer tx = new PipeSendBuffer(pipe, CAPACITY);
        tx.reset();
        assertEquals(CAPACITY, tx.append(new UnsafeBuffer(bytes(0, 100)), 0, 100));
        assertEquals(CAPACITY, pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET));
        tx.release(10);
        assertEquals(10, tx.append(new UnsafeBuffer(bytes(64, 30)), 0, 30));
        final byte[] out = new byte[64];
        tx.read(10, new UnsafeBuffer(out), 0, 64);
        assertArrayEquals(bytes(10, 64), out);
    }

    @Test
    void receiveBufferPublishesOnlyContiguousBytesAndWindowFollowsTheAppsHead()
    {
        final PipeReceiveBuffer rx = new PipeReceiveBuffer(pipe, CAPACITY, 4);
        rx.reset();
        final UnsafeBuffer src = new UnsafeBuffer(bytes(0, 200));
        assertEquals(0, rx.write(20, src, 20, 10), "out of order");
        assertEquals(0, pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET), "no hole is ever published");
        assertEquals(1, rx.outOfOrderRanges());
        assertEquals(30, rx.write(0, src, 0, 20), "fills the hole and absorbs the range");
        assertEquals(30, pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET));
        assertEquals(CAPACITY - 30, rx.window());

        assertEquals(34, rx.write(30, src, 30, 100), "clipped to head + capacity");
        assertEquals(0, rx.window(), "a slow app closes the window");
        assertEquals(0, rx.write(64, src, 64, 10));

        // The app consumes 40 bytes and rings the doorbell.
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 40);
        assertEquals(40, rx.readPosition());
        assertEquals(40, rx.window());
        assertEquals(10, rx.write(64, src, 64, 10));
        final byte[] out = new byte[34];
        assertEquals(34, rx.read(new UnsafeBuffer(out), 0, 100));
        assertArrayEquals(bytes(40, 34), out, "across the wrap");
    }

    @Test
    void receiveBufferNeverTrustsABogusHead()
    {
        final PipeReceiveBuffer rx = new PipeReceiveBuffer(pipe, CAPACITY, 4);
        rx.reset();
        rx.write(0, new UnsafeBuffer(bytes(0, 20)), 0, 20);
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 1_000);
        assertEquals(20, rx.readPosition(), "not beyond the tail");
        assertEquals(CAPACITY, rx.window());
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 5);
        assertEquals(20, rx.readPosition(), "never backwards");
    }

    @Test
    void receiveBufferRejectsBeyondTheRangeLimit()
    {
        final PipeReceiveBuffer rx = new PipeReceiveBuffer(pipe, CAPACITY, 2);
        rx.reset();
        final UnsafeBuffer src = new UnsafeBuffer(bytes(0, 64));
        assertEquals(0, rx.write(10, src, 10, 2));
        assertEquals(0, rx.write(20, src, 20, 2));
        assertEquals(ReceiveBuffer.REJECTED, rx.write(30, src, 30, 2));
        assertEquals(20, rx.outOfOrderStart(0), "newest first");
        assertEquals(0, rx.write(12, src, 12, 3), "touching a range is never rejected");
        assertEquals(10, rx.outOfOrderStart(0));
        assertEquals(15, rx.outOfOrderEnd(0));
        assertEquals(7, rx.outOfOrderBytes());
    }
}
