package io.nicstack.pipes;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

import static io.nicstack.pipes.PipeDescriptor.DATA_OFFSET;
import static io.nicstack.pipes.PipeDescriptor.HEAD_OFFSET;
import static io.nicstack.pipes.PipeDescriptor.TAIL_OFFSET;

/**
 * Flyweight over one pipe region laid out as in {@link PipeDescriptor}: a single-producer single-consumer byte
 * stream with 64-bit positions, shared between two processes.
 *
 * <ul>
 *     <li>{@code tail} — written by the <b>producer</b> only ({@code putLongRelease}), read by the consumer with
 *     {@code getLongVolatile}: everything before it is published data.</li>
 *     <li>{@code head} — written by the <b>consumer</b> only ({@code putLongRelease}), read by the producer with
 *     {@code getLongVolatile}: everything before it may be overwritten. The consumer keeps its own head in a field,
 *     the source of truth, and reads the shared word only at {@link #wrap}: a producer that writes it cannot make
 *     the consumer read bytes twice or skip them.</li>
 *     <li>data — written by the producer in {@code [tail, head + capacity)}, read by the consumer in
 *     {@code [head, tail)}.</li>
 * </ul>
 *
 * RX pipe: the daemon is the producer (and may place out-of-order bytes with {@link #writeAt} before it
 * {@link #publishTail publishes} them), the app the consumer. TX pipe: the app is the producer, the daemon the
 * consumer, which may read any byte of {@code [head, tail)} again ({@link #getBytes}) until it is acknowledged.
 *
 * <p>The other side lives in another process and is not trusted: {@link #peek()} and {@link #claim(int)} clamp
 * to the data region whatever the shared positions say, so no span they return lies outside the pipe. A consumer that
 * reads a tail below one it read before (positions only grow), below its head, or more than {@code capacity} past its
 * head finds the pipe corrupt ({@link #isCorrupt}): it reads nothing more from it, so a producer that takes bytes back
 * cannot pass off a short stream as a whole one, nor one that runs ahead stale ring contents as new bytes. A flyweight
 * kept over a pipe that is {@link #reset} through another must be wrapped again. One flyweight is used by one thread;
 * nothing allocates after {@link #wrap}. With a {@link #doorbell} every position it publishes rings it.
 */
public final class Pipe
{
    private AtomicBuffer buffer;
    private int capacity;
    private int mask;
    /** Producer: the consumer's head as last read (a lower bound: it only grows). */
    private long headCache;
    /**
     * Consumer: its own position, the source of truth; stored to the shared head for the producer, never read back
     * from it (the producer could write it) but at {@link #wrap}.
     */
    private long head;
    /** Consumer: the highest producer's tail read (a lower bound: it only grows). */
    private long tailCache;
    /**
     * Consumer: the producer broke the pipe (a tail read went back, below the head or past head + capacity); sticky
     * until a wrap or reset.
     */
    private boolean corrupt;
    private int offset;
    /** Where this pipe's doorbell is in {@link #buffer} (see {@link #doorbell}), -1 when it has none. */
    private int doorbellOffset = -1;
    private long doorbellBit;

    /**
     * Wrap the pipe that starts at {@code offset} of {@code buffer} and has {@code capacity} data bytes.
     *
     * @param buffer   the mapped region (the whole app file or a slice of it).
     * @param offset   where the pipe's tail field is, 8-byte aligned.
     * @param capacity data bytes, a power of two.
     * @return this.
     */
    public Pipe wrap(final AtomicBuffer buffer, final int offset, final int capacity)
    {
        if (!BitUtil.isPowerOfTwo(capacity))
        {
            throw new IllegalArgumentException("pipe capacity must be a power of two: " + capacity);
        }
        if (offset < 0 || (offset & 7) != 0 || (long)offset + PipeDescriptor.length(capacity) > buffer.capacity())
        {
            throw new IllegalArgumentException(
                "pipe at " + offset + " of " + capacity + " bytes does not fit a buffer of " + buffer.capacity());
        }
        this.buffer = buffer;
        this.offset = offset;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.head = buffer.getLongVolatile(offset + HEAD_OFFSET);
        this.headCache = head;
        this.tailCache = buffer.getLongVolatile(offset + TAIL_OFFSET);
        this.corrupt = false;
        this.doorbellOffset = -1;
        return this;
    }

    /**
     * Ring the doorbell at {@code wordOffset} of the buffer (bit {@code bit} of that long) after each position this
     * flyweight publishes: the app's end of a pipe, so that the daemon reads the pipe's positions only when told to
     * ({@link AppFileDescriptor#doorbellOffset}). Until the next {@link #wrap}.
     *
     * @return this.
     */
    public Pipe doorbell(final int wordOffset, final long bit)
    {
        if (wordOffset < 0 || (wordOffset & 7) != 0 || wordOffset > buffer.capacity() - Long.BYTES || bit == 0)
        {
            throw new IllegalArgumentException(
                "doorbell at " + wordOffset + " (bits " + Long.toHexString(bit) + ") in a buffer of " + buffer.capacity());
        }
        this.doorbellOffset = wordOffset;
        this.doorbellBit = bit;
        return this;
    }

    /**
     * Store {@code position} at {@code field} (a release store), then ring the doorbell, if any. The compare-and-set
     * that sets the bit is a volatile write, so the bit never becomes visible before the position: the daemon, which
     * swaps the word to 0 before it reads the positions, either sees this position or leaves the bit set for its next
     * round. A CAS even when the bit is set already: skipping it would take a load of the word, which without a
     * StoreLoad fence (as dear as the CAS on a line this thread owns) may be satisfied before the position store is
     * visible and see a bit the daemon is about to clear with the old position: a lost doorbell.
     */
    private void publish(final int field, final long position)
    {
        buffer.putLongRelease(offset + field, position);
        final int at = doorbellOffset;
        if (at >= 0)
        {
            final long bit = doorbellBit;
            long word;
            do
            {
                word = buffer.getLongVolatile(at);
            }
            while (!buffer.compareAndSetLong(at, word, word | bit));
        }
    }

    /** Wrap a buffer that holds exactly one pipe ({@link PipeDescriptor#length} of its capacity). */
    public Pipe wrap(final AtomicBuffer pipeRegion)
    {
        return wrap(pipeRegion, 0, pipeRegion.capacity() - DATA_OFFSET);
    }

    /** The buffer that {@link #claimIndex()}, {@link #peekIndex()} and {@link #index(long)} index into. */
    public AtomicBuffer buffer()
    {
        return buffer;
    }

    public int capacity()
    {
        return capacity;
    }

    /** Index in {@link #buffer()} of the byte at stream {@code position}. */
    public int index(final long position)
    {
        return offset + DATA_OFFSET + ((int)position & mask);
    }

    // ---- producer ---------------------------------------------------------------------------

    /** Producer: the published position (its own field; a plain read is enough for the only writer). */
    public long tail()
    {
        return buffer.getLong(offset + TAIL_OFFSET);
    }

    /** Producer: the consumer's head (an acquire load), e.g. for {@link NotificationPacer}. */
    public long headVolatile()
    {
        return buffer.getLongVolatile(offset + HEAD_OFFSET);
    }

    /** Producer: bytes that may be written now (reads the consumer's head). */
    public int free()
    {
        headCache = buffer.getLongVolatile(offset + HEAD_OFFSET);
        return freeSince(headCache);
    }

    /**
     * Producer: free bytes as of the head last read. The head only grows, so this is a lower bound of what is
     * free: a claim or commit it allows is safe without touching the consumer's cache line, which the consumer
     * writes on every release (reading it each time was a cross-core miss per message).
     */
    private int freeSince(final long head)
    {
        final long used = tail() - head;
        return used <= 0 ? capacity : (used >= capacity ? 0 : capacity - (int)used);
    }

    /**
     * Producer: contiguous bytes writable at {@link #claimIndex()} now, at most {@code max}, never past the end of
     * the data region (a further claim after {@link #commit} continues at its start).
     */
    public int claim(final int max)
    {
        final long tail = tail();
        final int wanted = Math.min(capacity - ((int)tail & mask), Math.max(max, 0));
        final int free = freeSince(headCache);
        return Math.min(free >= wanted ? free : free(), wanted);
    }

    /** Producer: index in {@link #buffer()} where a claimed span starts. */
    public int claimIndex()
    {
        return index(tail());
    }

    /** Producer: publish {@code length} bytes written at {@link #claimIndex()} (the doorbell, a release store). */
    public void commit(final int length)
    {
        final long tail = tail();
        if (length < 0 || length > freeSince(headCache) && length > free())
        {
            throw new IllegalArgumentException("commit of " + length + " bytes with " + free() + " free");
        }
        publish(TAIL_OFFSET, tail + length);
    }

    /** Producer: copy as much of {@code src[index, index + length)} as fits, publish it, return the bytes taken. */
    public int write(final byte[] src, final int index, final int length)
    {
        final long tail = tail();
        final int count = Math.min(length, free());
        putAt(tail, src, index, count);
        publish(TAIL_OFFSET, tail + count);
        return count;
    }

    /** Producer: copy as much of {@code src[index, index + length)} as fits, publish it, return the bytes taken. */
    public int write(final DirectBuffer src, final int index, final int length)
    {
        final long tail = tail();
        final int count = Math.min(length, free());
        putAt(tail, src, index, count);
        publish(TAIL_OFFSET, tail + count);
        return count;
    }

    /**
     * Producer (daemon, RX): place {@code src[index, index + length)} at stream {@code position} without publishing
     * it — TCP payload that arrived out of order lands at its offset and becomes visible with {@link #publishTail}
     * once the gap before it is filled.
     *
     * @throws IllegalArgumentException unless {@code [position, position + length)} lies within
     *                                  {@code [head, head + capacity)}, i.e. in the free space.
     */
    public void writeAt(final long position, final DirectBuffer src, final int index, final int length)
    {
        final long head = buffer.getLongVolatile(offset + HEAD_OFFSET);
        if (length < 0 || position < head || position + length > head + capacity)
        {
            throw new IllegalArgumentException(
                "writeAt " + position + "+" + length + " outside [" + head + ", " + (head + capacity) + ")");
        }
        putAt(position, src, index, length);
    }

    /** Producer (daemon, RX): publish every byte before {@code position} (a release store of the tail). */
    public void publishTail(final long position)
    {
        publish(TAIL_OFFSET, position);
    }

    /** Producer side, while no consumer uses the pipe (a fresh or reused slot): both positions back to zero. */
    public void reset()
    {
        buffer.putLongRelease(offset + HEAD_OFFSET, 0);
        buffer.putLongRelease(offset + TAIL_OFFSET, 0);
        head = 0;
        headCache = 0;
        tailCache = 0;
        corrupt = false;
    }

    // ---- consumer ---------------------------------------------------------------------------

    /** Consumer: the consumed position, as this consumer keeps it (no shared-memory read). */
    public long head()
    {
        return head;
    }

    /**
     * Consumer: the producer's published tail (an acquire load); one below a tail read before or the head, or more
     * than {@code capacity} past the head, makes the pipe corrupt and is not returned: the last good tail is.
     */
    public long tailVolatile()
    {
        final long tail = buffer.getLongVolatile(offset + TAIL_OFFSET);
        // Published bytes are never taken back, and the producer writes only below head + capacity: past that the
        // ring holds older bytes, not the ones at these positions. Either way the producer's side went bad.
        if (tail < tailCache || tail < head || tail - head > capacity)
        {
            corrupt = true;
        }
        else
        {
            tailCache = tail;
        }
        return tailCache;
    }

    /**
     * Consumer: bytes published and not yet consumed, at most {@code capacity}; 0 once the pipe is {@link #isCorrupt
     * corrupt}, rather than a stream that ends short or one padded with bytes the producer never wrote there.
     */
    public int readable()
    {
        // In [0, capacity] unless the pipe is corrupt: a tail off that range is what makes it so.
        final long available = tailVolatile() - head;
        return corrupt ? 0 : (int)available;
    }

    /**
     * Consumer: whether the producer broke the pipe: a tail read below one read before it, below the head or more than
     * {@code capacity} past it, or, after the last read, still below {@code publishedTail}, a tail the producer said
     * elsewhere (a notification read before that read) it had published. Reads no shared memory.
     */
    public boolean isCorrupt(final long publishedTail)
    {
        return corrupt || tailCache < publishedTail;
    }

    /** Consumer: contiguous readable bytes at {@link #peekIndex()}, never past the end of the data region. */
    public int peek()
    {
        return Math.min(readable(), capacity - ((int)head & mask));
    }

    /** Consumer: index in {@link #buffer()} where the peeked span starts. */
    public int peekIndex()
    {
        return index(head);
    }

    /** Consumer: consume {@code length} bytes (a release store of the head: the producer may reuse them). */
    public void release(final int length)
    {
        // The tail only grows: bytes below the tail last read are readable without reading it again.
        if (length < 0 || length > tailCache - head && length > readable())
        {
            throw new IllegalArgumentException("release of " + length + " bytes with " + readable() + " readable");
        }
        head += length;
        publish(HEAD_OFFSET, head);
    }

    /** Consumer (daemon, TX): consume everything before {@code position} (acknowledged bytes). */
    public void releaseTo(final long position)
    {
        if (position < head || position > tailVolatile())
        {
            throw new IllegalArgumentException("releaseTo " + position + " outside [" + head + ", tail]");
        }
        head = position;
        publish(HEAD_OFFSET, position);
    }

    /** Consumer: copy up to {@code length} readable bytes into {@code dst}, consume them, return the count. */
    public int read(final byte[] dst, final int index, final int length)
    {
        final int count = Math.min(length, readable());
        getAt(head, dst, index, count);
        head += count;
        publish(HEAD_OFFSET, head);
        return count;
    }

    /**
     * Consumer (daemon, TX): copy {@code length} bytes from stream {@code position} without consuming them, for a
     * first transmission or a retransmission. The caller keeps {@code [position, position + length)} within
     * {@code [head, tail)}, which it read itself.
     */
    public void getBytes(final long position, final MutableDirectBuffer dst, final int dstIndex, final int length)
    {
        if (length < 0 || length > capacity)
        {
            throw new IllegalArgumentException("getBytes of " + length + " bytes from a pipe of " + capacity);
        }
        getAt(position, dst, dstIndex, length);
    }

    // Copies at a stream position, split in two where the ring wraps; bounds are the callers'.

    private int firstPart(final long position, final int length)
    {
        return Math.min(length, capacity - ((int)position & mask));
    }

    private void putAt(final long position, final DirectBuffer src, final int index, final int length)
    {
        final int first = firstPart(position, length);
        buffer.putBytes(index(position), src, index, first);
        buffer.putBytes(offset + DATA_OFFSET, src, index + first, length - first);
    }

    private void putAt(final long position, final byte[] src, final int index, final int length)
    {
        final int first = firstPart(position, length);
        buffer.putBytes(index(position), src, index, first);
        buffer.putBytes(offset + DATA_OFFSET, src, index + first, length - first);
    }

    private void getAt(final long position, final byte[] dst, final int index, final int length)
    {
        final int first = firstPart(position, length);
        buffer.getBytes(index(position), dst, index, first);
        buffer.getBytes(offset + DATA_OFFSET, dst, index + first, length - first);
    }

    private void getAt(final long position, final MutableDirectBuffer dst, final int index, final int length)
    {
        final int first = firstPart(position, length);
        buffer.getBytes(index(position), dst, index, first);
        buffer.getBytes(offset + DATA_OFFSET, dst, index + first, length - first);
    }

    @Override
    public String toString()
    {
        return buffer == null ? "Pipe{unwrapped}" :
            "Pipe{capacity=" + capacity + ", head=" + buffer.getLongVolatile(offset + HEAD_OFFSET) +
            ", tail=" + buffer.getLongVolatile(offset + TAIL_OFFSET) + "}";
    }
}
