package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import io.nicstack.pipes.Libc;

/**
 * Which filesystem an open file is on, found from procfs alone: the mount id in {@code /proc/<pid>/fdinfo/<fd>}, and
 * that mount's line in a {@code mountinfo} (proc(5)). Neither read reaches the file's filesystem, unlike fstatfs(2)
 * or stat(2) of the file, which on a FUSE or network mount wait on its server for as long as it takes.
 */
final class Mounts
{
    /**
     * Mount id of the kernel's internal tmpfs mount that every memfd lives on (one made with MFD_HUGETLB lives on
     * hugetlbfs instead): a mount that no mountinfo lists, found from a memfd of the daemon's own. -1 if not found.
     */
    static final long MEMFD_MOUNT = memfdMount();

    private Mounts()
    {
    }

    /** The mount id of the file open as {@code fdinfo} ({@code /proc/<pid>/fdinfo/<fd>}), or -1 if it is not open. */
    static long mountId(final Path fdinfo)
    {
        final String text;
        try
        {
            text = Files.readString(fdinfo, StandardCharsets.ISO_8859_1);
        }
        catch (final IOException e)
        {
            return -1;
        }
        for (final String line : text.split("\n"))
        {
            if (line.startsWith("mnt_id:"))
            {
                try
                {
                    return Long.parseLong(line.substring("mnt_id:".length()).strip());
                }
                catch (final NumberFormatException e)
                {
                    return -1;
                }
            }
        }
        return -1;
    }

    /**
     * The filesystem type of mount {@code mountId} as the first of {@code mountinfos} that lists it says (mount ids
     * are unique system-wide, so any namespace's list that has it describes that mount), or null if none does.
     */
    static String filesystemType(final long mountId, final Path... mountinfos)
    {
        final String id = mountId + " ";
        for (final Path mountinfo : mountinfos)
        {
            final String text;
            try
            {
                text = Files.readString(mountinfo, StandardCharsets.ISO_8859_1);
            }
            catch (final IOException e)
            {
                continue;
            }
            for (final String line : text.split("\n"))
            {
                // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the type follows " - ".
                final int separator = line.indexOf(" - ");
                if (line.startsWith(id) && separator > 0)
                {
                    final int end = line.indexOf(' ', separator + 3);
                    return line.substring(separator + 3, end < 0 ? line.length() : end);
                }
            }
        }
        return null;
    }

    private static long memfdMount()
    {
        final Libc.Calls libc = Libc.calls();
        final int fd = libc.memfd_create("nicstack-mount-probe", Libc.MFD_CLOEXEC);
        if (fd < 0)
        {
            return -1;
        }
        try
        {
            return mountId(Path.of("/proc/self/fdinfo/" + fd));
        }
        finally
        {
            libc.close(fd);
        }
    }
}
