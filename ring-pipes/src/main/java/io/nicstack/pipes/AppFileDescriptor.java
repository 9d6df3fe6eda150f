package io.nicstack.pipes;

import org.agrona.BitUtil;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import static org.agrona.BitUtil.CACHE_LINE_LENGTH;

/**
 * Layout of one attached application's memory, and of its app file {@code <shm>/apps/<name>-<pid>.app}.
 *
 * <p><b>The memory</b> is a memfd the app creates ({@code MFD_ALLOW_SEALING}), sizes to {@link #fileLength} and seals
 * against shrinking and growing ({@code F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL}) before anyone maps it: no process
 * can truncate it under the daemon's mapping, so no access of the daemon's can fault (a truncated mapped file raises
 * SIGBUS, which the JVM turns into an InternalError at some later, unrelated point of the thread).
 *
 * <p><b>The app file</b> (mode 0600) is the rendezvous: {@link #HEADER_LENGTH} bytes, a copy of the memory's header
 * at ATTACHING plus {@link #MEMORY_FD_OFFSET} (the memfd's number in the app's process) and {@link #MEMORY_INODE_OFFSET}
 * (its inode). The daemon finds it by scanning the directory, reads and writes it with pread/pwrite only (never
 * mapped), takes the memfd from the app's process with {@code pidfd_getfd(2)}, checks it is that inode and sealed,
 * and maps it.
 *
 * <pre>
 *  +-------------------------------------------------------------+ 0
 *  | header (HEADER_LENGTH): magic, version, state, reason,       |
 *  | sizes, pids, heartbeats (each heartbeat on its own lines),   |
 *  | app name                                                     |
 *  +-------------------------------------------------------------+ controlRingOffset()
 *  | control ring: Agrona OneToOneRingBuffer, app -> daemon        |
 *  +-------------------------------------------------------------+ eventRingOffset()
 *  | event ring: Agrona OneToOneRingBuffer, daemon -> app          |
 *  +-------------------------------------------------------------+ notificationRingOffset()
 *  | notification ring: OneToOneRingBuffer, daemon -> app          |
 *  |   (connection id, new RX tail), reactively paced              |
 *  +-------------------------------------------------------------+ doorbellsOffset()
 *  | doorbells: DOORBELLS_LENGTH bytes, one bit per slot (slot s is |
 *  |   bit s & 63 of the long at 8 * (s >>> 6)); app sets, daemon   |
 *  |   takes                                                       |
 *  +-------------------------------------------------------------+ slotOffset(0)
 *  | slot 0: SLOT_HEADER_LENGTH bytes, then RX pipe, then TX pipe  |
 *  | slot 1 ...                                                    |
 *  +-------------------------------------------------------------+ fileLength()
 * </pre>
 *
 * State: the app writes ATTACHING after filling the header (in the memory, then in the app file); the daemon answers
 * ATTACHED in the memory (and the app file), or REJECTED with a reason in the app file (it may not have the memory);
 * the app writes DETACHED in the memory when it closes; the daemon writes DAEMON_GONE there on its way out. The app
 * checks {@link #VERSION} of the file it made against what the daemon wrote in {@link #DAEMON_VERSION_OFFSET}; the
 * daemon refuses a file of another version. The fields up to {@link #DAEMON_VERSION_OFFSET} keep their places in every
 * version, so a daemon can answer an app of another version with REJECTED and VERSION_MISMATCH.
 *
 * <p><b>Doorbells</b> (a readiness hint, so that the daemon need not read every connection's positions every round):
 * after each store of a slot's TX tail or RX head the app sets the slot's bit with a compare-and-set (other slots share
 * the word, and the daemon clears it concurrently); the CAS is a volatile write, so the bit is never visible before
 * the position it announces. Each round the daemon swaps every non-zero word to 0 ({@code getAndSet}) and only then
 * reads the positions of the slots whose bits it found: a position stored before the bit that the swap saw is visible
 * to those reads, and a bit set after the swap stays set for the next round, so no doorbell is lost (reading the
 * positions first and clearing after could clear a bit whose position it read too early). The daemon trusts nothing
 * in it: a bit of a slot it does not serve is ignored (counted), a missing bit is found by a slower full scan
 * (counted), and all bits set cost what reading every slot costs.
 */
public final class AppFileDescriptor
{
    public static final long MAGIC = 0x3150_5041_4349_4E4EL; // "NNICAPP1" little endian
    /**
     * 4: the doorbell bitmap ({@link #doorbellsOffset}) before the slots. 3: the memory is a sealed memfd named by the app file (version 2 mapped the app file itself, which its app could
     * truncate under the daemon). 2: SEND_FILE / FILE_SENT, ABORT, and CLOSED's ICMP error.
     */
    public static final int VERSION = 4;

    public static final int STATE_ATTACHING = 1;
    public static final int STATE_ATTACHED = 2;
    public static final int STATE_REJECTED = 3;
    public static final int STATE_DETACHED = 4;
    public static final int STATE_DAEMON_GONE = 5;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 8;
    public static final int STATE_OFFSET = 12;
    public static final int REASON_OFFSET = 16;
    public static final int MAX_CONNECTIONS_OFFSET = 20;
    public static final int PIPE_CAPACITY_OFFSET = 24;
    public static final int RING_CAPACITY_OFFSET = 28;
    public static final int APP_PID_OFFSET = 32;
    public static final int DAEMON_PID_OFFSET = 40;
    public static final int DAEMON_VERSION_OFFSET = 48;
    /** The memfd's descriptor number in the app's process (int). */
    public static final int MEMORY_FD_OFFSET = 52;
    /** The memfd's inode number (long): the daemon checks the descriptor it takes is this memory. */
    public static final int MEMORY_INODE_OFFSET = 56;
    public static final int APP_HEARTBEAT_OFFSET = 2 * CACHE_LINE_LENGTH;
    public static final int DAEMON_HEARTBEAT_OFFSET = 4 * CACHE_LINE_LENGTH;
    public static final int NAME_OFFSET = 6 * CACHE_LINE_LENGTH;
    public static final int MAX_NAME_LENGTH = 64;
    public static final int HEADER_LENGTH = 4096;

    /** Per-slot header: state and ids written by the daemon, read by the app. */
    public static final int SLOT_STATE_OFFSET = 0;
    public static final int SLOT_CONNECTION_ID_OFFSET = 8;
    public static final int SLOT_REMOTE_ADDRESS_OFFSET = 16;
    public static final int SLOT_REMOTE_PORT_OFFSET = 20;
    public static final int SLOT_LOCAL_PORT_OFFSET = 24;
    public static final int SLOT_HEADER_LENGTH = 4 * CACHE_LINE_LENGTH;
    /** The doorbell bitmap: one bit for each of the most slots a layout may have, whatever it has. */
    public static final int DOORBELLS_LENGTH = AppFile.MAX_CONNECTIONS / Byte.SIZE;
    public static final int SLOT_FREE = 0;
    public static final int SLOT_IN_USE = 1;

    private AppFileDescriptor()
    {
    }

    /** Bytes of one Agrona ring with {@code capacity} (a power of two) bytes of messages. */
    public static int ringLength(final int capacity)
    {
        return capacity + RingBufferDescriptor.TRAILER_LENGTH;
    }

    public static int controlRingOffset()
    {
        return HEADER_LENGTH;
    }

    public static int eventRingOffset(final int ringCapacity)
    {
        return controlRingOffset() + ringLength(ringCapacity);
    }

    public static int notificationRingOffset(final int ringCapacity)
    {
        return eventRingOffset(ringCapacity) + ringLength(ringCapacity);
    }

    /** The doorbell bitmap starts page aligned after the three rings. */
    public static int doorbellsOffset(final int ringCapacity)
    {
        return BitUtil.align(notificationRingOffset(ringCapacity) + ringLength(ringCapacity), 4096);
    }

    /** Offset of the long that holds {@code slot}'s doorbell, {@link #doorbellBit} in it. */
    public static int doorbellOffset(final int ringCapacity, final int slot)
    {
        return doorbellsOffset(ringCapacity) + (slot >>> 6) * Long.BYTES;
    }

    /** {@code slot}'s bit in the long at {@link #doorbellOffset}. */
    public static long doorbellBit(final int slot)
    {
        return 1L << (slot & 63);
    }

    /** Slots start page aligned after the doorbells. */
    public static long slotsOffset(final int ringCapacity)
    {
        return doorbellsOffset(ringCapacity) + DOORBELLS_LENGTH;
    }

    public static long slotLength(final int pipeCapacity)
    {
        return SLOT_HEADER_LENGTH + 2L * PipeDescriptor.length(pipeCapacity);
    }

    public static long slotOffset(final int ringCapacity, final int pipeCapacity, final int slot)
    {
        return slotsOffset(ringCapacity) + slot * slotLength(pipeCapacity);
    }

    /** Offset of a slot's RX pipe (daemon produces payload received from the network). */
    public static long rxPipeOffset(final int ringCapacity, final int pipeCapacity, final int slot)
    {
        return slotOffset(ringCapacity, pipeCapacity, slot) + SLOT_HEADER_LENGTH;
    }

    /** Offset of a slot's TX pipe (the app produces payload to send). */
    public static long txPipeOffset(final int ringCapacity, final int pipeCapacity, final int slot)
    {
        return rxPipeOffset(ringCapacity, pipeCapacity, slot) + PipeDescriptor.length(pipeCapacity);
    }

    public static long fileLength(final int ringCapacity, final int pipeCapacity, final int maxConnections)
    {
        return slotOffset(ringCapacity, pipeCapacity, maxConnections);
    }
}
