package io.nicstack.pipes;

import java.io.IOException;

/** An app file the daemon cannot use: {@link #kind()} says why, {@link #reason()} is what to answer in REJECTED. */
public final class AppFileException extends IOException
{
    private static final long serialVersionUID = 1L;

    /** What is wrong with the file. */
    public enum Kind
    {
        /** The first 8 bytes are not {@link AppFileDescriptor#MAGIC}: not an app file. */
        BAD_MAGIC(Protocol.Reason.BAD_ARGUMENT),
        /** The file was made for another layout {@link AppFileDescriptor#VERSION}. */
        VERSION_MISMATCH(Protocol.Reason.VERSION_MISMATCH),
        /** The file is shorter than its header, or than the layout its sizes describe. */
        TRUNCATED(Protocol.Reason.BAD_ARGUMENT),
        /** Ring or pipe capacity not a power of two in range, connections out of range, or the file too large. */
        BAD_SIZES(Protocol.Reason.BAD_ARGUMENT),
        /** The app name is empty, too long or not printable ASCII of {@code [A-Za-z0-9._-]}. */
        BAD_NAME(Protocol.Reason.BAD_ARGUMENT),
        /**
         * The descriptor the app file names is not the app's memory: gone, another file than the inode named, not a
         * memfd, or not sealed against shrinking (a file that can shrink under a mapping faults its reader).
         */
        BAD_MEMORY(Protocol.Reason.BAD_ARGUMENT);

        private final int reason;

        Kind(final int reason)
        {
            this.reason = reason;
        }
    }

    private final Kind kind;

    public AppFileException(final Kind kind, final String message)
    {
        super(kind + ": " + message);
        this.kind = kind;
    }

    public Kind kind()
    {
        return kind;
    }

    /** The {@link Protocol.Reason} to write with STATE_REJECTED. */
    public int reason()
    {
        return kind.reason;
    }
}
