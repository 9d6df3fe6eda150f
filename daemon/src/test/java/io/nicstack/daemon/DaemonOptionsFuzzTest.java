package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.nicstack.nic.fault.FaultConfig;

/**
 * Mutated command lines of {@code nicstack daemon}, and mutated {@code --faults} specs, as a user or a script might
 * mistype them: values from a working command line with characters inserted, deleted, replaced or cut off (digits,
 * signs, points, exponents, units, blanks, digits of other scripts), huge numbers and exponents, options given twice,
 * unknown or without their value; fault specs of known and unknown keys with values Double and BigDecimal would take
 * (NaN, 0x1p-3, 0.5f, 1e-3, -0) or not.
 *
 * <p>A command line is accepted, or refused with a {@link UsageException} of one line starting "daemon: " (Main prints
 * it, exit 2), never anything else; an accepted one's {@code --mtu} and {@code --ttl} are ASCII digits, and the
 * prefix lengths of its {@code --ip} and {@code --host-ip} one or two of them. A fault spec is
 * accepted, or refused with an IllegalArgumentException of one line that says "fault "; an accepted one's delays and
 * rates are plain decimals (ASCII digits, a point and digits or nothing) with a unit, and its
 * {@link FaultConfig#toString()} writes each probability as a plain decimal, and parses back to an equal config that
 * prints the same: a failing run's faults can be replayed from what it printed.
 *
 * <p>Adopted from the fuzz review's probe. The seed is printed in every failure; {@code -Dnicstack.fuzz.seed=S} repeats
 * a run, {@code -Dnicstack.fuzz.args=N} sizes it: N command lines and 2N fault specs, 50,000 by default (1 to 3 s here).
 * A long run: {@code mvn -q -B -o -pl daemon -am test -Dtest=DaemonOptionsFuzzTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Dsurefire.excludedGroups=kernel -Dnicstack.fuzz.args=1000000}.
 */
class DaemonOptionsFuzzTest
{
    private static final int COMMAND_LINES = Integer.getInteger("nicstack.fuzz.args", 50_000);
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final String REPLAY = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";

    /** Each option of the daemon with a value that works, or "" for a flag; and names that are none. */
    private static final String[][] OPTIONS = {
        {"--device", "tap:nst0"}, {"--ip", "198.18.0.2/24"}, {"--host-ip", "198.18.0.1/24"}, {"--mac", "02:00:c6:12:00:02"},
        {"--mtu", "1500"}, {"--ttl", "64"}, {"--gateway", "198.18.0.1"}, {"--pcap", "/tmp/x.pcap"},
        {"--faults", "loss=0.01,reorder=0.02,dup=0.01,corrupt=0.001,delay=1ms,rate=100mbps,seed=7"}, {"--shm", "/dev/shm/x"},
        {"--services", "echo,discard"}, {"--no-offload", ""}, {"--busy-poll", ""}, {"--no-send-file", ""}, {"--help", ""},
        {"-h", ""}, {"--bogus", ""}, {"--", ""},
    };
    /**
     * What a mistyped value may gain: digits, signs, separators, exponents, units, blanks, digits of other scripts, and
     * what no file name holds (a NUL, an unpaired surrogate: --shm and --pcap must refuse them as options).
     */
    private static final String ALPHABET = "0123456789.:/,=-+eEabcdfsmkgpntux% \t\u00e9\u0663\uff11\u0000\ud800";
    private static final String[] FAULT_KEYS = {"loss", "reorder", "dup", "corrupt", "delay", "rate", "seed", "LOSS", "x", ""};
    private static final String[] FAULT_VALUES = {"0", "1", "0.5", "1e-3", "NaN", "Infinity", "-0", "0x1p-3", "0.5f", "1d",
        "1ms", "1.5us", "0.5ns", "9223372036854775807ns", "9.223372036854775808s", "1e300000000s", "1e-300000000s",
        "100mbps", "1gbps", "10kbps", "5 ms", "1h", "-1ms", "0e999999999s", "1E+2147483647bps", "7", "-9223372036854775808",
        "+7", "\u0663", "0.\u0663", ""};
    private static final Pattern DIGITS = Pattern.compile("[0-9]+");
    private static final Pattern PREFIX = Pattern.compile("[0-9]{1,2}");
    private static final String DECIMAL = "[0-9]+(\\.[0-9]+)?";
    /** A delay or rate as the README writes it: a plain decimal and a unit in any (ASCII) case, or 0. */
    private static final Pattern SCALED = Pattern.compile("0|" + DECIMAL + "(?i:ns|us|ms|s|bps|kbps|mbps|gbps)");
    private static final Pattern PLAIN_PROBABILITIES = Pattern.compile(
        "loss=" + DECIMAL + ",reorder=" + DECIMAL + ",dup=" + DECIMAL + ",corrupt=" + DECIMAL + ",delay=.*");

    @Test
    void aMutatedCommandLineIsAcceptedOrRefusedInOneLine()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        int accepted = 0;
        for (int i = 0; i < COMMAND_LINES; i++)
        {
            final List<String> args = new ArrayList<>(List.of("daemon",
                "--device", random.nextInt(4) == 0 ? mutate("tap:nst0", random) : "tap:nst0",
                "--ip", random.nextInt(3) == 0 ? mutate("198.18.0.2/24", random) : "198.18.0.2/24"));
            final int extra = random.nextInt(5);
            for (int k = 0; k < extra; k++)
            {
                final String[] option = OPTIONS[random.nextInt(OPTIONS.length)];
                if (option[1].isEmpty())
                {
                    args.add(option[0]);
                }
                else if (random.nextBoolean())
                {
                    args.add(option[0] + "=" + mutate(option[1], random));
                }
                else
                {
                    args.add(option[0]);
                    args.add(mutate(option[1], random));
                }
            }
            final String[] line = args.toArray(new String[0]);
            final int n = i;
            final Supplier<String> where = () -> "command line " + n + " [" + String.join(" | ", line) + "], " + REPLAY;
            try
            {
                new DaemonCommand(line, (name, offload, mtu, hostIp) ->
                {
                    throw new AssertionError("the options opened a link, " + where.get());
                });
                for (final String number : valuesOf(line, "--mtu", "--ttl"))
                {
                    assertTrue(DIGITS.matcher(number).matches(), () -> "accepted the number '" + number + "', " + where.get());
                }
                for (final String address : valuesOf(line, "--ip", "--host-ip"))
                {
                    final String prefix = address.substring(address.indexOf('/') + 1);
                    assertTrue(address.indexOf('/') < 0 || PREFIX.matcher(prefix).matches(),
                        () -> "accepted the prefix '" + prefix + "', " + where.get());
                }
                accepted++;
            }
            catch (final UsageException e)
            {
                assertOneLine(e.getMessage().startsWith("daemon: "), e.getMessage(), where);
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError("not a usage error, " + where.get(), e);
            }
        }
        assertTrue(accepted > COMMAND_LINES / 10 && accepted < COMMAND_LINES * 9 / 10,
            accepted + " of " + COMMAND_LINES + " accepted: the mutations are all harmless or all fatal, " + REPLAY);
    }

    @Test
    void aMutatedFaultSpecIsRefusedInOneLineOrReplaysToItself()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        int accepted = 0;
        for (int i = 0; i < 2 * COMMAND_LINES; i++)
        {
            final StringBuilder spec = new StringBuilder();
            final int settings = random.nextInt(5);
            for (int k = 0; k < settings; k++)
            {
                final String value = FAULT_VALUES[random.nextInt(FAULT_VALUES.length)];
                spec.append(k == 0 ? "" : random.nextInt(10) == 0 ? ",," : ",")
                    .append(FAULT_KEYS[random.nextInt(FAULT_KEYS.length)]).append(random.nextInt(20) == 0 ? "" : "=")
                    .append(random.nextInt(3) == 0 ? mutate(value, random) : value);
            }
            final String text = random.nextInt(5) == 0 ? mutate(spec.toString(), random) : spec.toString();
            final int n = i;
            final Supplier<String> where = () -> "fault spec " + n + " '" + text + "', " + REPLAY;
            final FaultConfig config;
            try
            {
                config = FaultConfig.parse(text);
            }
            catch (final IllegalArgumentException e)
            {
                assertOneLine(e.getMessage().contains("fault "), e.getMessage(), where);
                continue;
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError("not an IllegalArgumentException, " + where.get(), e);
            }
            accepted++;
            for (final String item : text.split(","))
            {
                final int eq = item.indexOf('=');
                final String key = eq < 0 ? "" : item.substring(0, eq).trim().toLowerCase(Locale.ROOT);
                final String value = eq < 0 ? "" : item.substring(eq + 1).trim();
                assertTrue(!key.equals("delay") && !key.equals("rate") || SCALED.matcher(value).matches(),
                    () -> "accepted the " + key + " '" + value + "', " + where.get());
            }
            final String printed = config.toString();
            assertTrue(PLAIN_PROBABILITIES.matcher(printed).matches(), () -> "printed as " + printed + ", " + where.get());
            final FaultConfig replayed = FaultConfig.parse(printed);
            assertEquals(config, replayed, () -> "replayed from " + printed + ", " + where.get());
            assertEquals(printed, replayed.toString(), where);
        }
        assertTrue(accepted > COMMAND_LINES / 10, accepted + " of " + 2 * COMMAND_LINES + " specs accepted, " + REPLAY);
    }

    /** {@code text} with up to three characters inserted, deleted or replaced, a cut, or a run of digits put in. */
    private static String mutate(final String text, final SplittableRandom random)
    {
        final StringBuilder b = new StringBuilder(text);
        final int mutations = random.nextInt(4);
        for (int m = 0; m < mutations; m++)
        {
            final int at = random.nextInt(b.length() + 1);
            final char c = ALPHABET.charAt(random.nextInt(ALPHABET.length()));
            switch (random.nextInt(5))
            {
                case 0 -> b.insert(at, c);
                case 1 ->
                {
                    if (at < b.length())
                    {
                        b.deleteCharAt(at);
                    }
                }
                case 2 -> b.replace(at, Math.min(at + 1, b.length()), String.valueOf(c));
                case 3 -> b.setLength(at);
                default -> b.insert(at, random.nextBoolean() ? "99999999999999999999"
                    : random.nextBoolean() ? "1e999999999" : "-1");
            }
        }
        return b.toString();
    }

    /**
     * The values given to {@code names} on {@code line}, as {@code --name value} or {@code --name=value}, read as the
     * daemon's options are: a value is the next argument whatever it is, and nothing after {@code --help} counts.
     */
    private static List<String> valuesOf(final String[] line, final String... names)
    {
        final List<String> values = new ArrayList<>();
        for (int i = 1; i < line.length && !line[i].equals("--help") && !line[i].equals("-h"); i++)
        {
            final int eq = line[i].indexOf('=');
            final boolean joined = line[i].startsWith("--") && eq > 0;
            final String name = joined ? line[i].substring(0, eq) : line[i];
            String value = joined ? line[i].substring(eq + 1) : null;
            if (!joined && takesValue(name) && i + 1 < line.length)
            {
                value = line[++i];
            }
            if (value != null && List.of(names).contains(name))
            {
                values.add(value);
            }
        }
        return values;
    }

    private static boolean takesValue(final String name)
    {
        for (final String[] option : OPTIONS)
        {
            if (option[0].equals(name))
            {
                return !option[1].isEmpty();
            }
        }
        return false;
    }

    /** A message for one line on stderr: {@code sayWhat} (it names the command or the fault setting), no line break. */
    private static void assertOneLine(final boolean sayWhat, final String message, final Supplier<String> where)
    {
        assertTrue(sayWhat && message.indexOf('\n') < 0 && message.indexOf('\r') < 0,
            () -> "the message '" + message + "', " + where.get());
    }
}
