package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.pipes.Protocol;

/** The app side of the contract played by hand: the file, the rings through Agrona, the pipes by their descriptor. */
final class TestApp implements AutoCloseable
{
    /** One event or notification as the app reads it. */
    record Event(int type, UnsafeBuffer body)
    {
        long longAt(final int offset)
        {
            return body.getLong(offset);
        }

        int intAt(final int offset)
        {
            return body.getInt(offset);
        }

        @Override
        public String toString()
        {
            return "Event(" + type + ", " + longAt(0) + ", " + intAt(8) + ")";
        }
    }

    final Path path;
    final int ringCapacity;
    final int pipeCapacity;
    final int maxConnections;
    final MappedByteBuffer mapped;
    final UnsafeBuffer file;
    final OneToOneRingBuffer control;
    final OneToOneRingBuffer events;
    final OneToOneRingBuffer notifications;
    final List<Event> received = new ArrayList<>();
    final List<Event> notified = new ArrayList<>();
    private final UnsafeBuffer message = new UnsafeBuffer(new byte[64]);

    TestApp(final Path appsDirectory, final String name, final long pid, final int ringCapacity, final int pipeCapacity,
        final int maxConnections) throws IOException
    {
        this.ringCapacity = ringCapacity;
        this.pipeCapacity = pipeCapacity;
        this.maxConnections = maxConnections;
        path = appsDirectory.resolve(name + "-" + pid + ".app");
        final long length = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
        try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw"))
        {
            raf.setLength(length);
            mapped = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, length);
        }
        file = new UnsafeBuffer(mapped);
        file.putLong(AppFileDescriptor.MAGIC_OFFSET, AppFileDescriptor.MAGIC);
        file.putInt(AppFileDescriptor.VERSION_OFFSET, AppFileDescriptor.VERSION);
        file.putInt(AppFileDescriptor.MAX_CONNECTIONS_OFFSET, maxConnections);
        file.putInt(AppFileDescriptor.PIPE_CAPACITY_OFFSET, pipeCapacity);
        file.putInt(AppFileDescriptor.RING_CAPACITY_OFFSET, ringCapacity);
        file.putLong(AppFileDescriptor.APP_PID_OFFSET, pid);
        final int ringLength = AppFileDescriptor.ringLength(ringCapacity);
        control = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.controlRingOffset(), ringLength));
        events = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.eventRingOffset(ringCapacity), ringLength));
        notifications = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.notificationRingOffset(ringCapacity), ringLength));
    }

    TestApp attach()
    {
        file.putIntRelease(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_ATTACHING);
        return this;
    }

    int state()
    {
        return file.getIntVolatile(AppFileDescriptor.STATE_OFFSET);
    }

    /** A control message of {@code length} bytes: long @0, int @8, int @12, long @16. */
    void send(final int type, final int length, final long l0, final int i8, final int i12, final long l16)
    {
        message.setMemory(0, 64, (byte)0);
        message.putLong(0, l0);
        message.putInt(8, i8);
        message.putInt(12, i12);
        message.putLong(16, l16);
        if (!control.write(type, message, 0, length))
        {
            throw new IllegalStateException("control ring full");
        }
    }

    /** SEND_FILE: long id @0, int fd @8, long position @16, long length @24. */
    void sendFile(final long connectionId, final int fd, final long position, final long length)
    {
        message.setMemory(0, 64, (byte)0);
        message.putLong(0, connectionId);
        message.putInt(8, fd);
        message.putLong(16, position);
        message.putLong(24, length);
        if (!control.write(Protocol.SEND_FILE, message, 0, Protocol.CONTROL_LENGTH))
        {
            throw new IllegalStateException("control ring full");
        }
    }

    void send(final int type, final long l0, final int i8, final int i12)
    {
        send(type, Protocol.CONTROL_LENGTH, l0, i8, i12, 0);
    }

    /** Take what the daemon posted on the event and notification rings. */
    void poll()
    {
        events.read((type, buffer, index, length) ->
        {
            final byte[] copy = new byte[length];
            buffer.getBytes(index, copy);
            received.add(new Event(type, new UnsafeBuffer(copy)));
        });
        notifications.read((type, buffer, index, length) ->
        {
            final byte[] copy = new byte[length];
            buffer.getBytes(index, copy);
            notified.add(new Event(type, new UnsafeBuffer(copy)));
        });
    }

    Event take(final int type)
    {
        poll();
        for (int i = 0; i < received.size(); i++)
        {
            if (received.get(i).type() == type)
            {
                return received.remove(i);
            }
        }
        return null;
    }

    UnsafeBuffer rxPipe(final int slot)
    {
        return new UnsafeBuffer(file, (int)AppFileDescriptor.rxPipeOffset(ringCapacity, pipeCapacity, slot), PipeDescriptor.length(pipeCapacity));
    }

    UnsafeBuffer txPipe(final int slot)
    {
        return new UnsafeBuffer(file, (int)AppFileDescriptor.txPipeOffset(ringCapacity, pipeCapacity, slot), PipeDescriptor.length(pipeCapacity));
    }

    /** Consume up to {@code max} readable RX bytes into {@code sink}, then ring the doorbell; returns the count. */
    int read(final int slot, final byte[] sink, final int max)
    {
        final UnsafeBuffer pipe = rxPipe(slot);
        final long tail = pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET);
        final long head = pipe.getLong(PipeDescriptor.HEAD_OFFSET);
        final int n = (int)Math.min(max, tail - head);
        for (int i = 0; i < n; i++)
        {
            sink[i] = pipe.getByte(PipeDescriptor.DATA_OFFSET + (int)((head + i) & (pipeCapacity - 1)));
        }
        if (n > 0)
        {
            pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, head + n);
        }
        return n;
    }

    /** Append up to {@code length} bytes of {@code source} from {@code offset} to the TX pipe, then ring the doorbell. */
    int write(final int slot, final byte[] source, final int offset, final int length)
    {
        final UnsafeBuffer pipe = txPipe(slot);
        final long tail = pipe.getLong(PipeDescriptor.TAIL_OFFSET);
        final long head = pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
        final int n = (int)Math.min(length, pipeCapacity - (tail - head));
        for (int i = 0; i < n; i++)
        {
            pipe.putByte(PipeDescriptor.DATA_OFFSET + (int)((tail + i) & (pipeCapacity - 1)), source[offset + i]);
        }
        if (n > 0)
        {
            pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, tail + n);
        }
        return n;
    }

    @Override
    public void close()
    {
        IoUtil.unmap(mapped);
    }
}
