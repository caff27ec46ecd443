// One entry's CRC-32, learned once per process however many responses need it
// (docs/engine.md#stream-ranges): the pieces the responses send (taps) and the pieces read only
// to hash them (fetches, several at once) join from byte 0 with crc32Combine. A byte read only
// to be hashed is read once: gaps are what no piece, tap or fetch covers.
import { crc32, crc32Combine, type CrcCheckpoint } from '@ap/zip';
import { CrcTap, type CrcPiece, type TapOwner } from './crc-tap';

/** What an entry's work needs from its process (crc-work.ts). */
export interface EntryCrcHost {
  readonly siblingWaitMs: number;
  readonly patienceMs: number;
  /** The size of one read of a gap, given the gap's length. */
  chunkOf(gapLength: number): number;
  /** Queues a read of body bytes [from, to) for hashing; `hash` is given its chunks, in order. */
  read(from: number, to: number, signal: AbortSignal, hash: (chunk: Buffer) => void): Promise<void>;
  /** The CRC of a longer prefix is known (stored as a checkpoint), or the whole CRC. */
  progressed(prefix: CrcCheckpoint, whole: boolean): void;
}

/** A response that needs the entry's CRC: `needed` says its bytes wait for it now. */
export interface CrcWaiter {
  readonly promise: Promise<number>;
  needed(): Promise<number>;
  release(): void;
}

interface Waiter {
  due: boolean;
  resolve: (crc: number) => void;
  reject: (err: Error) => void;
}

const WATCH_MS = 250;
/** A slice counted on that has not begun, or sent nothing, for this long is read instead. */
const STALLED_MS = 3000;
/** A slice's rate is judged after it has run this long. */
const RATE_AFTER_MS = 1000;

export class EntryCrc implements TapOwner {
  private prefix: CrcCheckpoint;
  whole: number | null = null;
  private pieces: CrcPiece[] = [];
  private readonly taps = new Set<CrcTap>();
  private readonly fetches = new Map<number, { from: number; to: number }>();
  private readonly waiters = new Set<Waiter>();
  private abort: AbortController | null = null;
  private planTimer: NodeJS.Timeout | null = null;
  /** When the first response wanted the CRC (the sibling wait counts from then). */
  private firstWantAt: number | null = null;
  private watchTimer: NodeJS.Timeout | null = null;
  /** Taps the last plan counted on. */
  private relied = new Set<CrcTap>();

  constructor(
    private readonly host: EntryCrcHost,
    readonly size: number,
    seed: CrcCheckpoint | null,
  ) {
    this.prefix = seed && seed.length <= size ? seed : { length: 0, crc: 0 };
    if (this.prefix.length === size) this.whole = this.prefix.crc;
  }

  /** The furthest prefix whose CRC is known. */
  get checkpoint(): CrcCheckpoint {
    return this.prefix;
  }

  /** Whether nothing is under way: the entry may be dropped from memory. */
  get idle(): boolean {
    return this.taps.size === 0 && this.fetches.size === 0 && this.waiters.size === 0;
  }

  seed(checkpoint: CrcCheckpoint | null): void {
    if (checkpoint && checkpoint.length > this.prefix.length && checkpoint.length <= this.size) {
      this.prefix = checkpoint;
      this.advance();
    }
  }

  /** A body slice [from, to) a response is about to send: hashed as it passes. */
  tap(from: number, to: number): CrcTap {
    const tap = new CrcTap(this, from, to);
    if (this.whole !== null) {
      tap.detached = true;
      return tap;
    }
    // Pieces meet where one starts or ends: each tap is cut at the others' edges it has not passed.
    for (const other of this.taps) {
      other.cutAt(from);
      tap.cutAt(other.pieceFrom);
    }
    for (const p of this.pieces) tap.cutAt(p.to);
    tap.cutAt(this.prefix.length);
    this.taps.add(tap);
    return tap;
  }

  /** A waiter for the whole CRC; the work starts after a short wait for sibling ranges, or at once when needed. */
  want(signal: AbortSignal): CrcWaiter {
    if (this.whole !== null) {
      const known = Promise.resolve(this.whole);
      return { promise: known, needed: () => known, release: () => undefined };
    }
    let waiter!: Waiter;
    const promise = new Promise<number>((resolve, reject) => (waiter = { due: false, resolve, reject }));
    promise.catch(() => undefined);
    this.waiters.add(waiter);
    const release = () => {
      if (!this.waiters.delete(waiter)) return;
      signal.removeEventListener('abort', release);
      waiter.reject(new Error('no longer needed'));
      if (this.waiters.size === 0) this.stop();
    };
    signal.addEventListener('abort', release, { once: true });
    this.schedule(false);
    return {
      promise,
      needed: () => {
        if (!waiter.due && this.waiters.has(waiter)) {
          waiter.due = true;
          this.schedule(true);
        }
        return promise;
      },
      release,
    };
  }

  pieceOf(_tap: CrcTap, piece: CrcPiece): void {
    this.addPiece(piece);
  }

  tapEnded(tap: CrcTap): void {
    this.taps.delete(tap);
    // Where it stopped is an edge the others cut at.
    for (const other of this.taps) other.cutAt(tap.at);
    if (this.relied.has(tap)) this.plan();
  }

  private addPiece(piece: CrcPiece): void {
    if (this.whole !== null || piece.from < this.prefix.length) return;
    this.pieces.push(piece);
    for (const tap of this.taps) tap.cutAt(piece.to);
    this.advance();
  }

  /** Joins the pieces that start where the known prefix ends. */
  private advance(): void {
    const before = this.prefix.length;
    for (;;) {
      let best: CrcPiece | null = null;
      for (const p of this.pieces) if (p.from === this.prefix.length && (!best || p.to > best.to)) best = p;
      if (!best) break;
      this.prefix = { length: best.to, crc: crc32Combine(this.prefix.crc, best.crc, best.to - best.from) };
    }
    this.pieces = this.pieces.filter((p) => p.from >= this.prefix.length);
    if (this.prefix.length === before && this.whole === null && this.prefix.length < this.size) return;
    if (this.prefix.length === this.size) this.finish(this.prefix.crc);
    else this.host.progressed(this.prefix, false);
  }

  /** A response learned the whole CRC on its own (a body tracked from byte 0 or a checkpoint). */
  learned(crc: number): void {
    this.finish(crc);
  }

  private finish(crc: number): void {
    if (this.whole !== null) return;
    this.whole = crc;
    this.host.progressed({ length: this.size, crc }, true);
    this.pieces = [];
    for (const tap of this.taps) tap.detached = true;
    this.taps.clear();
    this.clearTimers();
    for (const w of this.waiters) w.resolve(crc);
    this.waiters.clear();
  }

  private fail(err: Error): void {
    for (const w of this.waiters) w.reject(err);
    this.waiters.clear();
    this.stop();
  }

  /** Nobody waits: reads in flight stop (what they hashed is kept). */
  private stop(): void {
    this.clearTimers();
    this.abort?.abort();
    this.abort = null;
  }

  private clearTimers(): void {
    if (this.planTimer) clearTimeout(this.planTimer);
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.planTimer = this.watchTimer = null;
  }

  private schedule(due: boolean): void {
    if (this.whole !== null) return;
    // A response waits: taps counted on that stall, or would take long, are read instead.
    if (due) this.watchTimer ??= setInterval(() => this.watch(), WATCH_MS).unref();
    if (this.planTimer) return;
    // Download managers open their ranges within moments of each other, so the first plan waits
    // that long for their taps (which cover more than a read would), even for a response that waits.
    const wait = this.firstWantAt === null ? this.host.siblingWaitMs : this.firstWantAt + this.host.siblingWaitMs - performance.now();
    this.firstWantAt ??= performance.now();
    if (wait <= 0) return this.plan();
    this.planTimer = setTimeout(() => {
      this.planTimer = null;
      this.plan();
    }, wait).unref();
  }

  private watch(): void {
    const now = performance.now();
    let cut = false;
    for (const tap of this.relied) {
      if (tap.ended || tap.detached) continue;
      // A slice not begun a moment after its response asked for it is far behind in that
      // response (a whole download's later body): it is read instead.
      const unstarted = tap.startedAt === null && now - tap.openedAt > STALLED_MS;
      const stalled = tap.startedAt !== null && now - tap.lastProgressAt > STALLED_MS;
      const running = tap.startedAt === null ? 0 : tap.lastProgressAt - tap.startedAt;
      const slow = running > RATE_AFTER_MS && ((tap.to - tap.at) * running) / (tap.at - tap.from) > this.host.patienceMs;
      if (unstarted || stalled || slow) {
        tap.detach();
        this.taps.delete(tap);
        for (const other of this.taps) other.cutAt(tap.at);
        cut = true;
      }
    }
    if (cut) this.plan();
  }

  /** Walks from the known prefix to the end: what covers each stretch, and reads for the gaps. */
  private plan(): void {
    if (this.whole !== null || this.waiters.size === 0) return;
    const relied = new Set<CrcTap>();
    const gaps: [number, number][] = [];
    const passed = new Set<CrcTap>();
    let p = this.prefix.length;
    while (p < this.size) {
      const piece = this.pieces.filter((x) => x.from === p).sort((a, b) => b.to - a.to)[0];
      if (piece) {
        p = piece.to;
        continue;
      }
      const fetch = this.fetches.get(p);
      if (fetch) {
        p = fetch.to;
        continue;
      }
      // A tap hashing from p, or one that will reach p (cut there when it does).
      const tap = [...this.taps].find((t) => !t.detached && p < t.to && (t.pieceFrom === p || (t.pieceFrom < p && t.at <= p)));
      if (tap) {
        relied.add(tap);
        tap.cutAt(p);
        p = tap.to;
        continue;
      }
      // A tap already past p goes on from where it is now: the gap ends there.
      let q = this.size;
      for (const t of this.taps) {
        if (t.detached) continue;
        if (t.pieceFrom < p && t.at > p && t.at < t.to) {
          passed.add(t);
          q = Math.min(q, t.at);
        } else if (t.pieceFrom > p) q = Math.min(q, t.pieceFrom);
      }
      for (const x of this.pieces) if (x.from > p) q = Math.min(q, x.from);
      for (const f of this.fetches.values()) if (f.from > p) q = Math.min(q, f.from);
      gaps.push([p, q]);
      p = q;
    }
    this.relied = relied;
    for (const t of passed) t.cutAt(t.at);
    for (const [start, to] of gaps) {
      // Cuts made just now may have joined the prefix past a gap's start.
      const from = Math.max(start, this.prefix.length);
      if (from >= to || this.whole !== null) continue;
      const chunk = this.host.chunkOf(to - from);
      for (let a = from; a < to; a += chunk) this.read(a, Math.min(to, a + chunk));
    }
  }

  private read(from: number, to: number): void {
    this.fetches.set(from, { from, to });
    for (const tap of this.taps) {
      tap.cutAt(from);
      tap.cutAt(to);
    }
    let at = from;
    let crc = 0;
    const signal = (this.abort ??= new AbortController()).signal;
    const hash = (chunk: Buffer) => {
      const n = Math.min(chunk.length, to - at);
      crc = crc32(n === chunk.length ? chunk : chunk.subarray(0, n), crc);
      at += n;
    };
    void this.host.read(from, to, signal, hash).then(
      () => {
        this.fetches.delete(from);
        if (at !== to) return this.fail(new Error(`CRC read of [${from}, ${to}) ended at ${at}`));
        this.addPiece({ from, to, crc });
        this.plan();
      },
      (err: Error) => {
        this.fetches.delete(from);
        // What was read before it stopped is kept: the next read starts there.
        if (at > from) this.addPiece({ from, to: at, crc });
        if (!signal.aborted) this.fail(err);
      },
    );
  }
}
