// One packer at a time per bin (and per segment of a segmented bin, docs/segments.md). Queue delivery is at-least-once (a stalled worker's job is
// handed to another, the reconciler re-adds work that looks lost), so a bin can reach two
// packers. A lease in Postgres, renewed by the holder's heartbeat, makes the second one wait
// instead of fetching and uploading the same bytes again beside the first: two writers of one
// object key, and two writers of the bin's resume records. Times are the database's, so the
// workers' clocks do not matter.
import { randomUUID } from 'node:crypto';
import { DelayedError, type Job } from 'bullmq';
import {
  type Db,
  type SegmentRef,
  binLeaseRemainingMs,
  releaseBinLease,
  releaseSegmentLease,
  renewBinLease,
  renewSegmentLease,
  segmentLeaseRemainingMs,
  takeBinLease,
  takeSegmentLease,
} from '@ap/db';

/** Another packer holds the bin's lease: this delivery should come back after `retryInMs`. */
export class BinBusy extends Error {
  constructor(readonly retryInMs: number) {
    super('the bin is being packed by another worker');
  }
}

/** The bin stopped being this packer's (cancelled, retried, or its lease taken over). */
export class LeaseLost extends Error {
  constructor() {
    super('the bin is no longer held by this worker');
  }
}

/** How often the holder renews its lease: well inside the lease, so one late tick is harmless. */
export function renewEvery(leaseMs: number): number {
  return Math.max(200, Math.min(15_000, Math.floor(leaseMs / 3)));
}

/** What a lease is taken on: a bin, or one segment of a segmented bin (the same rules). */
interface LeaseRecord {
  take(owner: string, leaseMs: number): Promise<boolean>;
  remainingMs(): Promise<number | null>;
  renew(owner: string, leaseMs: number): Promise<boolean>;
  release(owner: string): Promise<void>;
}

export class Lease {
  readonly owner = randomUUID();

  constructor(
    private readonly record: LeaseRecord,
    private readonly leaseMs: number,
  ) {}

  /**
   * Takes it (pending, or processing under a lease that ran out) and marks it processing.
   * False when it is not to be packed under this attempt (finished, failed, superseded);
   * BinBusy while another packer's lease runs.
   */
  async acquire(): Promise<boolean> {
    if (await this.record.take(this.owner, this.leaseMs)) return true;
    const remainingMs = await this.record.remainingMs();
    if (remainingMs === null) return false;
    // A little past the lease's end, so a holder that died is surely out of time.
    throw new BinBusy(Math.ceil(remainingMs) + 250);
  }

  /** Extends the lease; false when it is no longer this packer's. */
  async renew(): Promise<boolean> {
    return this.record.renew(this.owner, this.leaseMs);
  }

  /** Lets the next delivery take it at once (after a failure it will retry). */
  async release(): Promise<void> {
    await this.record.release(this.owner);
  }
}

/** The lease on a bin packed whole (or finished after its segments). */
export const binLease = (db: Db, bin: { zipId: string; attempt: number }, leaseMs: number) =>
  new Lease(
    {
      take: (owner, ms) => takeBinLease(db, bin, owner, ms),
      remainingMs: () => binLeaseRemainingMs(db, bin),
      renew: (owner, ms) => renewBinLease(db, bin, owner, ms),
      release: (owner) => releaseBinLease(db, bin.zipId, owner),
    },
    leaseMs,
  );

/** The lease on one segment of a segmented bin; renewing it fails once its bin has ended (fail-fast). */
export const segmentLease = (db: Db, segment: SegmentRef, leaseMs: number) =>
  new Lease(
    {
      take: (owner, ms) => takeSegmentLease(db, segment, owner, ms),
      remainingMs: () => segmentLeaseRemainingMs(db, segment),
      renew: (owner, ms) => renewSegmentLease(db, segment, owner, ms),
      release: (owner) => releaseSegmentLease(db, segment, owner),
    },
    leaseMs,
  );

/**
 * A lease renewed while work runs: `signal` fires when the lease is lost (LeaseLost) or the
 * packer stops (handing the work back), and `abort` fires it on a failure.
 */
export function holdLease(lease: Lease, leaseMs: number, stopping: AbortSignal | undefined) {
  const controller = new AbortController();
  const heartbeat = setInterval(() => {
    void lease
      .renew()
      .then((held) => held || controller.abort(new LeaseLost()))
      .catch(() => undefined);
  }, renewEvery(leaseMs));
  const handBack = () => controller.abort(stopping?.reason);
  stopping?.addEventListener('abort', handBack, { once: true });
  if (stopping?.aborted) handBack(); // stopped while the lease was being taken
  return {
    signal: controller.signal,
    abort: (reason: unknown) => controller.abort(reason),
    stop() {
      clearInterval(heartbeat);
      stopping?.removeEventListener('abort', handBack);
    },
  };
}

/** A busy bin's queue message goes back to the queue until the lease can have run out. */
export async function deferWhileBusy(message: Job, token: string | undefined, busy: BinBusy): Promise<never> {
  await message.moveToDelayed(Date.now() + busy.retryInMs, token);
  throw new DelayedError();
}
