import type { Logger } from '@ap/log';

/**
 * A promise rejected with nobody listening is a bug of ours, never a reason to stop every bin
 * and download of the process (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse: a lost dependency is
 * an error of the bin or request at hand). It is logged at error level, as "unhandled rejection",
 * so tests and alerts see it; the process goes on. An uncaught exception still ends the process:
 * its state is unknown after one.
 */
export function keepRunningOnStrayRejections(log: Logger): void {
  process.on('unhandledRejection', (reason: unknown) => {
    log.error({ err: reason instanceof Error ? { type: reason.name, message: reason.message, stack: reason.stack } : String(reason) }, 'unhandled rejection');
  });
}
