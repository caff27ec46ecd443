/**
 * Bounds on what one origin may cost (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): a body must
 * deliver at least 16 KiB in every 30 s window while we are waiting for it, or it is cut and
 * counted as a failed fetch ("origin too slow"). The time to the first byte is got's `response`
 * and `socket` timeouts (FetcherOptions.idleTimeoutMs, 30 s).
 *
 * The rate is sampled from the request's byte counter (got's `downloadProgress`), so the hot
 * path gains no stream stage. Time when we are the slow side (the body is paused, or bytes wait
 * unread in its buffer: the archive or the client is behind) does not count against the origin.
 */
import { FetchError } from './errors';

export interface MinRate {
  /** Bytes a body must deliver in every window... */
  bytes: number;
  /** ...of this many milliseconds. */
  windowMs: number;
}

export const DEFAULT_MIN_RATE: MinRate = { bytes: 16 * 1024, windowMs: 30_000 };

export const TOO_SLOW = 'origin too slow';

export function tooSlowError(rate: MinRate, received: number): FetchError {
  return new FetchError('timeout', TOO_SLOW, {
    retryable: true,
    detail: `${TOO_SLOW}: ${received} bytes in ${rate.windowMs / 1000} s (at least ${rate.bytes} required)`,
  });
}

/**
 * The pure part: fed (time, bytes received so far, whether we were the slow side), says when
 * the origin has delivered fewer than `bytes` over a whole window of its own.
 */
export class RateWindow {
  /** Samples since the origin was last excused, oldest first: [time, bytes]. */
  private samples: Array<[number, number]> = [];

  constructor(private readonly rate: MinRate) {}

  /** Returns the bytes received over the last window when that is too few, else null. */
  sample(now: number, received: number, ourFault: boolean): number | null {
    if (ourFault) {
      this.samples = [[now, received]];
      return null;
    }
    this.samples.push([now, received]);
    // Keep one sample at or before the window's start (the oldest that still covers it).
    while (this.samples.length > 1 && this.samples[1]![0] <= now - this.rate.windowMs) this.samples.shift();
    const [since, from] = this.samples[0]!;
    if (now - since < this.rate.windowMs) return null;
    const delivered = received - from;
    return delivered < this.rate.bytes ? delivered : null;
  }
}

/** What the watcher needs of a got request stream. */
export interface WatchedRequest {
  readonly downloadProgress: { transferred: number };
  readonly readableLength: number;
  readonly destroyed: boolean;
  isPaused(): boolean;
  destroy(error?: Error): unknown;
  once(event: 'close' | 'end', listener: () => void): unknown;
}

/** Cuts `request` with "origin too slow" once it delivers less than `rate` (sampled 30 times a window). */
export function watchRate(request: WatchedRequest, rate: MinRate = DEFAULT_MIN_RATE): void {
  const window = new RateWindow(rate);
  const sampleEvery = Math.max(10, Math.floor(rate.windowMs / 30));
  const check = (): void => {
    if (request.destroyed) return stop();
    const received = request.downloadProgress.transferred;
    const ourFault = request.isPaused() || request.readableLength > 0;
    const delivered = window.sample(performance.now(), received, ourFault);
    if (delivered !== null) {
      stop();
      request.destroy(tooSlowError(rate, delivered));
    }
  };
  const timer = setInterval(check, sampleEvery);
  timer.unref();
  const stop = (): void => clearInterval(timer);
  // Read to its end, a body has nothing left to deliver. got's stream is not destroyed then
  // (no 'close'): the watcher would keep it and its response alive until its window passed.
  request.once('end', stop);
  request.once('close', stop);
  check();
}
