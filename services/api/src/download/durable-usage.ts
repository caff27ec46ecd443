import type { Logger } from '@ap/log';

/** Waits between attempts; the last repeats until the write is taken (5 s: one insert per held row, so a Postgres back from an outage has the usage within seconds). */
const RETRY_DELAYS_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * Runs `write` until it succeeds (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse: usage is never
 * lost): bytes already sent are owed to the user's usage whether or not Postgres answers now.
 * Resolves after the first attempt; a failed one is tried again in the background, in this
 * process, for as long as it runs (`pending` says how many are waiting). `delays` is for tests.
 */
export function createDurableWriter(log: Logger, delays: readonly number[] = RETRY_DELAYS_MS) {
  let pending = 0;
  const attempt = async (write: () => Promise<unknown>, what: string, tries: number): Promise<void> => {
    try {
      await write();
      if (tries > 0) log.info({ what, tries: tries + 1 }, 'recorded after a retry');
    } catch (err) {
      if (tries === 0) pending++;
      const delay = delays[Math.min(tries, delays.length - 1)]!;
      log.warn({ what, err: (err as Error).message, retryInMs: delay }, 'not recorded yet; will retry');
      const timer = setTimeout(() => {
        void attempt(write, what, tries + 1);
      }, delay);
      timer.unref();
      return;
    }
    if (tries > 0) pending--;
  };
  return {
    write: (write: () => Promise<unknown>, what: string) => attempt(write, what, 0),
    get pending() {
      return pending;
    },
  };
}

export type DurableWriter = ReturnType<typeof createDurableWriter>;
