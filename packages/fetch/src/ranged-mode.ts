/**
 * When an archive's large bodies are fetched as several ranges at once (ahead.ts). When the
 * consumer has waited on the body it reads (its bytes arrive slower than it reads them), more
 * connections may bring them faster (a distant origin, or one capping each connection), or not
 * (a busy machine, a saturated link). A probe tells which: the rate at which the archive's bytes
 * arrive from its origins is measured for a moment, then again with two more connections (two
 * segments of the body, or two bodies ahead filling their reservations); only if bytes arrive
 * half as fast again with them is ranged mode kept on, else the next probe waits (5 s,
 * doubling). Measured where the bytes arrive, not at the consumer: the probe's segments hold
 * bytes the consumer reaches only once the main response has brought its slice, seconds later
 * from a capped origin (docs/engine.md#fetching-ahead). A body read as fast as it arrives (its
 * read-ahead fills) turns ranged mode off.
 */

/**
 * Ranges of a body fetched on connections of their own last about this long each at the rate
 * one connection brought before the probe: long enough that a request's round trip is little
 * of it, short enough that the connections are still all busy near the end of a body.
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
  /** Opens segments while ranged mode allows (`segmentsWanted`, `maySegment`). */
  offerSegments(): void;
  /** Lets up to `n` bodies ahead, read in part, fill their reservations; how many it did. */
  raiseProbeLeads(n: number): number;
  /** Ranged mode went on, or (`off`) off: the bodies ahead read as far as it now says. */
  leadsChanged(off: boolean): void;
  pumpSoon(): void;
}

export type RangedState = 'off' | 'measuring' | 'probing' | 'on';

interface Probe {
  /** When this stage began (the measure before, or the probe), and the bytes read by then. */
  since: number;
  arrived: number;
  /** Bytes per ms that arrived before the probe's connections (0: being measured). */
  before: number;
  segments: number;
  timer: NodeJS.Timeout;
}

export class RangedMode {
  /** 'on': the consumer waits on the network, and more connections bring bytes faster. */
  state: RangedState = 'off';
  /** Bytes of each range (a slice until a probe measured the rate of one connection). */
  rangeBytes: number;
  private probe: Probe | null = null;
  private noProbeUntil = 0;
  private probeRetryMs = PROBE_RETRY_MS;

  constructor(
    private readonly slice: number,
    private readonly host: RangedModeHost,
  ) {
    this.rangeBytes = slice;
  }

  /** Segments are opened now (a probe's, or ranged mode's). */
  get segmentsWanted(): boolean {
    return this.state === 'probing' || this.state === 'on';
  }

  /** Whether one more segment may be opened (a probe adds only PROBE_WIDTH). */
  maySegment(): boolean {
    return !(this.probe && this.probe.segments >= PROBE_WIDTH);
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
  }

  /** The body being read waits on its origin: measure the arrival rate, then try two more connections (see the top of this file). */
  private startProbe(): void {
    this.state = 'measuring';
    const timer = setInterval(() => this.checkProbe(), PROBE_TICK_MS);
    timer.unref();
    this.probe = { since: performance.now(), arrived: this.host.arrived(), before: 0, segments: 0, timer };
  }

  private checkProbe(): void {
    const probe = this.probe;
    if (!probe) return;
    const now = performance.now();
    const elapsed = now - probe.since;
    const read = this.host.arrived() - probe.arrived;
    if (this.state === 'measuring') {
      if (elapsed < PROBE_MIN_MS || (read < this.slice && elapsed < BASELINE_MAX_MS)) return;
      Object.assign(probe, { since: now, arrived: probe.arrived + read, before: read / elapsed });
      this.rangeBytes = Math.round(Math.min(this.slice, Math.max(MIN_RANGE_BYTES, probe.before * RANGE_MS)));
      this.state = 'probing';
      this.host.offerSegments();
      if (probe.segments === 0) {
        // Nothing to split: the next bodies read in part fill their reservations instead; none: no probe.
        if (this.host.raiseProbeLeads(PROBE_WIDTH) === 0) return this.off();
      }
      return this.host.pumpSoon();
    }
    if (elapsed < PROBE_MIN_MS || (read < (PROBE_WIDTH + 1) * this.slice && elapsed < PROBE_MAX_MS)) return;
    if (read / elapsed >= PROBE_GAIN * probe.before) {
      this.endProbe();
      this.state = 'on';
      this.probeRetryMs = PROBE_RETRY_MS;
      this.host.leadsChanged(false);
      this.host.pumpSoon();
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
    this.state = 'off';
    this.host.leadsChanged(true);
  }
}
