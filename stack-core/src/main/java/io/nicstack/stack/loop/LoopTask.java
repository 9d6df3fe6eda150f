package io.nicstack.stack.loop;

/** Extra work on the event loop thread, once per round (the pipe server, snapshots); returns work done, 0 when idle. */
@FunctionalInterface
public interface LoopTask
{
    int doWork();
}
