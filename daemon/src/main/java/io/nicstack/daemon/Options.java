package io.nicstack.daemon;

import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * {@code --name value} and {@code --flag} options of one subcommand, checked against what it accepts. {@code --help}
 * or {@code -h} in an option's place ends the parsing: the command prints its usage ({@link #help()}).
 */
final class Options
{
    private final String command;
    private final Map<String, String> values = new HashMap<>();
    private boolean help;

    Options(final String command, final String[] args, final int from, final Set<String> withValue, final Set<String> flags)
    {
        this.command = command;
        for (int i = from; i < args.length; i++)
        {
            final String arg = args[i];
            String name = arg;
            String value = null;
            final int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0)
            {
                name = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            }
            if (arg.equals("--help") || arg.equals("-h"))
            {
                help = true;
                return;
            }
            if ((flags.contains(name) || withValue.contains(name)) && values.containsKey(name))
            {
                throw new UsageException(command + ": option " + name + " given twice");
            }
            if (flags.contains(name) && value == null)
            {
                values.put(name, "true");
            }
            else if (withValue.contains(name))
            {
                if (value == null)
                {
                    if (i + 1 >= args.length)
                    {
                        throw new UsageException(command + ": option " + name + " needs a value");
                    }
                    value = args[++i];
                }
                if (value.isEmpty())
                {
                    throw new UsageException(command + ": option " + name + " needs a value (got an empty one)");
                }
                values.put(name, value);
            }
            else
            {
                throw new UsageException(command + ": unknown option '" + arg + "' (try nicstack " + command + " --help)");
            }
        }
    }

    /** Whether {@code --help} (or {@code -h}) was asked for: the options after it are not parsed. */
    boolean help()
    {
        return help;
    }

    String get(final String name)
    {
        return values.get(name);
    }

    String get(final String name, final String defaultValue)
    {
        return values.getOrDefault(name, defaultValue);
    }

    boolean has(final String name)
    {
        return values.containsKey(name);
    }

    /**
     * Option {@code name}'s value, or {@code defaultValue} when it is not given, as a path. A file name is bytes in the
     * encoding the JVM took from the locale at start-up ({@code sun.jnu.encoding}, from LC_ALL, LC_CTYPE or LANG): under
     * POSIX or C that is ASCII, where a non-ASCII name has no bytes at all; and no file name holds a NUL. Either is a bad
     * option like any other (one line, exit 2), not Path.of's InvalidPathException with a stack trace.
     */
    Path path(final String name, final String defaultValue)
    {
        final String value = values.getOrDefault(name, defaultValue);
        try
        {
            return Path.of(value);
        }
        catch (final InvalidPathException e)
        {
            if (value.indexOf('\0') >= 0)
            {
                throw new UsageException(command + ": " + name + " must not contain a NUL character");
            }
            final String encoding = System.getProperty("sun.jnu.encoding");
            throw new UsageException(command + ": " + name + " " + value + ": the path cannot be represented in the current"
                + " locale's encoding (" + encoding + ")" + (StandardCharsets.UTF_8.name().equalsIgnoreCase(encoding) ? ""
                : "; run under a UTF-8 locale, e.g. LC_ALL=C.UTF-8"));
        }
    }

    String require(final String command, final String name)
    {
        final String v = values.get(name);
        if (v == null)
        {
            throw new UsageException(command + ": missing required option " + name);
        }
        return v;
    }
}
