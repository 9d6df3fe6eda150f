package io.nicstack.nic;

import org.agrona.DirectBuffer;

/** Receives one frame of a burst; the buffer belongs to the device and is valid only during the call. */
@FunctionalInterface
public interface FrameHandler
{
    void onFrame(DirectBuffer buffer, int offset, int length);
}
