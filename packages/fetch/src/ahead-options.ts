/** What the fetch-ahead scheduler (ahead.ts) is given: its items and options. */
import type { HostLimits } from './host-limits';
import type { SharedBudget } from './shared-budget';
import type { SpillArea } from './spill-area';

export interface FetchAheadOptions {
  /** Requests in flight at once (connections busy) per archive. Default 8. */
  concurrency?: number;
  /** Body bytes buffered ahead of the consumer, at most, per archive. Default 64 MiB. */
  budgetBytes?: number;
  /** A budget this archive shares with others being written in the same process. */
  shared?: SharedBudget;
  /** Connections per origin host (the fetcher's `hosts`): asked before any beyond the body in turn. */
  hosts?: HostLimits;
  /** Where bodies that cannot be split spill beyond a short lead (ahead-spill.ts); none: they wait. */
  spill?: SpillArea | null;
  /** Keep `peakBufferedBytes` up to date (tests, benches): a sum over the bodies per chunk. */
  measure?: boolean;
}

export interface AheadItem<T> {
  /** Bytes the body has, when known before it is opened. */
  size: number | null;
  /** The origin host it comes from (the per-host connection limit), when known. */
  host?: string;
  /** Opens the body (rejects when it cannot be had). */
  open(): Promise<T>;
}

export const FETCH_AHEAD_DEFAULTS = { concurrency: 8, budgetBytes: 64 * 1024 * 1024 };
