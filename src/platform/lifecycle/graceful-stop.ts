/**
 * How a long-running process of ours stops: once, gracefully, on SIGTERM or SIGINT, or when the
 * parent that started it over an IPC channel (`npm start`'s scripts/start.mjs) goes away, so a
 * role never outlives the supervisor that a process manager, `timeout` or CI signalled.
 * `close` finishes the work in hand; the last line printed says it did.
 */
export function stopGracefullyOnSignal(name: string, close: () => Promise<void>, write = (line: string) => void process.stderr.write(`${line}\n`)): void {
  let stopping = false;
  const stop = (why: string) => {
    // A second signal (npm and a terminal may both pass one Ctrl-C on) must not cut the first short.
    if (stopping) return;
    stopping = true;
    write(`onceline ${name} stopping (${why}): finishing in-flight work`);
    close().then(
      () => {
        write(`onceline ${name} stopped`);
        process.exit(0);
      },
      (err: unknown) => {
        write(`onceline ${name} stopped after a failed shutdown: ${(err as Error).message ?? err}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (process.channel) {
    process.once('disconnect', () => stop('its parent went away'));
    // The channel is only a lifeline: it must not keep the process alive by itself.
    process.channel.unref();
  }
}
