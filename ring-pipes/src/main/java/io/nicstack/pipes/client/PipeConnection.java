package io.nicstack.pipes.client;

import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.Protocol;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * One TCP connection of the app, seen as two byte pipes in shared memory: the daemon writes received payload into the
 * RX pipe and the app consumes it in place ({@link #peek()}, {@link #rxBuffer()}, {@link #release(int)}); the app
 * writes payload to send into the TX pipe in place ({@link #claim(int)}, {@link #txBuffer()}, {@link #commit(int)},
 * which rings the doorbell). These, {@link #peek()}, {@link #release}, {@link #claim}, {@link #commit} and the
 * buffers' accessors, never block nor allocate. The stream adapters and {@link #awaitReadable} wait for bytes or room;
 * {@link #sendFile}, {@link #setOption} and {@link #shutdownOutput} wait only while the control ring is full (the daemon
 * behind on it), polling the client as the blocking calls do. {@link #close()} and {@link #abort()} never wait for the
 * daemon: with the ring full, their message waits in the client, sent before any other by the next poll or blocking
 * call, or the client's close.
 *
 * <p>State changes (peer closed, closed, reset) arrive as events, so they are seen after a {@link NicstackClient#poll()};
 * payload needs no poll: {@link #peek()} reads the RX tail itself.
 */
public final class PipeConnection implements AutoCloseable
{
    private final NicstackClient client;
    private final long id;
    private final int localPort;
    private final int remoteAddress;
    private final int remotePort;
    private final Pipe rx;
    private final Pipe tx;

    private boolean peerClosed;
    private int deliveryProblems;
    private boolean daemonClosed;
    private boolean locallyClosed;
    private boolean outputShutdown;
    private int closeReason = Protocol.Reason.NONE;
    private int lastError = Protocol.Reason.NONE;
    private long notifiedTail;
    /**
     * The file of the SEND_FILE the daemon has not answered yet, null when none: the TX tail is the daemon's, and a
     * SHUTDOWN or CLOSE asked for meanwhile (outputShutdown, locallyClosed) waits for the answer.
     */
    private SendableFile fileInFlight;
    /** The control ring position after the SEND_FILE of {@link #fileInFlight}: the daemon has read it once past. */
    private long fileControlPosition;
    private int fileReason = Protocol.Reason.NONE;
    private long fileBytes;
    private InputStream inputStream;
    private OutputStream outputStream;
    /**
     * A close or abort another thread asked for, done by the thread that holds the client (ASKED_*; 0: none). Taken with
     * getAndSet and set to a close only from 0, so an abort asked at any moment is never lost nor turned into a close.
     */
    private volatile int closeAsked;
    private static final int ASKED_CLOSE = 1;
    private static final int ASKED_ABORT = 2;
    private static final VarHandle CLOSE_ASKED;

    static
    {
        try
        {
            CLOSE_ASKED = MethodHandles.lookup().findVarHandle(PipeConnection.class, "closeAsked", int.class);
        }
        catch (final ReflectiveOperationException ex)
        {
            throw new ExceptionInInitializerError(ex);
        }
    }

    PipeConnection(
        final NicstackClient client,
        final long id,
        final int localPort,
        final int remoteAddress,
        final int remotePort,
        final Pipe rx,
        final Pipe tx)
    {
        this.client = client;
        this.id = id;
        this.localPort = localPort;
        this.remoteAddress = remoteAddress;
        this.remotePort = remotePort;
        this.rx = rx;
        this.tx = tx;
    }

    /** {@code (generation << 16) | slot}. */
    public long id()
    {
        return id;
    }

    public int localPort()
    {
        return localPort;
    }

    /** IPv4 address of the peer, first octet most significant. */
    public int remoteAddress()
    {
        return remoteAddress;
    }

    public int remotePort()
    {
        return remotePort;
    }

    // ---- zero-copy receive ------------------------------------------------------------------

    /**
     * Contiguous readable bytes at {@link #rxIndex()} of {@link #rxBuffer()} now (up to the wrap of the pipe), 0 if
     * none yet, -1 at the end of the stream (the peer closed and everything was consumed). Never blocks.
     *
     * @throws ConnectionResetException    if the connection was reset.
     * @throws ConnectionTimedOutException if it timed out.
     * @throws DaemonGoneException         if the daemon is gone, or its side of the RX pipe is corrupt (reason
     *                                     BAD_MESSAGE: its tail went back, or ran more than the pipe's capacity past
     *                                     the head): the session is lost, as for a corrupt ring.
     * @throws NicstackException           if this connection was closed by the app.
     */
    public int peek() throws NicstackException
    {
        checkUsable();
        final int readable = rx.peek();
        if (readable > 0)
        {
            return readable;
        }
        // The daemon published the tail before the NOTIFY that named it, so a tail read after it is not below it.
        if (rx.isCorrupt(notifiedTail))
        {
            throw client.onCorruptPipe("the RX pipe of connection " + describe() +
                " is corrupt: its tail went back, or ran more than the pipe's capacity past the head (" + rx +
                ", the app's head " + rx.head() + ", tail last notified " + notifiedTail + ")");
        }
        if (closeReason != Protocol.Reason.NONE)
        {
            throw NicstackException.of(closeReason, "connection " + describe());
        }
        // The event that set these flags was read after the daemon published the final tail, so 0 here is the end.
        return peerClosed || daemonClosed ? -1 : 0;
    }

    /**
     * The buffer the peeked span lies in: the whole mapping, index with {@link #rxIndex()}. Valid until this
     * connection or its client is closed; do not keep it past that.
     *
     * @throws IllegalStateException if this connection or its client was closed (the slot is another's, or unmapped).
     */
    public DirectBuffer rxBuffer()
    {
        checkMapped();
        return rx.buffer();
    }

    /**
     * Where the span of {@link #peek()} starts in {@link #rxBuffer()}.
     *
     * @throws IllegalStateException if this connection or its client was closed.
     */
    public int rxIndex()
    {
        checkMapped();
        return rx.peekIndex();
    }

    /**
     * Consume {@code n} peeked bytes: moves the RX head, so the daemon can reopen the TCP window.
     *
     * @throws IllegalStateException if this connection or its client was closed.
     */
    public void release(final int n)
    {
        checkMapped();
        rx.release(n);
    }

    // ---- zero-copy send ---------------------------------------------------------------------

    /**
     * Contiguous writable bytes at {@link #txIndex()} of {@link #txBuffer()} now, at most {@code max} (up to the wrap of
     * the pipe), 0 if the pipe is full.
     *
     * @throws NicstackException if the connection is closed or reset, or its output was shut down.
     */
    public int claim(final int max) throws NicstackException
    {
        checkWritable();
        return fileInFlight != null ? 0 : tx.claim(max);
    }

    /** Size of the TX pipe in bytes. */
    public int txCapacity()
    {
        return tx.capacity();
    }

    /**
     * Free bytes in the TX pipe now (what the daemon has released), wrap or not; {@link #claim} gives the contiguous
     * part. 0 while a file is being sent.
     *
     * @throws IllegalStateException if this connection or its client was closed.
     */
    public int txFree()
    {
        checkMapped();
        return fileInFlight != null ? 0 : tx.free();
    }

    /**
     * Bytes of this connection's stream, counted from its first, that the daemon has released from the TX pipe: the
     * peer acknowledged them (the pipe's head, as the daemon published it). Committed bytes and {@link #sendFile}
     * bytes count alike; it never goes back, and it moves while a file is being sent, when nothing else shows the
     * app that the transfer goes on: a send timeout can watch it. One acquire load, no allocation.
     *
     * @throws IllegalStateException if this connection or its client was closed (the slot is another's, or unmapped).
     */
    public long txReleased()
    {
        checkMapped();
        return tx.headVolatile();
    }

    /**
     * The buffer a claimed span lies in: the whole mapping, index with {@link #txIndex()}. Valid until this
     * connection or its client is closed; do not keep it past that.
     *
     * @throws IllegalStateException if this connection or its client was closed (the slot is another's, or unmapped).
     */
    public MutableDirectBuffer txBuffer()
    {
        checkMapped();
        return tx.buffer();
    }

    /**
     * Where the span of {@link #claim(int)} starts in {@link #txBuffer()}.
     *
     * @throws IllegalStateException if this connection or its client was closed.
     */
    public int txIndex()
    {
        checkMapped();
        return tx.claimIndex();
    }

    /**
     * Publish {@code n} claimed bytes (the doorbell: a release store of the TX tail).
     *
     * @throws NicstackException     as {@link #claim}: bytes committed after the output was shut down, or the
     *                               connection closed or reset, would never be sent.
     * @throws IllegalStateException if a file is being sent on this connection and {@code n} is not 0.
     */
    public void commit(final int n) throws NicstackException
    {
        checkWritable();
        if (fileInFlight != null && n != 0)
        {
            throw new IllegalStateException("commit while " + fileInFlight + " is being sent on " + describe());
        }
        tx.commit(n);
    }

    /**
     * SEND_FILE: the daemon appends {@code length} bytes of {@code file} from {@code position} to the stream, after
     * everything committed so far, reading them itself: the host app does not copy them. Until the daemon answers
     * (seen after a {@link NicstackClient#poll()}: {@link #isSendingFile()} turns false) the TX pipe is the
     * daemon's: {@link #claim} gives 0, and a {@link #shutdownOutput()} or {@link #close()} takes effect after
     * the file. Then {@link #fileReason()} says how it went: NONE (all bytes queued), or FILE_UNREADABLE with
     * {@link #fileBytes()} 0 when the daemon refused the file (the connection is unharmed: send the bytes some
     * other way) or more when the file could not be read to its end (the daemon resets the connection).
     *
     * @throws NicstackException if the connection is closed or reset, or its output was shut down.
     * @throws IllegalStateException if a file is already being sent on this connection, or {@code file} is closed.
     */
    public void sendFile(final SendableFile file, final long position, final long length) throws NicstackException
    {
        final boolean held = client.enterBlocking();
        try
        {
            claim(0); // the same checks as a claim
            if (position < 0 || length <= 0 || position + length < 0)
            {
                throw new IllegalArgumentException("sendFile of " + length + " bytes at " + position);
            }
            if (fileInFlight != null)
            {
                throw new IllegalStateException(fileInFlight + " is still being sent on " + describe());
            }
            final int fd = file.acquire();
            try
            {
                client.send(this, Protocol.SEND_FILE, fd, position, length);
            }
            catch (final NicstackException | RuntimeException e)
            {
                file.release();
                throw e;
            }
            fileInFlight = file;
            fileControlPosition = client.controlPosition();
            fileReason = Protocol.Reason.NONE;
            fileBytes = 0;
        }
        finally
        {
            if (held)
            {
                client.leave();
            }
        }
    }

    /** Whether a {@link #sendFile} waits for the daemon's answer. */
    public boolean isSendingFile()
    {
        return fileInFlight != null;
    }

    /** How the last {@link #sendFile} ended, a {@link Protocol.Reason} (NONE: every byte is in the stream). */
    public int fileReason()
    {
        return fileReason;
    }

    /** Bytes of the last {@link #sendFile} the daemon appended to the stream. */
    public long fileBytes()
    {
        return fileBytes;
    }

    /** SHUTDOWN: the daemon sends FIN after the bytes already committed (and a file being sent); no further claim. */
    public void shutdownOutput() throws NicstackException
    {
        final boolean held = client.enterBlocking();
        try
        {
            checkUsable();
            if (!outputShutdown)
            {
                outputShutdown = true;
                // Else after the file (onFileSent). Deferred while the daemon stalls: the FIN must not be lost.
                if (fileInFlight == null && !daemonClosed && !client.sendQuietly(Protocol.SHUTDOWN, id, 0))
                {
                    checkUsable(); // the session was lost meanwhile
                }
            }
        }
        finally
        {
            if (held)
            {
                client.leave();
            }
        }
    }

    /**
     * CLOSE: the daemon closes the connection and frees the slot; idempotent. The peer gets the committed bytes (and a
     * file being sent), then a FIN, only if every received byte was consumed: with bytes still unread in the RX pipe
     * when the daemon takes the CLOSE, or bytes arriving after it, the daemon resets the connection instead, and
     * committed bytes not yet sent are dropped (RFC 9293 §3.6.1, SHLD-3, from RFC 1122 4.2.2.13: the peer learns its
     * data was not read; Linux's tcp_close does the same). To end a stream cleanly, read the input to its end first,
     * or {@link #shutdownOutput()} (FIN after the committed bytes), read until the peer's FIN ({@link #peek()} -1), then
     * close. May be called from any thread, as {@link NicstackClient#close()}: while another thread is in a
     * blocking call of the client, that thread closes the connection at its next turn (a call of it waiting on this
     * connection then throws as on a closed connection), and this returns at once.
     */
    @Override
    public void close()
    {
        CLOSE_ASKED.compareAndSet(this, 0, ASKED_CLOSE); // for the thread that holds the client, if another does
        client.runClose(this::closeNow);
    }

    private void closeNow()
    {
        if (!locallyClosed)
        {
            locallyClosed = true;
            if (fileInFlight == null) // else CLOSE once the daemon answers (onFileSent): the file is part of the stream
            {
                client.onConnectionClosed(this);
            }
        }
    }

    /**
     * ABORT (RFC 9293): the daemon resets the connection at once, dropping what is queued (a file being sent too),
     * and frees the slot; idempotent, and nothing of the connection may be used afterwards. The descriptor of a file
     * being sent is held until the daemon has read the SEND_FILE (a later poll lets it go). After {@link #close()}
     * this does nothing (the CLOSE stands: the daemon sends what was committed, then the FIN), unless a file is still
     * being sent, when the CLOSE that waits for its answer becomes this ABORT. May be called from any thread, as
     * {@link #close()}.
     */
    public void abort()
    {
        closeAsked = ASKED_ABORT; // for the thread that holds the client, if another does
        client.runClose(this::abortNow);
    }

    private void abortNow()
    {
        // Closed with a file in flight: its CLOSE still waits, and becomes this ABORT.
        if (!locallyClosed || fileInFlight != null)
        {
            sendAbort();
            abandonFile(); // the file ends with the connection; no FILE_SENT is awaited for it any more
        }
    }

    /** On the thread that holds the client: the close or abort another thread asked for, if any. */
    void closeIfAsked()
    {
        final int asked = (int)CLOSE_ASKED.getAndSet(this, 0);
        if (asked != 0)
        {
            if (asked == ASKED_ABORT)
            {
                abortNow();
            }
            else
            {
                closeNow();
            }
        }
    }

    /**
     * The client closes: CLOSE, also with a file still in flight (or a CLOSE held back for it), though no poll will
     * read its FILE_SENT. The daemon takes a CLOSE behind a file as RFC 9293 does one behind a SEND: the FIN goes after
     * the whole file; a file it refuses (never read, as at the detach) or cannot finish resets the connection instead,
     * never a FIN after a short stream.
     */
    void closeForDetach()
    {
        if (fileInFlight != null)
        {
            abandonFile(); // holds the descriptor until the daemon has read the SEND_FILE
            locallyClosed = true;
            client.onConnectionClosed(this);
        }
        else
        {
            closeNow();
        }
    }

    private void sendAbort()
    {
        locallyClosed = true;
        client.onConnectionAborted(this);
    }

    /**
     * SET_OPTION: {@link Protocol#OPTION_NO_DELAY} (Nagle off when {@code value} is not 0),
     * {@link Protocol#OPTION_KEEP_ALIVE} (keep-alives on when not 0), {@link Protocol#OPTION_DSCP} (the DiffServ code
     * point, 0..63). The arguments are checked here; the daemon takes the option from the connection's next segment,
     * and answers only errors. Those come as events, so one is seen after a {@link NicstackClient#poll()}: the next
     * setOption on this connection throws it ("an earlier request ... failed"). A connection closed or reset meanwhile
     * throws as {@link #peek()} does.
     *
     * @throws IllegalArgumentException if {@code option} is none of these, or a DSCP is out of 0..63.
     * @throws NicstackException        if this connection was closed, the daemon is gone, an earlier setOption failed
     *                                  in the daemon, or the thread is interrupted while this waits for room in the
     *                                  control ring (its interrupt status kept set).
     */
    public void setOption(final int option, final long value) throws NicstackException
    {
        switch (option)
        {
            case Protocol.OPTION_NO_DELAY:
            case Protocol.OPTION_KEEP_ALIVE:
                break;
            case Protocol.OPTION_DSCP:
                if (value < 0 || value > 63)
                {
                    throw new IllegalArgumentException("DSCP " + value + " for " + describe() + ": not in 0..63");
                }
                break;
            default:
                throw new IllegalArgumentException("unknown option " + option + " for " + describe() +
                    " (Protocol.OPTION_NO_DELAY, OPTION_KEEP_ALIVE or OPTION_DSCP)");
        }
        final boolean held = client.enterBlocking();
        try
        {
            checkUsable();
            if (lastError != Protocol.Reason.NONE)
            {
                final int reason = lastError;
                lastError = Protocol.Reason.NONE;
                throw NicstackException.of(reason, "an earlier request on " + describe() + " failed");
            }
            client.send(this, Protocol.SET_OPTION, option, value, 0);
        }
        finally
        {
            if (held)
            {
                client.leave();
            }
        }
    }

    /** Whether the peer sent FIN (the RX pipe ends at its tail). */
    public boolean isPeerClosed()
    {
        return peerClosed;
    }

    /**
     * How many times the daemon's TCP reached R1 on this connection (RFC 9293 §3.8.3): it retransmitted that many times
     * (3 by default) without an answer. Advice: the peer or the path may be gone, but TCP keeps trying until R2 ends
     * the connection as TIMED_OUT. Counted once per episode; an answer ends one.
     */
    public int deliveryProblems()
    {
        return deliveryProblems;
    }

    /** Whether the app closed the connection or the daemon reported it closed or reset. */
    public boolean isClosed()
    {
        return locallyClosed || daemonClosed;
    }

    /**
     * Why the connection ended, a {@link Protocol.Reason}: NONE for an orderly close (or none yet), RESET, TIMED_OUT,
     * UNREACHABLE (timed out after ICMP said the host or network was unreachable)...
     */
    public int closeReason()
    {
        return closeReason;
    }

    /** The RX tail of the last NOTIFY for this connection (a hint; {@link #peek()} reads the tail itself). */
    public long notifiedTail()
    {
        return notifiedTail;
    }

    // ---- blocking adapters ------------------------------------------------------------------

    /**
     * Blocking reads over the RX pipe: {@code read} spins the client's poll with its idle strategy, returns -1 at
     * the end of the stream and throws {@link ConnectionResetException} on reset. A read that has to wait throws
     * {@link InterruptedIOException} when its thread is interrupted, with the interrupt status kept set (no byte is
     * taken). Closing it does nothing.
     */
    public InputStream inputStream()
    {
        if (inputStream == null)
        {
            inputStream = new PipeInputStream();
        }
        return inputStream;
    }

    /**
     * Blocking writes into the TX pipe: {@code write} spins the client's poll while the pipe is full; each chunk is
     * committed (the doorbell) as soon as it is copied, so {@code flush} has nothing to do; {@code close} shuts the
     * output down (FIN). A write that has to wait throws {@link InterruptedIOException} when its thread is interrupted,
     * with the interrupt status kept set; its {@code bytesTransferred} says how many bytes of the array were committed
     * (they are in the stream, the rest not).
     *
     * <p>A write that throws anything else part way (a stall of the daemon, {@link DaemonGoneException} with the
     * session kept; a reset; a close from another thread) has committed an unknown part of the array: those bytes are
     * in the stream, and the rest is not, so the stream's position is unknown. Do not write on: {@link #abort()} the
     * connection (or close it), as after a failed write(2) of a blocking socket.
     */
    public OutputStream outputStream()
    {
        if (outputStream == null)
        {
            outputStream = new PipeOutputStream();
        }
        return outputStream;
    }

    /**
     * Poll until {@link #peek()} is not 0 or {@code timeoutMillis} passed on the client's monotonic clock
     * ({@link ClientOptions#clock}); returns {@link #peek()}.
     *
     * @throws ConnectionResetException    as {@link #peek()}: the connection was reset.
     * @throws ConnectionTimedOutException as {@link #peek()}: it timed out.
     * @throws DaemonGoneException         as {@link NicstackClient#poll()}: the daemon is gone, or its heartbeat has not
     *                                     moved for {@link ClientOptions#daemonTimeoutMillis} (a stall: the session
     *                                     is kept, and a later call goes on once it moves), which may be before
     *                                     {@code timeoutMillis}.
     * @throws NicstackException           if this connection or its client was closed (also by another thread
     *                                     meanwhile), or the thread is interrupted while this waits (its interrupt
     *                                     status kept set).
     */
    public int awaitReadable(final long timeoutMillis) throws NicstackException
    {
        final boolean held = client.enterBlocking();
        try
        {
            final long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            final long start = client.clock().nanoTime();
            client.idleStrategy().reset();
            while (true)
            {
                final int readable = peek();
                if (readable != 0 || client.clock().nanoTime() - start >= timeoutNanos)
                {
                    return readable;
                }
                if (!client.idle(client.poll()))
                {
                    throw client.interrupted("awaiting bytes from connection " + describe());
                }
            }
        }
        finally
        {
            if (held)
            {
                client.leave();
            }
        }
    }

    @Override
    public String toString()
    {
        return "PipeConnection{" + describe() + (peerClosed ? ", peerClosed" : "") + (isClosed() ? ", closed" : "") +
            (closeReason != Protocol.Reason.NONE ? ", " + Protocol.Reason.describe(closeReason) : "") + "}";
    }

    // ---- events (from NicstackClient.poll) ---------------------------------------------------

    void onPeerClosed()
    {
        peerClosed = true;
    }

    void onDeliveryProblem()
    {
        deliveryProblems++;
    }

    void onClosed(final int reason)
    {
        daemonClosed = true;
        if (closeReason == Protocol.Reason.NONE)
        {
            closeReason = reason;
        }
    }

    void onError(final int reason)
    {
        if ((reason == Protocol.Reason.UNKNOWN_CONNECTION || reason == Protocol.Reason.BAD_MESSAGE) && fileInFlight != null)
        {
            // The daemon no longer knows this id, or not SEND_FILE: no FILE_SENT will come. The ERROR may answer an
            // earlier message, so the descriptor waits until the daemon has read the SEND_FILE too.
            onFileAnswered(reason, 0, false);
        }
        if (reason == Protocol.Reason.RESET || reason == Protocol.Reason.TIMED_OUT || reason == Protocol.Reason.UNREACHABLE ||
            reason == Protocol.Reason.REFUSED || reason == Protocol.Reason.UNKNOWN_CONNECTION)
        {
            onClosed(reason);
        }
        else
        {
            lastError = reason;
        }
    }

    void onDaemonGone()
    {
        daemonClosed = true;
        abandonFile();
    }

    /**
     * No FILE_SENT will be read for the file in flight (aborted, the client closing or the daemon gone): its descriptor
     * goes once the daemon has read the SEND_FILE (it took its duplicate then, or refused it) or can read no more.
     */
    void abandonFile()
    {
        if (fileInFlight != null)
        {
            client.releaseOnceRead(fileInFlight, fileControlPosition);
            fileInFlight = null;
            fileReason = Protocol.Reason.UNKNOWN_CONNECTION;
        }
    }

    void onFileSent(final int reason, final long bytes)
    {
        onFileAnswered(reason, bytes, true);
    }

    private void onFileAnswered(final int reason, final long bytes, final boolean fileSent)
    {
        final SendableFile file = fileInFlight;
        if (file == null)
        {
            return; // not asked for: ignore
        }
        fileInFlight = null;
        fileReason = reason;
        fileBytes = bytes;
        if (fileSent)
        {
            file.release(); // the daemon answered the SEND_FILE: it is done with the number
        }
        else
        {
            client.releaseOnceRead(file, fileControlPosition);
        }
        // A SHUTDOWN or CLOSE asked for while the file was in flight waited for this answer (sendFile refuses an
        // output already shut down, and abort() lets the file go, so no FILE_SENT is read after it).
        if (locallyClosed || outputShutdown)
        {
            if (reason != Protocol.Reason.NONE)
            {
                // The app ended its output expecting the file in the stream, and it is not (all) there: a FIN now
                // would pass a short stream off as a whole one. Reset instead.
                sendAbort();
            }
            else if (locallyClosed)
            {
                client.onConnectionClosed(this);
            }
            else if (!daemonClosed)
            {
                client.sendQuietly(Protocol.SHUTDOWN, id, 0);
            }
        }
    }

    void onNotify(final long rxTail)
    {
        notifiedTail = rxTail;
    }

    // ---- internals --------------------------------------------------------------------------

    private void checkUsable() throws NicstackException
    {
        if (client.isUnmapped() || locallyClosed)
        {
            throw new NicstackException(Protocol.Reason.UNKNOWN_CONNECTION, "connection " + describe() + " was closed");
        }
        if (client.isGone())
        {
            throw new DaemonGoneException("the daemon is gone; connection " + describe() + " is lost");
        }
    }

    /** The checks {@link #sendFile} and {@link #setOption} made before they sent their message (type), made again. */
    void checkSendable(final int type) throws NicstackException
    {
        if (type == Protocol.SEND_FILE)
        {
            checkWritable();
        }
        else
        {
            checkUsable();
        }
    }

    /** The checks of {@link #claim} and {@link #commit}: the app may write the TX pipe, and the daemon still reads it. */
    private void checkWritable() throws NicstackException
    {
        checkUsable();
        if (daemonClosed)
        {
            throw NicstackException.of(
                closeReason == Protocol.Reason.NONE ? Protocol.Reason.UNKNOWN_CONNECTION : closeReason,
                "connection " + describe() + " is closed");
        }
        if (outputShutdown)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, "output of " + describe() + " was shut down");
        }
    }

    /** Every access to the pipes' memory checks this first: after a close the slot is another's, or unmapped. */
    private void checkMapped()
    {
        if (client.isUnmapped())
        {
            throw new IllegalStateException("the client of connection " + describe() + " was closed: its pipes are unmapped");
        }
        if (locallyClosed)
        {
            throw new IllegalStateException("connection " + describe() + " was closed: its slot may be another's");
        }
    }

    private String describe()
    {
        return (remoteAddress >>> 24) + "." + ((remoteAddress >>> 16) & 0xFF) + "." + ((remoteAddress >>> 8) & 0xFF) +
            "." + (remoteAddress & 0xFF) + ":" + remotePort + " <-> :" + localPort + " #" + Long.toHexString(id);
    }

    /**
     * {@link NicstackClient#enterBlocking()} for the stream adapters, whose calls end on an interrupt with an
     * InterruptedIOException (here: while another thread's close of a connection or listener holds the client).
     */
    private boolean enterStream() throws IOException
    {
        try
        {
            return client.enterBlocking();
        }
        catch (final NicstackException ex)
        {
            if (Thread.currentThread().isInterrupted() && !client.isClosed())
            {
                final InterruptedIOException interrupted = new InterruptedIOException(ex.getMessage());
                interrupted.initCause(ex);
                throw interrupted;
            }
            throw ex;
        }
    }

    /** Each call holds the client (see {@link NicstackClient}): a close from another thread waits for its end. */
    private final class PipeInputStream extends InputStream
    {
        @Override
        public int read() throws IOException
        {
            final boolean held = enterStream();
            try
            {
                final int readable = awaitData();
                if (readable < 0)
                {
                    return -1;
                }
                final int value = rx.buffer().getByte(rx.peekIndex()) & 0xFF;
                rx.release(1);
                return value;
            }
            finally
            {
                if (held)
                {
                    client.leave();
                }
            }
        }

        @Override
        public int read(final byte[] bytes, final int offset, final int length) throws IOException
        {
            Objects.checkFromIndexSize(offset, length, bytes.length);
            if (length == 0)
            {
                return 0;
            }
            final boolean held = enterStream();
            try
            {
                final int readable = awaitData();
                if (readable < 0)
                {
                    return -1;
                }
                final int count = Math.min(readable, length);
                rx.buffer().getBytes(rx.peekIndex(), bytes, offset, count);
                rx.release(count);
                return count;
            }
            finally
            {
                if (held)
                {
                    client.leave();
                }
            }
        }

        @Override
        public int available() throws IOException
        {
            final boolean held = enterStream();
            try
            {
                checkUsable();
                return rx.readable();
            }
            finally
            {
                if (held)
                {
                    client.leave();
                }
            }
        }

        private int awaitData() throws IOException
        {
            client.idleStrategy().reset();
            while (true)
            {
                final int readable = peek();
                if (readable != 0)
                {
                    return readable;
                }
                if (!client.idle(client.poll()))
                {
                    throw new InterruptedIOException("interrupted while reading from connection " + describe() +
                        " (the thread's interrupt status is kept)");
                }
            }
        }
    }

    /** Each call holds the client (see {@link NicstackClient}): a close from another thread waits for its end. */
    private final class PipeOutputStream extends OutputStream
    {
        @Override
        public void write(final int b) throws IOException
        {
            final boolean held = enterStream();
            try
            {
                awaitSpace(1);
                tx.buffer().putByte(tx.claimIndex(), (byte)b);
                tx.commit(1);
            }
            finally
            {
                if (held)
                {
                    client.leave();
                }
            }
        }

        @Override
        public void write(final byte[] bytes, final int offset, final int length) throws IOException
        {
            Objects.checkFromIndexSize(offset, length, bytes.length);
            final boolean held = enterStream();
            try
            {
                int position = offset;
                int remaining = length;
                while (remaining > 0)
                {
                    final int count;
                    try
                    {
                        count = awaitSpace(remaining);
                    }
                    catch (final InterruptedIOException ex)
                    {
                        ex.bytesTransferred = position - offset; // committed: they are in the stream
                        throw ex;
                    }
                    tx.buffer().putBytes(tx.claimIndex(), bytes, position, count);
                    tx.commit(count);
                    position += count;
                    remaining -= count;
                }
            }
            finally
            {
                if (held)
                {
                    client.leave();
                }
            }
        }

        @Override
        public void close() throws IOException
        {
            if (!locallyClosed && !client.isClosed() && !outputShutdown && !daemonClosed)
            {
                shutdownOutput();
            }
        }

        private int awaitSpace(final int max) throws IOException
        {
            client.idleStrategy().reset();
            while (true)
            {
                final int count = claim(max);
                if (count > 0)
                {
                    return count;
                }
                if (!client.idle(client.poll()))
                {
                    throw new InterruptedIOException("interrupted while writing to connection " + describe() +
                        " (the thread's interrupt status is kept)");
                }
            }
        }
    }
}
