package io.nicstack.stack.tcp;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.storage.RingReceiveBuffer;
import io.nicstack.stack.storage.RingSendBuffer;
import io.nicstack.stack.storage.SendBuffer;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * A segment whose building throws after its frame was claimed from the device: the claim is given back, so the
 * connection's next segment, and every other sender's, still gets a frame.
 */
class TcpEmitFailureTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    /**
     * A provided send buffer (an application's TX pipe in shared memory, DESIGN.md) whose read throws while a data
     * segment is copied into its claimed frame: the write reports the failure, nothing goes out, and the frame is
     * not counted as a datagram sent. Once the buffer reads again, the next emit works: the peer's data is
     * acknowledged together with the bytes. Before, the frame stayed claimed, the device's next claim found it open
     * ("claim without commit"), and no segment left the stack again.
     */
    @Test
    void aSendBufferThatThrowsMidSegmentLeavesNoFrameClaimed()
    {
        final FailingSendBuffer send = new FailingSendBuffer(4096);
        t.listen().bufferProvider(provider(send));
        t.passiveOpen();
        final long datagramsBefore = t.counter(StackCounter.IPV4_OUT_DATAGRAMS);

        send.failReads = true;
        final IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.write(bytes(10, 1)));
        assertEquals(FailingSendBuffer.MESSAGE, e.getMessage());
        t.recvNothing();
        assertEquals(datagramsBefore, t.counter(StackCounter.IPV4_OUT_DATAGRAMS), "an aborted frame is not sent");

        send.failReads = false;
        t.send(t.in().flags(ACK | PSH).payload(bytes(5, 2)));
        // The next segment: the bytes whose first copy failed, with the ACK of the peer's.
        t.recv(t.out().flags(ACK | PSH).ack(t.irs + 6).payload(bytes(10, 1)));
        t.send(t.in().seq(t.irs + 6).ack(t.iss + 11));
        t.advanceMs(500);
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.INTERNAL_ERRORS));
    }

    private static BufferProvider provider(final SendBuffer send)
    {
        final BufferProvider.ConnectionBuffers buffers = TcpTestHarness.buffers(send, new RingReceiveBuffer(4096, 16));
        return new BufferProvider()
        {
            @Override
            public ConnectionBuffers allocate()
            {
                return buffers;
            }

            @Override
            public int receiveCapacity()
            {
                return 4096;
            }

            @Override
            public void release(final ConnectionBuffers buffers)
            {
            }
        };
    }

    /** A ring whose reads throw while {@link #failReads} is set, as a pipe whose memory went away would. */
    private static final class FailingSendBuffer implements SendBuffer
    {
        static final String MESSAGE = "test: the send buffer's read failed";

        private final RingSendBuffer ring;
        boolean failReads;

        FailingSendBuffer(final int capacity)
        {
            ring = new RingSendBuffer(capacity);
        }

        @Override
        public long start()
        {
            return ring.start();
        }

        @Override
        public long end()
        {
            return ring.end();
        }

        @Override
        public int capacity()
        {
            return ring.capacity();
        }

        @Override
        public int append(final DirectBuffer source, final int index, final int length)
        {
            return ring.append(source, index, length);
        }

        @Override
        public void read(final long offset, final MutableDirectBuffer destination, final int index, final int length)
        {
            if (failReads)
            {
                throw new IllegalStateException(MESSAGE);
            }
            ring.read(offset, destination, index, length);
        }

        @Override
        public void release(final long offset)
        {
            ring.release(offset);
        }
    }
}
