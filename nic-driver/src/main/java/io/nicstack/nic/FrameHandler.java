package io.nicstack.nic;

import org.agrona.DirectBuffer;

/** Receives one frame of a burst; the buffer belongs to the device and is valid only during the call. */
@FunctionalInterface
public interface FrameHandler
{
    /**
     * Receive flag: the device vouches for the frame's TCP or UDP checksum, so the stack need not verify it.
     * Set when hardware verified it (a NIC's "L4 checksum good", virtio's {@code DATA_VALID}), or when the frame
     * never crossed a wire: a tap with virtio-net headers hands over the local kernel's own segments with
     * {@code NEEDS_CSUM} and only the pseudo-header sum in the checksum field. Never set on a frame whose
     * bytes a device changed after that verification (the fault injector clears it when it corrupts).
     */
    int RX_L4_CHECKSUM_TRUSTED = 1;

    void onFrame(DirectBuffer buffer, int offset, int length);

    /**
     * One frame with the device's receive flags ({@link #RX_L4_CHECKSUM_TRUSTED}). Devices call this one; a
     * handler that cannot use the flags need only implement the three-argument form.
     */
    default void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
    {
        onFrame(buffer, offset, length);
    }
}
