package io.nicstack.daemon.pipes;

import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.pipes.Protocol;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.tcp.TcpConnection;

/**
 * One connection slot of an app file: its header, RX pipe and TX pipe, and the daemon's bookkeeping.
 *
 * <p>Built when a connection first takes its index (views over the app's memory; nothing written there until then).
 * Life of a slot: FREE → allocated by TCP for a SYN or a CONNECT (pipes reset, new generation) →
 * announced to the app (ACCEPTED / CONNECTED) → freed when both the TCP connection is gone and the app
 * has sent CLOSE (or at once if the app never heard of it). Until then the memory belongs to that
 * connection id and no other.
 */
final class PipeSlot implements BufferProvider.ConnectionBuffers
{
    final AppSession session;
    final int index;
    final AtomicBuffer header;
    final PipeReceiveBuffer rx;
    final PipeSendBuffer tx;
    int generation;
    boolean allocated;
    /** The app knows the connection id (ACCEPTED or CONNECTED was sent). */
    boolean announced;
    /** An active open not yet answered: its outcome goes to {@link #requestId}. */
    boolean connecting;
    long requestId;
    boolean tcpGone;
    boolean appClosed;
    TcpConnection connection;
    long lastTxTail;
    long lastRxHead;
    long lastNotifiedTail;
    /** SEND_FILE in progress: the daemon's descriptor of the file (-1 when none), next position, bytes left, appended. */
    int fileFd = -1;
    long filePosition;
    long fileRemaining;
    long fileAppended;
    /**
     * A SEND_FILE of this connection was refused with nothing of it sent, when the app had written its control ring up
     * to {@link #fileRefusedBelow}: a CLOSE or SHUTDOWN below that was written before the app could see the refusal.
     */
    boolean fileRefused;
    long fileRefusedBelow;
    /** CLOSE or SHUTDOWN the app wrote behind the file in progress (0: none): it takes effect after the whole file. */
    int endAfterFile;

    PipeSlot(final AppSession session, final AtomicBuffer file, final int ringCapacity, final int pipeCapacity, final int index,
        final int maxOutOfOrderRanges)
    {
        this.session = session;
        this.index = index;
        this.header = new UnsafeBuffer(file, (int)AppFileDescriptor.slotOffset(ringCapacity, pipeCapacity, index),
            AppFileDescriptor.SLOT_HEADER_LENGTH);
        final int pipeLength = PipeDescriptor.length(pipeCapacity);
        this.rx = new PipeReceiveBuffer(new UnsafeBuffer(file,
            (int)AppFileDescriptor.rxPipeOffset(ringCapacity, pipeCapacity, index), pipeLength), pipeCapacity, maxOutOfOrderRanges);
        this.tx = new PipeSendBuffer(new UnsafeBuffer(file,
            (int)AppFileDescriptor.txPipeOffset(ringCapacity, pipeCapacity, index), pipeLength), pipeCapacity);
    }

    long connectionId()
    {
        return Protocol.connectionId(index, generation);
    }

    /** Taken for a new connection: fresh generation, both pipes back to stream offset 0. */
    void open()
    {
        generation = generation == Integer.MAX_VALUE ? 1 : generation + 1;
        allocated = true;
        announced = false;
        connecting = false;
        requestId = 0;
        tcpGone = false;
        appClosed = false;
        connection = null;
        lastTxTail = 0;
        lastRxHead = 0;
        lastNotifiedTail = 0;
        fileRefused = false;
        fileRefusedBelow = 0;
        endAfterFile = 0;
        rx.reset();
        tx.reset();
    }

    /** Tell the app (through the slot header) which connection lives here, before the event that names it. */
    void publish()
    {
        final TcpConnection c = connection;
        header.putLong(AppFileDescriptor.SLOT_CONNECTION_ID_OFFSET, connectionId());
        header.putInt(AppFileDescriptor.SLOT_REMOTE_ADDRESS_OFFSET, c.remoteAddress());
        header.putInt(AppFileDescriptor.SLOT_REMOTE_PORT_OFFSET, c.remotePort());
        header.putInt(AppFileDescriptor.SLOT_LOCAL_PORT_OFFSET, c.localPort());
        header.putIntRelease(AppFileDescriptor.SLOT_STATE_OFFSET, AppFileDescriptor.SLOT_IN_USE);
        announced = true;
        connecting = false;
    }

    void free()
    {
        allocated = false;
        announced = false;
        connecting = false;
        connection = null;
        header.putIntRelease(AppFileDescriptor.SLOT_STATE_OFFSET, AppFileDescriptor.SLOT_FREE);
    }

    @Override
    public PipeSendBuffer sendBuffer()
    {
        return tx;
    }

    @Override
    public PipeReceiveBuffer receiveBuffer()
    {
        return rx;
    }
}
