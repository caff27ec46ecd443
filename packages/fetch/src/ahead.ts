/**
 * Fetching ahead (decisions.md "Fetching many files", issue 14 item 3): an archive's bodies are
 * consumed one after another, in archive order, but requested ahead of their turn, with at
 * most `concurrency` connections busy and at most `budgetBytes` of bodies buffered at once.
 *
 * Every body is given a reservation of the budget before its request opens: a body known (or,
 * once its headers arrive, found) to fit in one slice (budget / concurrency) is read whole into
 * its reservation, and its connection is free for the next request as soon as the body is in; a
 * larger or unsized body reads one slice ahead and then waits for its turn (body.ts closes a
 * connection held back that long before any idle timeout, and continues it by range when read).
 * A reservation is given back when its body has been consumed. So an archive of many small files
 * from a distant origin costs about (files / concurrency) round trips instead of one per file,
 * and the bytes handed out are exactly the bodies, in order.
 *
 * Ranged mode: when the consumer has waited on the body it reads (its bytes arrive slower than
 * it reads them: a distant or capped origin, not loopback), the archive is taken as
 * bandwidth-bound, and connections go first to the current or next body, if it is large and its
 * origin serves ranges: its bytes not yet asked for are fetched as slice-sized segments on
 * connections of their own (BodyStream.addSegment), each reserved from the budget until handed
 * on. Bodies opened further ahead let their connection go (and the budget they have not filled)
 * for it, to be continued by range when read. A body read as fast as it arrives (its read-ahead
 * fills) ends the bandwidth-bound state.
 *
 * The scheduler does not fetch by itself: each item says how its body is opened (the fetcher's
 * openBody, with whatever validators, ranges and retries the caller uses), so the packer's
 * archive writer and stream downloads share it with their own rules.
 */
import type { Readable } from 'node:stream';
import { BodyStream } from './body';

export interface FetchAheadOptions {
  /** Requests in flight at once (connections busy) per archive. Default 8. */
  concurrency?: number;
  /** Body bytes buffered ahead of the consumer, at most, per archive. Default 64 MiB. */
  budgetBytes?: number;
  /** A budget this archive shares with others being written in the same process. */
  shared?: SharedBudget;
  /** Keep `peakBufferedBytes` up to date (tests, benches): a sum over the bodies per chunk. */
  measure?: boolean;
}

export interface AheadItem<T> {
  /** Bytes the body has, when known before it is opened. */
  size: number | null;
  /** Opens the body (rejects when it cannot be had). */
  open(): Promise<T>;
}

export const FETCH_AHEAD_DEFAULTS = { concurrency: 8, budgetBytes: 64 * 1024 * 1024 };

/**
 * Memory the archives written at once in one process (the API's stream downloads) share for
 * their bodies fetched ahead: each keeps its own budget, and together they reserve at most
 * `bytes`, except that an archive's body next in line is always opened, with a short lead
 * (`LEAD_WHILE_FAST`) when the shared budget is spent. So many downloads at once cost memory up
 * to this plus that lead each, not a whole budget each.
 */
export class SharedBudget {
  private used = 0;
  /** Archives that stopped for want of room, told once when some is given back. */
  private readonly waiting = new Set<() => void>();

  constructor(readonly bytes: number) {}

  /** Bytes reserved now, by every archive together. */
  get usedBytes(): number {
    return this.used;
  }

  fits(bytes: number): boolean {
    return this.used + bytes <= this.bytes;
  }

  /** Reserves (positive) or gives back (negative); archives waiting for room are told of room. */
  change(bytes: number): void {
    this.used += bytes;
    if (bytes >= 0 || this.waiting.size === 0) return;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }

  /** `wake` runs once, the next time room is given back. */
  wakeOnRoom(wake: () => void): void {
    this.waiting.add(wake);
  }

  forget(wake: () => void): void {
    this.waiting.delete(wake);
  }
}

/** Largest chunk a socket hands over at once: a body reading ahead stops this short of its reservation. */
const CHUNK_SLACK = 64 * 1024;
/**
 * What a body opened ahead costs besides its bytes (request, response and stream objects), so
 * that 70,000 tiny bodies are not all opened at once; and a cap on bodies ahead whatever their size.
 */
const BODY_OVERHEAD = 8 * 1024;
const MAX_BODIES_AHEAD = 1024;
/**
 * How far a body larger than its reservation reads ahead of its turn until the archive is
 * found bandwidth-bound: enough to have its first bytes in; from a fast origin, more would only
 * pass the bytes through memory once more, out of the CPU's caches (docs/decisions.md).
 */
const LEAD_WHILE_FAST = 256 * 1024;

interface Slot<T> {
  reserved: number;
  /** Reserved for the body's segments not yet handed on. */
  segmentsReserved: number;
  opening: Promise<T>;
  body: Readable | null;
  /** Connections held (opening, reading its body from the origin, its segments). */
  connections: number;
  /** Handed to the consumer. */
  taken: boolean;
  /** The reservation was given back. */
  released: boolean;
  /** A body larger than its reservation: reads only `LEAD_WHILE_FAST` ahead until bandwidth-bound. */
  partial: boolean;
}

export class FetchAhead<T> {
  readonly concurrency: number;
  readonly budgetBytes: number;
  /** Most body bytes ever buffered at once (with `measure`). */
  peakBufferedBytes = 0;
  private readonly slice: number;
  private readonly slots = new Map<number, Slot<T>>();
  /** Slots whose reservation is held (also once handed out), in archive order. */
  private readonly held = new Map<number, Slot<T>>();
  private nextOpen = 0;
  private nextTake = 0;
  private busy = 0;
  private reserved = 0;
  private closed = false;
  /** The consumer waits on the network: large bodies are worth fetching as several ranges. */
  private bandwidthBound = false;
  private pumpQueued = false;
  /** Bodies opened whose reservation is still held. */
  private readonly live = new Set<Readable>();
  private readonly shared: SharedBudget | null;
  private readonly wake = () => this.pumpSoon();

  constructor(
    private readonly items: readonly AheadItem<T>[],
    private readonly bodyOf: (opened: T) => Readable | null,
    private readonly options: FetchAheadOptions = {},
  ) {
    this.concurrency = Math.max(1, options.concurrency ?? FETCH_AHEAD_DEFAULTS.concurrency);
    this.budgetBytes = Math.max(1, options.budgetBytes ?? FETCH_AHEAD_DEFAULTS.budgetBytes);
    this.slice = Math.max(1, Math.floor(this.budgetBytes / this.concurrency));
    this.shared = options.shared ?? null;
    this.pump();
  }

  /** Reserved bytes of the budget now (bodies buffered or to be). */
  get reservedBytes(): number {
    return this.reserved;
  }

  /** Body bytes sitting in buffers now, not yet consumed. */
  bufferedBytes(): number {
    let sum = 0;
    for (const body of this.live) sum += body instanceof BodyStream ? body.heldBytes : body.readableLength;
    return sum;
  }

  /**
   * The body of item `index`; called once per item, in order. The body's reservation is
   * given back when it has been read to its end or destroyed.
   */
  take(index: number): Promise<T> {
    if (index !== this.nextTake) throw new Error(`fetch-ahead: item ${index} taken out of order (expected ${this.nextTake})`);
    this.nextTake++;
    if (!this.slots.has(index)) this.start(index, true); // the window had not reached it
    const slot = this.slots.get(index)!;
    slot.taken = true;
    // The consumer's own pace governs it now: ordinary backpressure plus what it already holds.
    return slot.opening.finally(() => {
      this.slots.delete(index);
      this.pump();
    });
  }

  /** Drops every body not handed out (their connections are closed). */
  close(): void {
    this.closed = true;
    this.shared?.forget(this.wake);
    for (const [index, slot] of this.slots) {
      if (slot.taken) continue;
      this.slots.delete(index);
      void slot.opening.then(
        (opened) => this.bodyOf(opened)?.destroy(),
        () => undefined,
      );
    }
  }

  private reserveFor(size: number | null): number {
    return size === null ? this.slice : Math.max(Math.min(size, this.slice), Math.min(BODY_OVERHEAD, this.slice));
  }

  private pump(): void {
    this.offerSegments();
    while (!this.closed && this.nextOpen < this.items.length && this.busy < this.concurrency) {
      const index = this.nextOpen;
      if (this.slots.has(index)) {
        this.nextOpen++;
        continue;
      }
      if (index - this.nextTake >= MAX_BODIES_AHEAD) break;
      const want = this.reserveFor(this.items[index]!.size);
      // The budgets hold, except that the body next in line may always be opened.
      if (index > this.nextTake && ((this.reserved > 0 && this.reserved + want > this.budgetBytes) || !this.sharedFits(want))) break;
      this.start(index, false);
    }
  }

  /** Whether the shared budget has room for `bytes`; if not, this archive is pumped when it has. */
  private sharedFits(bytes: number): boolean {
    if (this.shared === null || this.shared.fits(bytes)) return true;
    this.shared.wakeOnRoom(this.wake);
    return false;
  }

  /** Changes this archive's reservations (and the shared budget's). */
  private reserve(bytes: number): void {
    this.reserved += bytes;
    this.shared?.change(bytes);
  }

  /** Pumps once the current event is over (called from within a body's own state changes). */
  private pumpSoon(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /**
   * Bandwidth-bound: the first live body (the one being read, else the next) and then the one
   * after it get segments of their bytes not yet asked for, one slice each, while connections
   * and budget allow; the first may take them from bodies further ahead.
   */
  private offerSegments(): void {
    if (!this.bandwidthBound || this.closed) return;
    let considered = 0;
    const full = () => this.busy >= this.concurrency || this.reserved + this.slice > this.budgetBytes || !this.sharedFits(this.slice);
    for (const [index, slot] of this.held) {
      if (considered >= 2) return;
      if (slot.released) continue;
      const body = slot.body;
      if (!(body instanceof BodyStream)) {
        // Not open yet, or not a body that can be split: the bodies after it wait their turn.
        return;
      }
      considered++;
      // Worth it while a slice or more is not asked for; the first cut needs two (one stays with the main response).
      while (body.unassignedBytes() >= (body.ranged ? 1 : 2 * this.slice)) {
        if (full() && !(considered === 1 && this.reclaimFor(index))) return;
        if (full()) continue;
        const bytes = body.addSegment(this.slice);
        if (bytes === 0) break;
        slot.segmentsReserved += bytes;
        this.reserve(bytes);
      }
    }
  }

  /**
   * Takes a connection (and the budget it has not filled) from the body furthest ahead that can
   * give it: it is continued by range when read. False when none can.
   */
  private reclaimFor(head: number): boolean {
    const ahead = [...this.held].filter(([index, slot]) => index > head && !slot.taken && !slot.released && slot.body instanceof BodyStream && slot.connections > 0);
    for (let i = ahead.length - 1; i >= 0; i--) {
      const slot = ahead[i]![1];
      const body = slot.body as BodyStream;
      if (!body.letGo()) continue;
      const keep = Math.max(body.heldBytes, Math.min(BODY_OVERHEAD, this.slice));
      if (keep < slot.reserved) {
        this.reserve(keep - slot.reserved);
        slot.reserved = keep;
        body.readAhead = keep;
      }
      return true;
    }
    return false;
  }

  private start(index: number, forConsumer: boolean): void {
    const item = this.items[index]!;
    if (index >= this.nextOpen) this.nextOpen = index + 1;
    const want = this.reserveFor(item.size);
    const slot: Slot<T> = {
      // Only the body next in line opens without room in the shared budget: with a short lead.
      reserved: this.sharedFits(want) ? want : Math.min(want, LEAD_WHILE_FAST),
      segmentsReserved: 0,
      opening: null as unknown as Promise<T>,
      body: null,
      connections: 1,
      taken: forConsumer,
      released: false,
      partial: false,
    };
    this.reserve(slot.reserved);
    this.busy++;
    this.held.set(index, slot);
    const holdConnections = (n: number) => {
      const freed = slot.connections - n;
      this.busy -= freed;
      slot.connections = n;
      if (freed > 0) this.pumpSoon();
    };
    const freeConnection = () => {
      if (slot.connections === 0) return;
      holdConnections(0);
      this.pump();
    };
    const release = () => {
      if (slot.released) return;
      slot.released = true;
      this.held.delete(index);
      if (slot.body) this.live.delete(slot.body);
      this.reserve(-(slot.reserved + slot.segmentsReserved));
      slot.segmentsReserved = 0;
      freeConnection();
      this.pump();
    };
    slot.opening = item.open().then(
      (opened) => {
        const body = this.bodyOf(opened);
        if (!body) {
          // Nothing to read (the caller turned a failure into a value).
          release();
          return opened;
        }
        slot.body = body;
        this.live.add(body);
        if (this.closed && !slot.taken) {
          body.destroy();
          release();
          return opened;
        }
        if (body instanceof BodyStream) {
          // Now that the length is known, keep only what the body needs.
          const needed = this.reserveFor(body.fetched ? body.readableLength : remainingOf(opened, body));
          if (needed < slot.reserved) {
            this.reserve(needed - slot.reserved);
            slot.reserved = needed;
          }
          slot.partial = !wholeFits(opened, body, slot.reserved);
          body.readAhead = slot.partial ? this.leadOf(slot) : slot.reserved;
          holdConnections(body.requests);
          body.on('requests', (n: number) => {
            if (!slot.released) holdConnections(n);
          });
          body.on('segment-done', (bytes: number) => {
            if (slot.released) return;
            slot.segmentsReserved -= bytes;
            this.reserve(-bytes);
            this.pumpSoon();
          });
          body.on('starved', () => {
            if (!slot.taken || this.bandwidthBound) return;
            this.bandwidthBound = true;
            // The bodies ahead may now fill their reservations.
            for (const other of this.held.values()) {
              if (other.partial && !other.released && other.body instanceof BodyStream) other.body.readAhead = Math.max(other.body.readAhead, this.leadOf(other));
            }
            this.pumpSoon();
          });
          // Read as fast as it arrives: not bandwidth-bound (any more).
          body.on('held', () => {
            if (slot.taken) this.bandwidthBound = false;
          });
        }
        if (this.options.measure) this.watch(body);
        body.once('close', release);
        body.once('end', release);
        // A body that is not a BodyStream (or never reports its last fetched byte) frees its
        // connection when it ends.
        body.once('end', freeConnection);
        body.once('close', freeConnection);
        this.pump();
        return opened;
      },
      (error: unknown) => {
        release();
        throw error;
      },
    );
    // Reported to the consumer by take(); not an unhandled rejection while it waits its turn.
    slot.opening.catch(() => undefined);
    this.slots.set(index, slot);
  }

  /** How far a body larger than its reservation reads ahead now. */
  private leadOf(slot: Slot<T>): number {
    const full = Math.max(0, slot.reserved - CHUNK_SLACK);
    return this.bandwidthBound ? full : Math.min(LEAD_WHILE_FAST, full);
  }

  private watch(body: Readable): void {
    const measure = () => {
      const now = this.bufferedBytes();
      if (now > this.peakBufferedBytes) this.peakBufferedBytes = now;
    };
    if (body instanceof BodyStream) body.onBuffered = measure;
    const original = body.push.bind(body);
    body.push = (chunk: unknown, encoding?: BufferEncoding) => {
      const more = original(chunk, encoding);
      const now = this.bufferedBytes();
      if (now > this.peakBufferedBytes) this.peakBufferedBytes = now;
      return more;
    };
  }
}

/** Body bytes still to come from the origin plus those buffered, when known. */
function remainingOf(opened: unknown, body: BodyStream): number | null {
  const size = (opened as { size?: number | null }).size;
  if (typeof size !== 'number') return null;
  return Math.max(0, size - body.received + body.readableLength);
}

function wholeFits(opened: unknown, body: BodyStream, reserved: number): boolean {
  const left = remainingOf(opened, body);
  return left !== null && left <= reserved;
}
