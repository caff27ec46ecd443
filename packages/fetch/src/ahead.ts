/**
 * Fetching ahead (decisions.md "Fetching many files", issue 14 item 3): an archive's bodies are
 * consumed one after another, in archive order, but requested ahead of their turn, with at
 * most `concurrency` connections busy and at most `budgetBytes` of bodies buffered at once.
 *
 * Every body is given a reservation of the budget before its request opens (of its size, or a
 * short lead when its size is not known yet, set to what it needs once its headers arrive, as
 * far as the budget has room): a body that fits in one slice (budget / concurrency) is read
 * whole into its reservation, and its connection is free for the next request as soon as the
 * body is in; a larger or unsized body reads one slice ahead and then waits for its turn (body.ts closes a
 * connection held back that long before any idle timeout, and continues it by range when read).
 * A reservation is given back when its body has been consumed. So an archive of many small files
 * from a distant origin costs about (files / concurrency) round trips instead of one per file,
 * and the bytes handed out are exactly the bodies, in order.
 *
 * Ranged mode: when the consumer has waited on the body it reads (its bytes arrive slower than
 * it reads them), more connections may bring them faster (a distant or capped origin), or not (a
 * busy machine, a saturated link). A probe tells which: the consumer's pace is measured for a
 * moment, then again with two more connections (two segments of the body, or two bodies ahead
 * filling their reservations); only if it reads half as fast again with them is ranged mode kept
 * on, else the next probe waits (5 s, doubling). Measured at the consumer, not at the sockets
 * (new connections filling their buffers always look fast), and after the wait that started it
 * (a pace measured over the very wait that was noticed would be the low of a passing dip). While it is on, connections go first to the current or next
 * body, if it is large and its origin serves ranges: its bytes not yet asked for are fetched as
 * slice-sized segments on connections of their own (BodyStream.addSegment), each reserved from
 * the budget until handed on; bodies opened further ahead fill their reservations, or let their
 * connection go (and the budget they have not filled) for it, to be continued by range when
 * read. A body read as fast as it arrives (its read-ahead fills) turns ranged mode off.
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

  /** Bytes not reserved now (negative once archives' next bodies opened past it). */
  room(): number {
    return this.bytes - this.used;
  }

  fits(bytes: number): boolean {
    return bytes <= this.room();
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
/** Connections a probe adds. */
const PROBE_WIDTH = 2;
/** How much faster bytes must arrive during a probe than before it for ranged mode to stay on. */
const PROBE_GAIN = 1.5;
/**
 * The consumer's pace is measured until it has read a slice (half a second at most), then with
 * the probe's connections until it has read a slice per connection (a second at most).
 */
const PROBE_MIN_MS = 100;
const BASELINE_MAX_MS = 500;
const PROBE_MAX_MS = 1000;
const PROBE_TICK_MS = 50;
/** After a probe that found no gain, the next one waits this long, doubling up to the max. */
const PROBE_RETRY_MS = 5000;
const PROBE_RETRY_MAX_MS = 60_000;

interface Probe {
  /** When this stage began (the measure before, or the probe), and the bytes read by then. */
  since: number;
  consumed: number;
  /** Bytes per ms the consumer read before the probe's connections (0: being measured). */
  before: number;
  segments: number;
  timer: NodeJS.Timeout;
}

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
  /** A body larger than its reservation: reads only `LEAD_WHILE_FAST` ahead unless ranged mode is on (or probed with it). */
  partial: boolean;
  probeLead: boolean;
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
  /** The consumer waits on the network, and more connections bring bytes faster: large bodies are fetched as several ranges. */
  private ranged: 'off' | 'measuring' | 'probing' | 'on' = 'off';
  private probe: Probe | null = null;
  private noProbeUntil = 0;
  private probeRetryMs = PROBE_RETRY_MS;
  /** Bytes read by the consumer of the bodies given back. */
  private releasedConsumed = 0;
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
    this.endProbe();
    for (const [index, slot] of this.slots) {
      if (slot.taken) continue;
      this.slots.delete(index);
      void slot.opening.then(
        (opened) => this.bodyOf(opened)?.destroy(),
        () => undefined,
      );
    }
  }

  /**
   * A body's reservation: its size up to a slice, or (`size` null: not known before its headers)
   * a short lead, so that requests waiting for their first byte do not hold the budget from others.
   */
  private reserveFor(size: number | null): number {
    return Math.max(Math.min(size ?? LEAD_WHILE_FAST, this.slice), Math.min(BODY_OVERHEAD, this.slice));
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

  /** As much of `bytes` as both budgets have room for now. */
  private roomFor(bytes: number): number {
    return Math.max(0, Math.min(bytes, this.budgetBytes - this.reserved, this.shared?.room() ?? Infinity));
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
    if ((this.ranged !== 'probing' && this.ranged !== 'on') || this.closed) return;
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
        if (this.probe && this.probe.segments >= PROBE_WIDTH) return;
        const bytes = body.addSegment(this.slice);
        if (bytes === 0) break;
        if (this.probe) this.probe.segments++;
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
      probeLead: false,
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
      if (slot.taken && slot.body) this.releasedConsumed += consumedOf(slot.body);
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
          // Now that the length is known (or known to be unknown: a slice), reserve what the body needs.
          const left = body.fetched ? body.readableLength : remainingOf(opened, body);
          const needed = left === null ? this.slice : this.reserveFor(left);
          const change = needed < slot.reserved ? needed - slot.reserved : this.roomFor(needed - slot.reserved);
          this.reserve(change);
          slot.reserved += change;
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
            if (slot.taken && !this.closed && this.ranged === 'off' && performance.now() >= this.noProbeUntil) this.startProbe();
          });
          // Read as fast as it arrives: not bandwidth-bound (any more). A probe under way decides by itself.
          body.on('held', () => {
            if (slot.taken && this.ranged === 'on') this.rangedOff();
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
    return this.ranged === 'on' || slot.probeLead ? full : Math.min(LEAD_WHILE_FAST, full);
  }

  /** Bodies opened ahead, not yet read, and larger than their reservation, in archive order. */
  private *partialAhead(): Generator<Slot<T> & { body: BodyStream }> {
    for (const slot of this.held.values()) {
      if (slot.partial && !slot.taken && !slot.released && slot.body instanceof BodyStream) yield slot as Slot<T> & { body: BodyStream };
    }
  }

  /** Partial bodies ahead read ahead as far as `leadOf` now says. */
  private setLeads(): void {
    for (const slot of this.partialAhead()) slot.body.readAhead = this.leadOf(slot);
  }

  /** Bytes the consumer has read so far. */
  private consumed(): number {
    let sum = this.releasedConsumed;
    for (const slot of this.held.values()) if (slot.taken && slot.body) sum += consumedOf(slot.body);
    return sum;
  }

  /** The body being read waits on its origin: measure its pace, then try two more connections (see the top of this file). */
  private startProbe(): void {
    this.ranged = 'measuring';
    const timer = setInterval(() => this.checkProbe(), PROBE_TICK_MS);
    timer.unref();
    this.probe = { since: performance.now(), consumed: this.consumed(), before: 0, segments: 0, timer };
  }

  private checkProbe(): void {
    const probe = this.probe;
    if (!probe) return;
    const now = performance.now();
    const elapsed = now - probe.since;
    const read = this.consumed() - probe.consumed;
    if (this.ranged === 'measuring') {
      if (elapsed < PROBE_MIN_MS || (read < this.slice && elapsed < BASELINE_MAX_MS)) return;
      Object.assign(probe, { since: now, consumed: probe.consumed + read, before: read / elapsed });
      this.ranged = 'probing';
      this.offerSegments();
      if (probe.segments === 0) {
        // Nothing to split: the next bodies read in part fill their reservations instead; none: no probe.
        const ahead = [...this.partialAhead()].slice(0, PROBE_WIDTH);
        if (ahead.length === 0) return this.rangedOff();
        for (const slot of ahead) {
          slot.probeLead = true;
          slot.body.readAhead = this.leadOf(slot);
        }
      }
      return this.pumpSoon();
    }
    if (elapsed < PROBE_MIN_MS || (read < (PROBE_WIDTH + 1) * this.slice && elapsed < PROBE_MAX_MS)) return;
    if (read / elapsed >= PROBE_GAIN * probe.before) {
      this.endProbe();
      this.ranged = 'on';
      this.probeRetryMs = PROBE_RETRY_MS;
      this.setLeads();
      this.pumpSoon();
    } else {
      this.rangedOff();
      this.noProbeUntil = now + this.probeRetryMs;
      this.probeRetryMs = Math.min(2 * this.probeRetryMs, PROBE_RETRY_MAX_MS);
    }
  }

  private endProbe(): void {
    if (this.probe) clearInterval(this.probe.timer);
    this.probe = null;
  }

  private rangedOff(): void {
    this.endProbe();
    if (this.ranged === 'off') return;
    this.ranged = 'off';
    for (const slot of this.held.values()) slot.probeLead = false;
    this.setLeads();
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

/** Bytes of a body its consumer has read. */
function consumedOf(body: Readable): number {
  return body instanceof BodyStream ? body.received - body.readableLength : 0;
}

function wholeFits(opened: unknown, body: BodyStream, reserved: number): boolean {
  const left = remainingOf(opened, body);
  return left !== null && left <= reserved;
}
