package io.nicstack.daemon;

import static org.agrona.BitUtil.CACHE_LINE_LENGTH;

/**
 * Layout of the counters file {@code <shm>/counters.dat}, shared by the daemon (the only writer) and
 * {@code nicstack stats} (readers, any number, in other processes), in the manner of Aeron's CnC file.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                     Magic 'NICSTACK' (8 bytes)                |
 *  +---------------------------------------------------------------+
 *  |                        Layout version                         |
 *  +---------------------------------------------------------------+
 *  |                      Metadata length (bytes)                  |
 *  +---------------------------------------------------------------+
 *  |                       Values length (bytes)                   |
 *  +---------------------------------------------------------------+
 *  |                     Daemon pid (8 bytes)                      |
 *  +---------------------------------------------------------------+
 *  |                Start time, epoch ms (8 bytes)                 |
 *  +---------------------------------------------------------------+
 *  |                 ... padding to 2 cache lines ...              |
 *  +---------------------------------------------------------------+
 *  |             Counters metadata (Agrona CountersManager)        |
 *  +---------------------------------------------------------------+
 *  |              Counters values (Agrona CountersManager)         |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * The version is written last with release semantics, so a reader that sees the current version
 * sees a complete header.
 *
 * <p>Each counter is an Agrona record naming itself (label and type id): the stack's ({@code StackCounters.TYPE_ID}
 * 1001), the pipe server's ({@code PipeCounters.TYPE_ID} 1002) and the device decorators' ({@code --faults},
 * {@code --pcap}: {@code DaemonCommand.DeviceCounters.TYPE_ID} 1003). {@code stats} shows the types it knows and skips
 * others, so counters added within these areas leave the layout, and its version, as they are.
 */
public final class CountersFileDescriptor
{
    public static final String FILE_NAME = "counters.dat";
    public static final long MAGIC = 0x4B43_4154_5343_494EL; // "NICSTACK" little endian
    public static final int VERSION = 1;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 8;
    public static final int METADATA_LENGTH_OFFSET = 12;
    public static final int VALUES_LENGTH_OFFSET = 16;
    public static final int PID_OFFSET = 24;
    /**
     * The daemon process's start, in clock ticks since boot (/proc/self/stat field 22): with the pid, it names that
     * process, as its {@link DaemonLock} file does.
     */
    public static final int START_TIME_OFFSET = 32;
    public static final int HEADER_LENGTH = 2 * CACHE_LINE_LENGTH;

    private CountersFileDescriptor()
    {
    }
}
