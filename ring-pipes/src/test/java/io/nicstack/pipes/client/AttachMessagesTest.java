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
import java.util.function.Consumer;
import java.util.stream.Stream;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.Protocol;

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

    /**
     * Options out of their range are refused before anything is made, naming the option. Before: attachTimeoutMillis
     * -1 waited for nothing and said "no nicstack daemon attached ... within -1 ms", and others failed later or never.
     */
    @Test
    void optionsOutOfRangeAreRefusedByName() throws Exception
    {
        try (FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH))
        {
            final List<Consumer<ClientOptions>> bad = List.of(
                o -> o.attachTimeoutMillis = -1,
                o -> o.attachTimeoutMillis = 0,
                o -> o.daemonTimeoutMillis = 0,
                o -> o.daemonLossMillis = -1,
                o -> o.maxConnections = 0,
                o -> o.pipeCapacity = 3000,
                o -> o.ringCapacity = 100,
                o -> o.clock = null,
                o -> o.idleStrategy = null);
            final List<String> names = List.of("attachTimeoutMillis is -1", "attachTimeoutMillis is 0",
                "daemonTimeoutMillis is 0", "daemonLossMillis is -1", "maxConnections is 0", "pipeCapacity is 3000",
                "ringCapacity is 100", "clock is null", "idleStrategy is null");
            for (int i = 0; i < bad.size(); i++)
            {
                final ClientOptions options = options();
                bad.get(i).accept(options);
                final String field = names.get(i).substring(0, names.get(i).indexOf(' '));
                final Object outcome = outcome(() -> NicstackClient.attach(dir, "bad", options));
                assertTrue(outcome instanceof NicstackException, names.get(i) + ": " + outcome);
                assertEquals(Protocol.Reason.BAD_ARGUMENT, ((NicstackException)outcome).reason(), names.get(i));
                assertTrue(((NicstackException)outcome).getMessage().startsWith("ClientOptions." + field + " "),
                    names.get(i) + ": " + outcome);
            }
            try (Stream<Path> files = Files.list(dir.resolve(AppFile.APPS_DIRECTORY)))
            {
                assertEquals(0, files.count(), "no app file was made");
            }
        }
    }

    /** What {@code attach} returned (the client closed) or threw. */
    private static Object outcome(final Attach attach)
    {
        try
        {
            attach.run().close();
            return "attached";
        }
        catch (final Exception ex)
        {
            return ex;
        }
    }

    private interface Attach
    {
        NicstackClient run() throws Exception;
    }
}
