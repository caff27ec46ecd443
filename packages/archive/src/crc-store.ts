import { type Db, recordCrcCheckpoint, recordCrcs } from '@ap/db';
import type { Logger } from '@ap/log';
import type { CrcCheckpoint } from '@ap/zip';

const FLUSH_AT = 2000;

/**
 * Learned CRC-32s and resume checkpoints, written to job_files in batches: a download of
 * 70,000 small entries learns 70,000 CRCs, one UPDATE each would dominate it.
 * job_files.crc32 / crc_prefix are signed INTEGER columns: stored `crc | 0`, read `>>> 0`.
 */
export class CrcStore {
  private crcs = new Map<string, { jobId: string; position: number; crc: number }>();
  private checkpoints = new Map<string, { jobId: string; position: number; state: CrcCheckpoint }>();
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  crc(jobId: string, position: number, crc: number): void {
    const key = `${jobId}:${position}`;
    this.checkpoints.delete(key);
    this.crcs.set(key, { jobId, position, crc });
    if (this.crcs.size >= FLUSH_AT) void this.flush();
  }

  checkpoint(jobId: string, position: number, state: CrcCheckpoint): void {
    const key = `${jobId}:${position}`;
    if (this.crcs.has(key)) return;
    this.checkpoints.set(key, { jobId, position, state });
    void this.flush();
  }

  /** Resolves once everything recorded so far is in Postgres (errors are logged: only a cache). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    const crcs = [...this.crcs.values()];
    const checkpoints = [...this.checkpoints.values()];
    this.crcs.clear();
    this.checkpoints.clear();
    try {
      await recordCrcs(this.db, crcs);
      for (const c of checkpoints) await recordCrcCheckpoint(this.db, c.jobId, c.position, c.state);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'stream CRCs not persisted');
    }
  }
}
