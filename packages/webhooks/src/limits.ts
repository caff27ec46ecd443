// What one receiver may cost the sender (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): at most
// 4 deliveries in flight per webhook, at most 64 KiB of a response body read.
import type { IncomingMessage } from 'node:http';

export const MAX_IN_FLIGHT_PER_WEBHOOK = 4;
export const RESPONSE_BODY_MAX_BYTES = 64 * 1024;
/**
 * Webhook worker slots per process: enough that 16 webhooks at their in-flight limit, all
 * waiting out the 10 s timeout, still leave free slots for everyone else's deliveries.
 */
export const WEBHOOK_WORKER_CONCURRENCY = 80;
/** A delivery of a webhook at its limit waits this long (plus up to as much again) before it is tried again. */
export const BUSY_WEBHOOK_DELAY_MS = 2_000;

/** Deliveries in flight per webhook, in this process. */
export class InFlightPerWebhook {
  private readonly counts = new Map<string, number>();

  constructor(private readonly max = MAX_IN_FLIGHT_PER_WEBHOOK) {}

  /** Takes a slot for `webhookId`; false when it already has `max` in flight. */
  tryTake(webhookId: string): boolean {
    const count = this.counts.get(webhookId) ?? 0;
    if (count >= this.max) return false;
    this.counts.set(webhookId, count + 1);
    return true;
  }

  release(webhookId: string): void {
    const count = (this.counts.get(webhookId) ?? 1) - 1;
    if (count <= 0) this.counts.delete(webhookId);
    else this.counts.set(webhookId, count);
  }

  inFlight(webhookId: string): number {
    return this.counts.get(webhookId) ?? 0;
  }
}

/**
 * Reads and drops a receiver's response body, at most `maxBytes` of it, then closes the
 * response (a short body is read whole, so the socket can be reused). Resolves with the bytes read.
 */
export function discardResponseBody(res: IncomingMessage, maxBytes = RESPONSE_BODY_MAX_BYTES, maxMs = 1_000): Promise<number> {
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      clearTimeout(timer);
      resolve(read);
    };
    const timer = setTimeout(() => res.destroy(), maxMs);
    timer.unref();
    res.on('data', (chunk: Buffer) => {
      const room = maxBytes - read;
      read += Math.min(room, chunk.length);
      if (chunk.length >= room) res.destroy();
    });
    res.on('error', () => undefined);
    res.once('close', done);
  });
}
