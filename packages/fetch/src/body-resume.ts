/**
 * A response body that survives being cut midway: a reset, an idle stall or a short close is
 * resumed with a ranged GET of `[received, end)` (source.ts, with the validator), up to the
 * retry count. The consumer sees one continuous stream (yazl's CRC-32 carries on unchanged).
 * It is also the fetch-ahead scheduler's buffer (ahead.ts): `readAhead` bytes are read ahead
 * unconsumed, and a body held back that long is parked (closed quietly before an idle timeout),
 * to be resumed when read. Its main response may be cut short at `mainStop` (ranged mode,
 * body.ts: the rest comes from ranges on connections of their own). While the scheduler lets it
 * (`spillTo`), bytes arriving beyond its read-ahead go to a spill file instead of waiting, and
 * are read back in order (body-spill.ts).
 */
import type { Readable } from 'node:stream';
import { MeteredReadable } from './body-reader';
import { isCut, wholeBodyError, type BodyStreamOptions } from './body-options';
import { FetchError, shortBodyError } from './errors';
import { SpillFile } from './body-spill';
import type { SpillArea } from './spill-area';

const noop = (): void => {};

export abstract class ResumableBody extends MeteredReadable {
  /** Continuations made after cuts (not counting a held body's quiet reopen). */
  continuations = 0;
  private lead = 0;

  /** Called with the size of every chunk that arrives from the origin (the service's byte count). */
  onOriginBytes: ((bytes: number) => void) | null = null;
  /** Called whenever bytes were buffered (the scheduler's measurement). */
  onBuffered: (() => void) | null = null;

  protected source: Readable | null;
  /** Where the current source's response ends (a cut before it is a cut). */
  protected sourceEnd: number;
  /** Bytes before this come from the main source; ranges cover the rest, in order (body.ts). */
  protected mainStop: number;
  private requestsHeld = 0;
  protected sourcePaused = false;
  protected reopening = false;
  /** The source was closed while held back: reopen on the next read, no retry charged. */
  protected parked = false;
  private holdTimer: NodeJS.Timeout | null = null;
  protected readonly opts: BodyStreamOptions;
  private readonly stopWatchingSignal: () => void = noop;
  /** Where bytes beyond the read-ahead may go (null: the body waits instead). */
  private spillArea: SpillArea | null = null;
  /** The bytes after those in the buffer, when some arrived while it was full. */
  private spill: SpillFile | null = null;
  private readingBack = false;
  /** The source ended with bytes still in the spill file: the end is pushed once they are read. */
  private endAfterSpill = false;
  private readonly spillWake = () => {
    if (!this.destroyed && (this.spill ? this.spillArea !== null && this.spill.usable : this.roomAhead() || this.spillRoom())) this.resumeSource();
  };

  constructor(source: Readable, opts: BodyStreamOptions) {
    super({ highWaterMark: 64 * 1024 });
    this.opts = opts;
    this.source = source;
    this.sourceEnd = opts.size ?? Infinity;
    this.mainStop = this.sourceEnd;
    this.attach(source);
    this.requestsHeld = 1;
    // The body itself ends on its signal: with all of it read ahead, or its connection let go
    // while held, no request is open to carry the abort, and its reader would wait for ever.
    const signal = opts.signal;
    if (signal) {
      const cancelled = () => this.destroy(new FetchError('aborted', 'cancelled', { retryable: false }));
      if (signal.aborted) queueMicrotask(cancelled);
      else {
        signal.addEventListener('abort', cancelled, { once: true });
        this.stopWatchingSignal = () => signal.removeEventListener('abort', cancelled);
      }
    }
  }

  /** Requests this body holds open now. */
  abstract get requests(): number;
  /** Whether the body has been split into ranges. */
  abstract get ranged(): boolean;
  /** The main response reached `mainStop` (or ended, split): the ranges go on from there. */
  protected abstract handOver(): void;

  /** Tells the scheduler how many requests the body holds, when that changed ('requests'). */
  protected noteRequests(): void {
    const n = this.requests;
    if (n === this.requestsHeld) return;
    this.requestsHeld = n;
    this.emit('requests', n);
  }

  protected finish(): void {
    this.fetched = true;
    this.noteRequests();
    if (this.spill) this.endAfterSpill = true;
    else this.push(null);
  }

  /** Bytes arrived and set aside in the spill file, not yet read back. */
  get spilledBytes(): number {
    return this.spill?.unread ?? 0;
  }

  /** Lets bytes beyond the read-ahead go to `area` from now (null: the body waits for its reader instead). */
  spillTo(area: SpillArea | null): void {
    this.spillArea = area;
    if (area && this.spillRoom()) this.resumeSource();
  }

  private spillRoom(): boolean {
    return this.spillArea !== null && this.spillArea.room() > 0;
  }

  /** A chunk arrived after the buffer filled: to the spill file, in order; the source waits when that cannot take more. */
  private spillChunk(chunk: Buffer, source: Readable): void {
    if (!this.spill) {
      this.spill = new SpillFile(this.spillArea!, this.spillWake);
      this.resetPace();
      // Read slower than it arrives (the body being read): as holding the source would say.
      this.emit('held');
    }
    this.received += chunk.length;
    this.spill.append(chunk);
    if ((this.spillArea !== null && this.spill.usable) || this.received >= this.sourceEnd) return;
    this.holdSource(source, false);
    this.spillArea?.wakeOnRoom(this.spillWake);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Readable.read's own signature
  override read(size?: number): any {
    const out: unknown = super.read(size);
    // Read back before the buffer runs dry (Node asks only below its 64 KiB), so the reader does not wait on the disk.
    if (this.spill && this.readableLength < this.readAhead / 2) this.readBack();
    return out;
  }

  /** Reads the spill file's next bytes into the buffer, while there is room; once read to its end, the file goes. */
  private readBack(): void {
    const spill = this.spill;
    if (!spill || this.readingBack || this.destroyed) return;
    this.readingBack = true;
    const room = Math.max(this.readAhead, this.readableHighWaterMark) - this.readableLength;
    spill.read(Math.max(room, this.readableHighWaterMark)).then(
      (chunk) => {
        this.readingBack = false;
        if (this.destroyed || this.spill !== spill) return;
        if (chunk && chunk.length > 0) this.deliver(chunk, false);
        if (spill.unread > 0) {
          if (this.roomAhead()) this.readBack();
          return;
        }
        this.spill = null;
        void spill.remove();
        if (this.endAfterSpill) this.push(null);
        else if (this.roomAhead()) this.resumeSource();
      },
      (error: unknown) => {
        this.readingBack = false;
        if (this.destroyed || this.spill !== spill) return; // removed with its body
        this.destroy(new FetchError('other', 'a body fetched ahead could not be read back from local disk', { retryable: false, detail: (error as Error).message }));
      },
    );
  }

  /**
   * Bytes this body may hold unread before it stops reading its source (the scheduler's
   * reservation); 0: the highWaterMark. Raised on a body held back, its source reads on at once.
   */
  get readAhead(): number {
    return this.lead;
  }

  set readAhead(bytes: number) {
    this.lead = bytes;
    if (!this.destroyed && this.roomAhead()) this.resumeSource();
  }

  /** A source held back reads on. */
  private resumeSource(): void {
    if (!this.sourcePaused || !this.source) return;
    this.clearHold();
    this.sourcePaused = false;
    this.source.resume();
  }

  /** Whether the source may still be read further into the buffer. */
  protected roomAhead(): boolean {
    return this.readableLength < Math.max(this.readAhead, this.readableHighWaterMark);
  }

  private attach(source: Readable): void {
    this.sourcePaused = false;
    // An error kept from before this listener (stream.errored) is reported by 'error' anyway
    // on the next tick of a destroyed stream; readable streams re-emit nothing, so check it.
    source.on('data', (chunk: Buffer) => {
      if (source !== this.source) return;
      this.onOriginBytes?.(chunk.length);
      if (this.opts.size !== null && this.received + chunk.length > this.opts.size) {
        this.received += chunk.length;
        return this.fail(new FetchError('length', `body longer than ${this.opts.lengthName} (more than ${this.opts.size} bytes)`, { retryable: false }));
      }
      if (this.received + chunk.length >= this.mainStop && this.mainStop < this.sourceEnd) {
        // The cut: the bytes after it are the segments'.
        if (this.mainStop > this.received) this.deliver(chunk.subarray(0, this.mainStop - this.received));
        return this.handOver();
      }
      if (this.spill || (!this.roomAhead() && this.spillRoom())) return this.spillChunk(chunk, source);
      this.deliver(chunk);
      // A source whose last byte is in is left to end (its connection is then free), full or not.
      if (!this.roomAhead() && this.received < this.sourceEnd && !this.spillRoom()) {
        this.holdSource(source);
        this.spillArea?.wakeOnRoom(this.spillWake); // spilling allowed, the area full: on when it has room
      }
    });
    source.once('end', () => {
      if (source !== this.source) return;
      this.clearHold();
      if (this.opts.size !== null && this.received < this.sourceEnd) return this.cut(shortBodyError(this.received, this.opts.size, this.opts.lengthName));
      if (this.opts.size !== null && this.received < this.mainStop) {
        // A continuation asked before the segments were given up: the rest, uncharged.
        this.source = null;
        return this.reopen(false);
      }
      if (this.ranged) return this.handOver();
      this.source = null;
      this.finish();
    });
    source.on('error', (err: unknown) => {
      if (source !== this.source) return;
      this.cut(this.opts.toError(err));
    });
    if (source.errored) queueMicrotask(() => source.emit('error', source.errored));
  }

  /** `readSlower`: held because the reader is slower than the origin (not for want of spill room). */
  private holdSource(source: Readable, readSlower = true): void {
    if (this.sourcePaused) return;
    this.sourcePaused = true;
    source.pause();
    this.resetPace(); // read slower than it arrives: a later wait is measured afresh
    if (readSlower) this.emit('held');
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
    this.noteRequests();
  }

  /** Node asks _read for more only once until a push: a body parked since then would never be asked again. */
  protected pullIfIdle(): void {
    if (this.parked || this.spill) this._read();
  }

  override _read(): void {
    if (this.parked) {
      this.parked = false;
      this.reopen(false);
    } else if (!this.spill) this.resumeSource();
    this.readBack();
  }

  /** Lets the current response go (its late errors ignored). */
  protected dropSource(): void {
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
      this.noteRequests();
      return;
    }
    if (!canContinue || this.continuations >= this.opts.retries) {
      this.destroy(this.finalError(error));
      return;
    }
    this.reopen(true);
  }

  protected finalError(error: FetchError): FetchError {
    return wholeBodyError(error, this.received, this.opts, this.continuations + 1);
  }

  protected reopen(charged: boolean): void {
    if (this.reopening || this.destroyed) return;
    this.reopening = true;
    if (charged) this.continuations++;
    const delay = charged ? this.opts.backoff(this.continuations) : 0;
    const go = async (): Promise<void> => {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      if (this.destroyed) return;
      if (this.opts.signal?.aborted) throw new FetchError('aborted', 'cancelled', { retryable: false });
      const end = this.mainStop;
      return this.opts.resume!(this.received, end, this.opts.signal).then((next) => {
        this.reopening = false;
        if (this.destroyed) {
          next.on('error', noop);
          next.destroy();
          return;
        }
        this.source = next;
        this.sourceEnd = end;
        this.attach(next);
        this.noteRequests();
      });
    };
    this.noteRequests();
    go().catch((err: unknown) => {
      this.reopening = false;
      this.noteRequests();
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
    this.stopWatchingSignal();
    void this.spill?.remove();
    this.spill = null;
    this.dropSource();
    this.noteRequests();
    callback(error);
  }
}
