// A bin's progress (docs/fair-share.md#progress-of-a-job): the packer counts the ZIP's bytes as they are
// written and records the count at most once per interval, not once per chunk.
import { recordBinProgress, recordSegmentProgress, type Db, type SegmentRef } from '@ap/db';

/** How often a running bin's `bytes_done` is written (about once a second). */
export const PROGRESS_INTERVAL_MS = 1000;

/** Counts bytes as they pass and writes the count on a timer; `stop` ends it (without a last write: completion records the size). */
export class BinProgress {
  private bytes = 0;
  private recorded = 0;
  private writing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly record: (bytesDone: number) => Promise<void>,
    intervalMs = PROGRESS_INTERVAL_MS,
  ) {
    this.timer = setInterval(() => this.flush(), intervalMs);
    this.timer.unref();
  }

  add(bytes: number): void {
    this.bytes += bytes;
  }

  private flush(): void {
    if (this.writing || this.bytes === this.recorded) return;
    const bytes = this.bytes;
    this.writing = this.record(bytes)
      .then(() => void (this.recorded = bytes))
      .catch(() => undefined) // progress is a display: a failed write waits for the next tick
      .finally(() => (this.writing = null));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.writing;
  }
}

/** A bin packed whole: its `bytes_done`. */
export const binProgress = (db: Db, bin: { zipId: string; attempt: number }) => new BinProgress((bytes) => recordBinProgress(db, bin, bytes));

/** One segment of a bin: its own `bytes_done`, and its bin's as the sum over its segments. */
export const segmentProgress = (db: Db, segment: SegmentRef) => new BinProgress((bytes) => recordSegmentProgress(db, segment, bytes));
