package io.nicstack.pipes.client;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.nicstack.pipes.AppFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What {@link NicstackClient#attach} says when it cannot make its app file: plain words, no exception class names. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AttachMessagesTest
{
    @TempDir
    Path dir;

    private static ClientOptions options()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        return options;
    }

    /**
     * A second app of the same name in this process is refused, and said so. Before: "cannot create the app file in
     * DIR: java.nio.file.FileAlreadyExistsException: DIR/apps/twin-PID.app: an app named twin is already open in this
     * process".
     */
    @Test
    void aSecondAppOfTheSameNameInThisProcess() throws Exception
    {
        try (FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
             NicstackClient first = NicstackClient.attach(dir, "twin", options()))
        {
            final NicstackException e = assertThrows(NicstackException.class,
                () -> NicstackClient.attach(dir, "twin", options()));
            assertEquals("an app named twin is already running in this process", e.getMessage());
        }
    }

    /**
     * An apps directory the app may not write: "permission denied", no exception class. Before: "cannot create the app
     * file in DIR: java.nio.file.AccessDeniedException: DIR/apps/.app-PID.app.tmp". The attach runs in a JVM of its
     * own, which as root runs without CAP_DAC_OVERRIDE (setpriv), so that the directory's mode binds it.
     */
    @Test
    void anAppsDirectoryTheAppMayNotWrite() throws Exception
    {
        final Path apps = Files.createDirectory(dir.resolve(AppFile.APPS_DIRECTORY),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("r-xr-xr-x")));
        final List<String> command = new ArrayList<>();
        if ("root".equals(System.getProperty("user.name")))
        {
            command.addAll(List.of("setpriv", "--bounding-set", "-dac_override,-dac_read_search"));
        }
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), AttachMain.class.getName(), dir.toString(), "app"));
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals("NicstackException: permission denied creating the app file in " + apps + "\n", out);
    }
}
