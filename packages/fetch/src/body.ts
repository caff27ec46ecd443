/**
 * A response body that survives being cut midway (issue 14 item 4): after the headers, a
 * connection reset, an idle stall or a short close is continued with a ranged GET from the
 * last byte received (the fetcher's `resume`, which sends the validator), up to the retry
 * count; only then does the body error. The consumer sees one continuous stream, so whatever
 * it computes over the bytes (yazl's CRC-32, the layout reader's) carries on unchanged.
 *
 * It is also the fetch-ahead scheduler's buffer (ahead.ts): `readAhead` lets the body read
 * that many bytes into its own buffer while nobody consumes it (a small body whole, a large
 * one a slice), and a body held back that long is closed quietly before any idle timeout can
 * hit it, to be continued by range when it is read again.
 */
import { Readable } from 'node:stream';
import { FetchError, shortBodyError } from './errors';

/** What a continuation may hand back: the rest of the body from `offset`. */
export type ResumeBody = (offset: number, signal: AbortSignal | undefined) => Promise<Readable>;

export interface BodyStreamOptions {
  /** Bytes the whole body has, when known (a cut is then told from an end). */
  size: number | null;
  /** Continues the body from an offset; absent: a cut is final. */
  resume?: ResumeBody;
  /** Continuations allowed after the first cut. */
  retries: number;
  /** Wait before continuation number n (1-based). */
  backoff(attempt: number): number;
  signal?: AbortSignal;
  /** What the length is called in a "body shorter than ..." message. */
  lengthName: string;
  /** A body held back (unread) this long is closed, to be continued when read. */
  holdLimitMs: number;
  /** Maps a source's error to a FetchError (the fetcher's classification). */
  toError(error: unknown): FetchError;
}

/** A cut that a ranged GET from the last byte can repair. */
export function isCut(error: FetchError): boolean {
  return error.kind === 'connection' || error.kind === 'timeout' || (error.kind === 'length' && error.userMessage.startsWith('body shorter'));
}

const noop = (): void => {};

export class BodyStream extends Readable {
  /** Body bytes received from the origin so far (pushed into this stream). */
  received = 0;
  /** Continuations made after cuts (not counting a held body's quiet reopen). */
  continuations = 0;
  /**
   * Bytes this body may hold unread in its buffer before it stops reading its source
   * (the scheduler's reservation). 0: ordinary stream backpressure (highWaterMark).
   */
  readAhead = 0;
  /** True once every byte came from the origin (the connection is free). */
  fetched = false;

  private source: Readable | null;
  private sourcePaused = false;
  private reopening = false;
  /** The source was closed while held back: reopen on the next read, no retry charged. */
  private parked = false;
  private holdTimer: NodeJS.Timeout | null = null;
  private readonly opts: BodyStreamOptions;

  constructor(source: Readable, opts: BodyStreamOptions) {
    super({ highWaterMark: 64 * 1024 });
    this.opts = opts;
    this.source = source;
    this.attach(source);
  }

  /** Whether the source may still be read further into the buffer. */
  private roomAhead(): boolean {
    return this.readableLength < Math.max(this.readAhead, this.readableHighWaterMark);
  }

  private attach(source: Readable): void {
    this.sourcePaused = false;
    // An error kept from before this listener (stream.errored) is reported by 'error' anyway
    // on the next tick of a destroyed stream; readable streams re-emit nothing, so check it.
    source.on('data', (chunk: Buffer) => {
      if (source !== this.source) return;
      this.received += chunk.length;
      if (this.opts.size !== null && this.received > this.opts.size) {
        return this.fail(new FetchError('length', `body longer than ${this.opts.lengthName} (more than ${this.opts.size} bytes)`, { retryable: false }));
      }
      this.push(chunk);
      if (!this.roomAhead()) this.holdSource(source);
    });
    source.once('end', () => {
      if (source !== this.source) return;
      this.clearHold();
      if (this.opts.size !== null && this.received < this.opts.size) return this.cut(shortBodyError(this.received, this.opts.size, this.opts.lengthName));
      this.source = null;
      this.fetched = true;
      this.emit('fetched');
      this.push(null);
    });
    source.on('error', (err: unknown) => {
      if (source !== this.source) return;
      this.cut(this.opts.toError(err));
    });
    if (source.errored) queueMicrotask(() => source.emit('error', source.errored));
  }

  private holdSource(source: Readable): void {
    if (this.sourcePaused) return;
    this.sourcePaused = true;
    source.pause();
    // Held back this long: let the connection go before a timeout (ours or the origin's) does.
    if (this.opts.resume && this.opts.size !== null) {
      this.holdTimer = setTimeout(() => this.park(), this.opts.holdLimitMs);
      this.holdTimer.unref();
    }
  }

  private clearHold(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
  }

  /** Closes the held connection quietly; the body continues from `received` when read. */
  private park(): void {
    this.holdTimer = null;
    if (!this.sourcePaused || !this.source || this.destroyed) return;
    this.dropSource();
    this.parked = true;
  }

  override _read(): void {
    if (this.parked) {
      this.parked = false;
      this.reopen(false);
      return;
    }
    if (this.sourcePaused && this.source) {
      this.clearHold();
      this.sourcePaused = false;
      this.source.resume();
    }
  }

  /** Lets the current response go (its late errors ignored). */
  private dropSource(): void {
    const source = this.source;
    this.source = null;
    this.clearHold();
    if (source) {
      source.on('error', noop);
      source.destroy();
    }
  }

  private fail(error: Error): void {
    this.dropSource();
    this.destroy(error);
  }

  /** The source died: continue from the last byte when that is allowed, else fail. */
  private cut(error: FetchError): void {
    this.dropSource();
    if (this.destroyed) return;
    const held = this.sourcePaused;
    const canContinue = this.opts.resume !== undefined && this.opts.size !== null && isCut(error) && !this.opts.signal?.aborted;
    if (canContinue && held) {
      // Died while we held it back (not the origin's fault): continue when read, uncharged.
      this.parked = true;
      return;
    }
    if (!canContinue || this.continuations >= this.opts.retries) {
      this.destroy(this.finalError(error));
      return;
    }
    this.reopen(true);
  }

  private finalError(error: FetchError): FetchError {
    if (error.kind === 'length' && this.opts.size !== null && this.received < this.opts.size && error.userMessage.startsWith('body shorter')) {
      const whole = shortBodyError(this.received, this.opts.size, this.opts.lengthName);
      whole.url = error.url;
      whole.attempts = this.continuations + 1;
      return whole;
    }
    error.attempts = this.continuations + 1;
    return error;
  }

  private reopen(charged: boolean): void {
    if (this.reopening || this.destroyed) return;
    this.reopening = true;
    if (charged) this.continuations++;
    const delay = charged ? this.opts.backoff(this.continuations) : 0;
    const go = async (): Promise<void> => {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      if (this.destroyed) return;
      if (this.opts.signal?.aborted) throw new FetchError('aborted', 'cancelled', { retryable: false });
      return this.opts.resume!(this.received, this.opts.signal).then((next) => {
        this.reopening = false;
        if (this.destroyed) {
          next.on('error', noop);
          next.destroy();
          return;
        }
        this.source = next;
        this.attach(next);
      });
    };
    go().catch((err: unknown) => {
      this.reopening = false;
      if (this.destroyed) return;
      const error = this.opts.toError(err);
      if (isCut(error) || error.retryable) {
        if (this.continuations < this.opts.retries) return this.reopen(true);
        this.destroy(this.finalError(error));
        return;
      }
      this.destroy(error);
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.dropSource();
    callback(error);
  }
}
