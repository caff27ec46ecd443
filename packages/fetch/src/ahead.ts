/**
 * Fetching ahead (docs/engine.md#fetching-ahead): bodies consumed one after another in archive
 * order but requested ahead of their turn, with at most `concurrency` connections busy and at
 * most `budgetBytes` of bodies buffered. Each body holds a reservation of the budget (its size,
 * or a lead while unsized) until consumed; small bodies are read whole and free their
 * connection, larger ones read a slice ahead then wait (body.ts continues them by range). In
 * ranged mode (ranged-mode.ts) a large body's later bytes come as ranges on connections of their
 * own; a body that cannot be split spills to disk beyond a short lead instead (ahead-spill.ts).
 * The scheduler does not fetch by itself: each item says how its body is opened.
 */
import type { Readable } from 'node:stream';
import { BodyStream } from './body';
import { BODY_OVERHEAD, bufferedOf, consumedOf, LEAD_WHILE_FAST, leadOf, MAX_BODIES_AHEAD, remainingOf, reserveFor, spilledOf, sumOver, watchBuffered, wholeFits, type Slot } from './ahead-slot';
import { updateSpill } from './ahead-spill';
import { FETCH_AHEAD_DEFAULTS, type AheadItem, type FetchAheadOptions } from './ahead-options';
import { RangedMode } from './ranged-mode';
import type { SharedBudget } from './shared-budget';

export { SharedBudget } from './shared-budget';
export type { AheadItem, FetchAheadOptions } from './ahead-options';

/** The smallest range the archive's last body is split into (a round trip is little of it at 2 MB/s). */
const TAIL_RANGE_BYTES = 512 * 1024;

export { FETCH_AHEAD_DEFAULTS } from './ahead-options';

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
  /** Whether large bodies are fetched as several ranges (ranged-mode.ts). */
  private readonly mode: RangedMode;
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
    const maxExtra = Math.max(0, (options.hosts?.perHost ?? 0) - this.concurrency);
    this.mode = new RangedMode(this.slice, {
      arrived: () => this.consumed() + this.bufferedBytes() + sumOver(this.live, spilledOf),
      arrivedInTurn: () => this.consumed() + this.bufferedInTurn(),
      offerSegments: () => this.offerSegments(),
      raiseProbeLeads: (n) => {
        const ahead = [...this.partialAhead()].slice(0, n);
        for (const slot of ahead) {
          slot.probeLead = true;
          this.setLead(slot);
        }
        return ahead.length;
      },
      leadsChanged: (off) => {
        if (off) for (const slot of this.held.values()) slot.probeLead = false;
        this.setLeads();
      },
      pumpSoon: () => this.pumpSoon(),
      connections: () => this.busy,
    }, maxExtra, Math.max(1, Math.floor(this.budgetBytes / (this.concurrency + maxExtra))));
    this.pump();
  }

  /** Reserved bytes of the budget now (bodies buffered or to be). */
  get reservedBytes(): number {
    return this.reserved;
  }

  /** Body bytes sitting in buffers now, not yet consumed. */
  bufferedBytes(): number {
    return sumOver(this.live, bufferedOf);
  }

  /**
   * The body of item `index`; called once per item, in order. The body's reservation is
   * given back when it has been read to its end or destroyed.
   */
  take(index: number): Promise<T> {
    if (index !== this.nextTake) throw new Error(`fetch-ahead: item ${index} taken out of order (expected ${this.nextTake})`);
    this.nextTake++;
    const askedAhead = this.slots.has(index);
    if (!askedAhead) this.start(index, true); // the window had not reached it
    const slot = this.slots.get(index)!;
    slot.taken = true;
    // Asked for ahead and still unanswered: a round trip, not the budget, keeps the consumer waiting.
    if (askedAhead && slot.body === null && !slot.released) this.mode.waitedForBody();
    if (slot.partial && !slot.released && slot.body instanceof BodyStream) slot.body.readAhead = this.leadOf(slot);
    return slot.opening.finally(() => {
      this.slots.delete(index);
      this.pump();
    });
  }

  /** Drops every body not handed out (their connections are closed). */
  close(): void {
    this.closed = true;
    this.shared?.forget(this.wake);
    this.mode.close();
    for (const [index, slot] of this.slots) {
      if (slot.taken) continue;
      this.slots.delete(index);
      void slot.opening.then(
        (opened) => this.bodyOf(opened)?.destroy(),
        () => undefined,
      );
    }
  }

  private pump(): void {
    this.offerSegments();
    while (!this.closed && this.nextOpen < this.items.length && this.busy < this.concurrency + this.mode.extra) {
      const index = this.nextOpen;
      if (this.slots.has(index)) {
        this.nextOpen++;
        continue;
      }
      if (index - this.nextTake >= MAX_BODIES_AHEAD) break;
      const want = reserveFor(this.items[index]!.size, this.slice);
      // The budgets and the host's connections hold, except that the body next in line may always be opened.
      if (index > this.nextTake && ((this.reserved > 0 && this.reserved + want > this.budgetBytes) || !this.sharedFits(want) || !this.hostRoom(index))) break;
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

  /** Whether item `index`'s host takes one more connection now; if not, this archive is pumped when it does. */
  private hostRoom(index: number): boolean {
    const host = this.items[index]!.host;
    return host === undefined || !this.options.hosts || this.options.hosts.room(host, this.wake);
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
   * after it get ranges of their bytes not yet asked for (a few MiB each: ranged-mode.ts
   * `rangeBytes`), while connections and budget allow; the first may take them from bodies
   * further ahead. So the connections stay busy whatever the budget holds of a large body.
   * Once every body has been opened, the bodies after those two are split too, in order.
   */
  private offerSegments(): void {
    if (!this.mode.segmentsWanted || this.closed) return;
    let considered = 0;
    for (const [index, slot] of this.held) {
      // The archive's last body is split ever finer towards its end, so that its connections
      // finish together instead of one range's time apart (docs/engine.md#fetching-ahead).
      const last = index === this.items.length - 1;
      let range = this.mode.rangeBytes;
      const full = () => this.busy >= this.concurrency + this.mode.extra || this.reserved + range > this.budgetBytes || !this.sharedFits(range) || !this.hostRoom(index);
      // Once every body has been opened, any of them still arriving is split (the end game): the
      // connections the first ones free are not left idle while the later ones come over one each.
      if (considered >= 2 && this.nextOpen < this.items.length) return;
      if (slot.released) continue;
      const body = slot.body;
      if (!(body instanceof BodyStream)) {
        // Not open yet, or not a body that can be split: the bodies after it wait their turn.
        return;
      }
      considered++;
      // Worth it while a range or more is not asked for; the first cut needs two (one stays with the main response).
      while (body.unassignedBytes() >= (body.ranged ? 1 : 2 * range)) {
        if (last) range = Math.min(this.mode.rangeBytes, Math.max(TAIL_RANGE_BYTES, Math.ceil(body.unassignedBytes() / this.concurrency)));
        if (full() && !(considered === 1 && this.reclaimFor(index))) return;
        if (full()) continue;
        if (!this.mode.maySegment()) return;
        const bytes = body.addSegment(range);
        if (bytes === 0) break;
        this.mode.segmentAdded();
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
    const want = reserveFor(item.size, this.slice);
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
      unsplittable: false,
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
          const needed = left === null ? this.slice : reserveFor(left, this.slice);
          const change = needed < slot.reserved ? needed - slot.reserved : this.roomFor(needed - slot.reserved);
          this.reserve(change);
          slot.reserved += change;
          slot.partial = !wholeFits(opened, body, slot.reserved);
          slot.unsplittable = !body.splittable;
          if (slot.partial) this.setLead(slot);
          else body.readAhead = slot.reserved;
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
            if (slot.taken && !this.closed) this.mode.starved();
          });
          // Read as fast as it arrives: not bandwidth-bound (any more). A probe under way decides by itself.
          body.on('held', () => {
            if (slot.taken) this.mode.held();
          });
        }
        if (this.options.measure) watchBuffered(body, () => (this.peakBufferedBytes = Math.max(this.peakBufferedBytes, this.bufferedBytes())));
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
    return leadOf(slot, this.mode.state);
  }

  /** Bodies opened ahead, not yet read, and larger than their reservation, in archive order. */
  private *partialAhead(): Generator<Slot<T> & { body: BodyStream }> {
    for (const slot of this.held.values()) {
      if (slot.partial && !slot.taken && !slot.released && slot.body instanceof BodyStream) yield slot as Slot<T> & { body: BodyStream };
    }
  }

  /**
   * Bodies read in part (ahead, and the one being read) read ahead as far as `leadOf` now says:
   * their whole reservation from the moment the consumer waited on the network (a probe, or
   * ranged mode), so that no connection waits while the probe measures; and the 'held' of the
   * body being read then means the consumer left a slice unread, not that it paused a moment
   * (the upload between two parts), which ended probes as "no gain" (docs/engine.md#fetching-ahead).
   */
  private setLeads(): void {
    for (const slot of this.partialAhead()) this.setLead(slot);
    for (const slot of this.held.values()) {
      if (!slot.taken || !slot.partial || slot.released || !(slot.body instanceof BodyStream)) continue;
      this.setLead(slot);
    }
  }

  /** A body read in part: whether it spills (giving back memory it then does not need), and how far it reads ahead. */
  private setLead(slot: Slot<T>): void {
    const freed = updateSpill(slot, this.options.spill, this.mode.state, this.slice);
    if (freed > 0) {
      slot.reserved -= freed;
      this.reserve(-freed);
      this.pumpSoon();
    }
    (slot.body as BodyStream).readAhead = this.leadOf(slot);
  }

  /** Body bytes arrived, not yet consumed, of the bodies handed to the consumer. */
  private bufferedInTurn(): number {
    return sumOver(this.takenBodies(), (body) => bufferedOf(body) + spilledOf(body));
  }

  /** Bytes the consumer has read so far. */
  private consumed(): number {
    return this.releasedConsumed + sumOver(this.takenBodies(), consumedOf);
  }

  private *takenBodies(): Generator<Readable> {
    for (const slot of this.held.values()) if (slot.taken && slot.body) yield slot.body;
  }
}
