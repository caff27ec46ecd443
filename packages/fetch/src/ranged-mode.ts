/**
 * When an archive's large bodies are fetched as several ranges at once (ahead.ts). When the
 * consumer has waited on the body it reads (its bytes arrive slower than it reads them), more
 * connections may bring them faster (a distant origin, or one capping each connection), or not
 * (a busy machine, a saturated link). A probe tells which: the rate at which the body being read
 * arrives is measured for a moment, then the rate at which all the archive's bytes arrive with
 * two more connections (segments of the body, one after another on each; the bodies ahead read
 * their whole reservations from the probe's start, ahead.ts); only if bytes arrive half as fast
 * again is ranged mode kept on, else the next probe waits (5 s, doubling). Measured where the bytes arrive, not at the
 * consumer: the probe's segments hold bytes the consumer reaches only once the main response has
 * brought its slice, seconds later from a capped origin (docs/engine.md#fetching-ahead). A body
 * read as fast as it arrives (its read-ahead, its whole reservation, fills) turns ranged mode off.
 */

/**
 * Ranges of a body fetched on connections of their own last about this long each at the rate
 * one connection brought before the probe: long enough that a request's round trip is little
 * of it, short enough that the connections are still all busy near the end of a body. At most
 * the budget over every connection ranged mode may hold (`maxRangeBytes`): each range is
 * reserved whole until handed on, and slice-sized ranges (a second at 25 MB/s is more) filled
 * the budget with the first eight, so growth's connections found no room and were taken back.
 */
const RANGE_MS = 1000;
const MIN_RANGE_BYTES = 1024 * 1024;

/** Connections a probe adds. */
export const PROBE_WIDTH = 2;
/** How much faster bytes must arrive during a probe than before it for ranged mode to stay on. */
const PROBE_GAIN = 1.5;
/**
 * The arrival rate is measured until a slice has arrived (half a second at most), then with the
 * probe's connections until a slice per connection has arrived (a second at most).
 */
const PROBE_MIN_MS = 100;
const BASELINE_MAX_MS = 500;
const PROBE_MAX_MS = 1000;
const PROBE_TICK_MS = 50;
/** After a probe that found no gain, the next one waits this long, doubling up to the max. */
const PROBE_RETRY_MS = 5000;
const PROBE_RETRY_MAX_MS = 60_000;

/** What the scheduler does for ranged mode. */
export interface RangedModeHost {
  /** Bytes of the archive's bodies that have arrived from their origins so far. */
  arrived(): number;
  /** The same, of the bodies handed to the consumer only (the body being read and those before it). */
  arrivedInTurn(): number;
  /** Opens segments while ranged mode allows (`segmentsWanted`, `maySegment`). */
  offerSegments(): void;
  /** Lets up to `n` bodies ahead, read in part, fill their reservations; how many it did. */
  raiseProbeLeads(n: number): number;
  /** Ranged mode went on, or (`off`) off: the bodies ahead read as far as it now says. */
  leadsChanged(off: boolean): void;
  /** Connections the archive holds now. */
  connections(): number;
  pumpSoon(): void;
}

export type RangedState = 'off' | 'measuring' | 'probing' | 'on';

interface Probe {
  /** When this stage began (the measure before, or the probe), and the bytes read by then. */
  since: number;
  arrived: number;
  /** Bytes per ms that arrived before the probe's connections (0: being measured). */
  before: number;
  /** Segments the probe opened, and the archive's connections when it began (it adds PROBE_WIDTH at most). */
  segments: number;
  connections: number;
  timer: NodeJS.Timeout;
}

/**
 * Once on, connections beyond the archive's concurrency are added GROW_WIDTH at a time while the
 * arrival rate grows with them by at least GROW_GAIN of their share (the rate measured over
 * GROW_WINDOW_MS before and after), up to the origin host's cap: as download managers do,
 * since an origin capping each connection serves more connections faster. One that brings no
 * gain is taken back (its ranges end), and growth stops until ranged mode is on again. A third
 * of their share, not half: on a loaded machine one window's noise (about 10 %) stopped growth
 * at 10 of 16 connections in one run of bench:origins and not in the next; a consumer-bound
 * archive gains nothing at all, and what more connections cost is bounded by the budget.
 */
const GROW_WIDTH = 2;
const GROW_GAIN = 0.3;
const GROW_WINDOW_MS = 1000;
/** New connections' first bytes come a round trip (and a slow start) later: not measured. */
const GROW_SETTLE_MS = 300;
/** After growth found no gain, it is not tried again (for whole bodies) before this long. */
const GROW_RETRY_MS = 10_000;

interface Growth {
  /** When the window began (after GROW_SETTLE_MS), the bytes arrived by then (-1: settling), and the connections held at each tick since. */
  since: number;
  arrived: number;
  connectionsSum: number;
  ticks: number;
  /** The window before the last connections were added: bytes per ms and connections held (0: none yet). */
  before: number;
  connectionsBefore: number;
  timer: NodeJS.Timeout;
}

export class RangedMode {
  /** 'on': the consumer waits on the network, and more connections bring bytes faster. */
  state: RangedState = 'off';
  /** Connections ranges may take beyond the archive's concurrency now (ranged mode's growth). */
  extra = 0;
  private growth: Growth | null = null;
  private noGrowthUntil = 0;
  /** Bytes of each range (a slice until a probe measured the rate of one connection). */
  rangeBytes: number;
  private probe: Probe | null = null;
  private noProbeUntil = 0;
  private probeRetryMs = PROBE_RETRY_MS;

  constructor(
    private readonly slice: number,
    private readonly host: RangedModeHost,
    /** Connections growth may add at most (the host's cap less the archive's concurrency). */
    private readonly maxExtra = 0,
    /** The largest range: the budget over the most connections ranged mode may hold. */
    private readonly maxRangeBytes = slice,
  ) {
    this.rangeBytes = Math.min(slice, maxRangeBytes);
  }

  /** Segments are opened now (a probe's, or ranged mode's). */
  get segmentsWanted(): boolean {
    return this.state === 'probing' || this.state === 'on';
  }

  /** Whether one more segment may be opened (a probe adds only PROBE_WIDTH). */
  maySegment(): boolean {
    // Connections, not segments: a range may be over well within the probe's second (a slice at
    // 25 MB/s), and the probe would then measure its two connections idle for most of it.
    return !(this.probe && this.host.connections() >= this.probe.connections + PROBE_WIDTH);
  }

  segmentAdded(): void {
    if (this.probe) this.probe.segments++;
  }

  /** The body being read waited on its origin. */
  starved(): void {
    if (this.state === 'off' && performance.now() >= this.noProbeUntil) this.startProbe();
  }

  /** The body being read fills its read-ahead: it arrives faster than it is read, not bandwidth-bound (any more). */
  held(): void {
    if (this.state === 'on') return this.off();
    // Under a probe: bytes arrive faster than they are read (new connections filling their
    // buffers would look like a gain), so no gain is what it found.
    if (this.state !== 'off') this.noGain(performance.now());
  }

  close(): void {
    this.endProbe();
    this.endGrowth();
  }

  /**
   * The consumer asked for a body whose response had not come yet: with many small files from a
   * distant origin each connection waits a round trip per file, so more bodies in flight at once
   * may bring them faster; growth finds out (bodies ahead take the connections it adds).
   */
  waitedForBody(): void {
    if (this.state === 'off' && !this.growth && performance.now() >= this.noGrowthUntil) this.startGrowth();
  }

  private startGrowth(): void {
    this.endGrowth();
    if (this.maxExtra <= 0) return;
    const timer = setInterval(() => this.checkGrowth(), PROBE_TICK_MS);
    timer.unref();
    this.growth = { since: performance.now(), arrived: this.host.arrived(), connectionsSum: 0, ticks: 0, before: 0, connectionsBefore: 0, timer };
  }

  private checkGrowth(): void {
    const growth = this.growth;
    if (!growth) return;
    const now = performance.now();
    if (now < growth.since) return; // settling
    if (growth.arrived < 0) {
      // The window begins now, with the bytes arrived by the end of the settling.
      Object.assign(growth, { since: now, arrived: this.host.arrived() });
      return;
    }
    growth.connectionsSum += this.host.connections();
    growth.ticks++;
    const elapsed = now - growth.since;
    if (elapsed < GROW_WINDOW_MS) return;
    const arrived = this.host.arrived();
    const rate = (arrived - growth.arrived) / elapsed;
    const connections = growth.connectionsSum / growth.ticks;
    if (growth.before > 0) {
      const added = connections - growth.connectionsBefore;
      // None could be added (the budget, the host's cap, nothing left to split), or they brought too little: take them back.
      if (added < 1 || rate < growth.before * (1 + (GROW_GAIN * added) / growth.connectionsBefore)) {
        this.extra = Math.max(0, this.extra - GROW_WIDTH);
        this.noGrowthUntil = now + GROW_RETRY_MS;
        return this.endGrowth();
      }
    }
    if (this.extra + GROW_WIDTH > this.maxExtra) return this.endGrowth();
    this.extra += GROW_WIDTH;
    this.host.pumpSoon();
    Object.assign(growth, { since: now + GROW_SETTLE_MS, arrived: -1, connectionsSum: 0, ticks: 0, before: rate, connectionsBefore: connections });
  }

  private endGrowth(): void {
    if (this.growth) clearInterval(this.growth.timer);
    this.growth = null;
  }

  /** The body being read waits on its origin: measure the arrival rate, then try two more connections (see the top of this file). */
  private startProbe(): void {
    this.state = 'measuring';
    const timer = setInterval(() => this.checkProbe(), PROBE_TICK_MS);
    timer.unref();
    this.probe = { since: performance.now(), arrived: this.host.arrivedInTurn(), before: 0, segments: 0, connections: 0, timer };
    this.host.leadsChanged(false);
  }

  private checkProbe(): void {
    const probe = this.probe;
    if (!probe) return;
    const now = performance.now();
    const elapsed = now - probe.since;
    if (this.state === 'measuring') {
      // The body being read alone: the bodies ahead bring their first bytes meanwhile, a burst
      // that would pass for a rate several connections keep up (and hide the probe's gain).
      const read = this.host.arrivedInTurn() - probe.arrived;
      if (elapsed < PROBE_MIN_MS || (read < this.slice && elapsed < BASELINE_MAX_MS)) return;
      Object.assign(probe, { since: now, arrived: this.host.arrived(), before: read / elapsed, connections: this.host.connections() });
      this.rangeBytes = Math.round(Math.min(this.slice, this.maxRangeBytes, Math.max(MIN_RANGE_BYTES, probe.before * RANGE_MS)));
      this.state = 'probing';
      this.host.offerSegments();
      if (probe.segments === 0) {
        // Nothing to split: the next bodies read in part fill their reservations instead; none: no probe.
        if (this.host.raiseProbeLeads(PROBE_WIDTH) === 0) return this.off();
      }
      return this.host.pumpSoon();
    }
    const read = this.host.arrived() - probe.arrived;
    if (elapsed < PROBE_MIN_MS || (read < (PROBE_WIDTH + 1) * this.slice && elapsed < PROBE_MAX_MS)) return;
    if (read / elapsed >= PROBE_GAIN * probe.before) {
      this.endProbe();
      this.state = 'on';
      this.probeRetryMs = PROBE_RETRY_MS;
      this.host.leadsChanged(false);
      this.host.pumpSoon();
      this.startGrowth();
    } else this.noGain(now);
  }

  /** The probe found no gain: off, and the next one waits (longer each time). */
  private noGain(now: number): void {
    this.off();
    this.noProbeUntil = now + this.probeRetryMs;
    this.probeRetryMs = Math.min(2 * this.probeRetryMs, PROBE_RETRY_MAX_MS);
  }

  private endProbe(): void {
    if (this.probe) clearInterval(this.probe.timer);
    this.probe = null;
  }

  private off(): void {
    this.endProbe();
    if (this.state === 'off') return;
    if (this.state === 'on') {
      // Its connections beyond the concurrency end with their ranges.
      this.endGrowth();
      this.extra = 0;
    }
    this.state = 'off';
    this.host.leadsChanged(true);
  }
}
