package io.nicstack.nic;

import org.agrona.MutableDirectBuffer;

/**
 * A device that moves whole Ethernet frames in bursts, DPDK style.
 *
 * <p>Receive: {@link #receive(FrameHandler, int)} hands up to {@code limit} frames to the handler,
 * each in a device-owned buffer that is valid only for the duration of the callback.
 *
 * <p>Transmit: {@link #claim()} returns a device-owned buffer for the next frame (the frame starts
 * at index 0 and may be up to {@link #maxFrameLength()} bytes); {@link #commit(int)} queues it with
 * its final length; {@link #flush()} hands all queued frames to the medium. When {@link #BURST}
 * frames are queued, {@link #claim()} flushes first. Buffers are reused: nothing is allocated per
 * frame.
 *
 * <p>A device is driven by one thread (the event loop that owns it); it is not thread safe.
 */
public interface NetDevice extends AutoCloseable
{
    /** Largest number of frames moved in one burst. */
    int BURST = 32;

    /** Ethernet header length without FCS or VLAN tag. */
    int ETHERNET_HEADER_LENGTH = 14;

    /** Name of the device, e.g. {@code tap:nst0} or {@code mem:a}. */
    String name();

    /** IP MTU of the link (the largest Ethernet payload). */
    int mtu();

    /** Largest frame this device accepts or delivers: {@code mtu() + 14}. */
    default int maxFrameLength()
    {
        return mtu() + ETHERNET_HEADER_LENGTH;
    }

    /**
     * Receive up to {@code limit} frames (at most {@link #BURST}), calling the handler once per frame.
     *
     * @return the number of frames delivered.
     */
    int receive(FrameHandler handler, int limit);

    /** Buffer for the next frame to transmit, valid until {@link #commit(int)} or {@link #abort()}. */
    MutableDirectBuffer claim();

    /** Queue the claimed frame with {@code length} bytes starting at index 0. */
    void commit(int length);

    /**
     * Transmit flag for {@link #commit(int, int)}: the frame is IPv4 (no options needed) carrying one whole,
     * unfragmented TCP or UDP datagram whose checksum field holds only the folded pseudo-header sum (not
     * complemented); the device computes the checksum over the transport header and payload on the way out,
     * as a NIC does ({@code NEEDS_CSUM} with start and offset from the headers).
     */
    int TX_L4_CHECKSUM_PARTIAL = 1;

    /**
     * True when this device completes TCP/UDP checksums for frames committed with
     * {@link #TX_L4_CHECKSUM_PARTIAL}. A device that says false must never be given that flag.
     */
    default boolean transmitChecksumOffload()
    {
        return false;
    }

    /**
     * Queue the claimed frame with transmit flags ({@link #TX_L4_CHECKSUM_PARTIAL} only if
     * {@link #transmitChecksumOffload()}).
     */
    default void commit(final int length, final int flags)
    {
        if (flags != 0)
        {
            throw new IllegalArgumentException(name() + " does not offload checksums (flags " + flags + ")");
        }
        commit(length);
    }

    /** Give back the claimed buffer without sending anything. */
    void abort();

    /**
     * Send every committed frame.
     *
     * @return the number of frames handed to the medium (frames the medium refused are counted as
     *         drops by the device, never retried forever).
     */
    int flush();

    /**
     * Idle hook for the event loop: wait at most {@code timeoutNanos} for a frame to become readable.
     *
     * @return true when the device has (or may have) frames to read.
     */
    boolean awaitReadable(long timeoutNanos);

    /** Frames the device itself had to drop (full queue, medium refused, oversize). */
    long droppedFrames();

    /**
     * Segmentation-offload superframes taken from the medium (a tap's TSO), each delivered as the frames cut from it;
     * 0 for a device that has none.
     */
    default long receiveSuperframes()
    {
        return 0;
    }

    /** Frames delivered from {@link #receiveSuperframes()}. */
    default long receiveSuperframeSegments()
    {
        return 0;
    }

    /** Segmentation-offload superframes handed to the medium, each joined from committed frames; 0 for none. */
    default long transmitSuperframes()
    {
        return 0;
    }

    /** Committed frames that went out inside {@link #transmitSuperframes()}. */
    default long transmitSuperframeSegments()
    {
        return 0;
    }

    /** Superframes the medium refused, whose frames then went one by one (no more superframes follow); 0 for none. */
    default long transmitSuperframesRefused()
    {
        return 0;
    }

    @Override
    void close();
}
