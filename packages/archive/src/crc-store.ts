import { blockDigestsOf, claimBlockDigests, type BlockClaim, type Db, forgetLearnedSums, recordCrcCheckpoint, recordCrcs, recordMacs } from '@ap/db';
import type { Logger } from '@ap/log';
import type { CrcCheckpoint, EntryMac } from '@ap/zip';

const FLUSH_AT = 2000;
/** MAC checkpoints kept in memory (a SHA-1 state each, about 100 bytes); the oldest go first. */
const MAC_CHECKPOINTS = 10_000;
/** Block digests kept in memory (about 100 bytes each with their keys: some 20 MB); the oldest entries go first. */
const DIGESTS_KEPT = 200_000;

/**
 * Learned CRC-32s and resume checkpoints, written to job_files in batches: a download of
 * 70,000 small entries learns 70,000 CRCs, one UPDATE each would dominate it.
 * job_files.crc32 / crc_prefix are signed INTEGER columns: stored `crc | 0`, read `>>> 0`.
 */
export class CrcStore {
  private crcs = new Map<string, { jobId: string; position: number; crc: number }>();
  private checkpoints = new Map<string, { jobId: string; position: number; state: CrcCheckpoint }>();
  private macs = new Map<string, { jobId: string; position: number; mac: Buffer }>();
  private flushing: Promise<void> = Promise.resolve();
  /**
   * Where an encrypted entry's MAC stood when a download stopped inside it. A SHA-1 state is
   * not something Node can export, so these live in this process only: a resume served by
   * another replica reads the entry's prefix instead (docs/archive-options.md).
   */
  private readonly macCheckpoints = new Map<string, { length: number; mac: EntryMac }>();
  /** Claimed plaintext block digests of encrypted entries, by job, position and salt generation. */
  private readonly digests = new Map<string, Map<number, Buffer>>();
  private digestsHeld = 0;
  /** Claims waiting for the one in flight: sent together, so bodies checked ahead share round trips. */
  private claimsWaiting: { claim: BlockClaim; done: (held: Buffer) => void; failed: (err: Error) => void }[] = [];
  private claiming = false;

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

  /** An encrypted entry's WinZip AES authentication code (kept as CRCs are). */
  mac(jobId: string, position: number, mac: Buffer): void {
    this.macCheckpoints.delete(`${jobId}:${position}`);
    this.macs.set(`${jobId}:${position}`, { jobId, position, mac });
    if (this.macs.size >= FLUSH_AT) void this.flush();
  }

  macCheckpoint(jobId: string, position: number, length: number, mac: EntryMac): void {
    const key = `${jobId}:${position}`;
    const held = this.macCheckpoints.get(key);
    if (held && held.length >= length) return;
    this.macCheckpoints.delete(key);
    this.macCheckpoints.set(key, { length, mac: mac.copy() });
    if (this.macCheckpoints.size > MAC_CHECKPOINTS) this.macCheckpoints.delete(this.macCheckpoints.keys().next().value!);
  }

  /** The furthest MAC checkpoint of an entry, as a copy to continue. */
  macCheckpointOf(jobId: string, position: number): { length: number; mac: EntryMac } | null {
    const held = this.macCheckpoints.get(`${jobId}:${position}`);
    return held ? { length: held.length, mac: held.mac.copy() } : null;
  }

  /**
   * The origin served other bytes than those learned: what was learned of the file goes, at once,
   * and an encrypted entry (`aesGeneration`: the salt generation that found it) gets a fresh salt.
   */
  async forget(jobId: string, position: number, aesGeneration?: number): Promise<void> {
    const key = `${jobId}:${position}`;
    this.crcs.delete(key);
    this.macs.delete(key);
    this.checkpoints.delete(key);
    this.macCheckpoints.delete(key);
    await this.flush();
    await forgetLearnedSums(this.db, jobId, position, aesGeneration).catch((err: Error) => this.log.warn({ err: err.message }, 'changed file not forgotten'));
  }

  /**
   * Whether an encrypted entry's keystream (salt generation) may encrypt the plaintext block
   * with this digest: it may when that block holds no other digest, and then it claims it, in
   * Postgres, so no replica ever encrypts other bytes there (docs/archive-options.md#changed-origins).
   */
  async claimBlock(jobId: string, position: number, generation: number, block: number, digest: Buffer): Promise<boolean> {
    const key = `${jobId}:${position}:${generation}`;
    if (!this.digests.has(key)) await this.loadBlocks(jobId, [{ position, generation }]);
    const known = this.digests.get(key) ?? new Map<number, Buffer>();
    let held = known.get(block);
    if (!held) {
      held = await new Promise<Buffer>((done, failed) => {
        this.claimsWaiting.push({ claim: { jobId, position, generation, block, digest }, done, failed });
        void this.sendClaims();
      });
      known.set(block, held);
      this.digestsHeld++;
    }
    return held.equals(digest);
  }

  private async sendClaims(): Promise<void> {
    if (this.claiming) return;
    this.claiming = true;
    try {
      while (this.claimsWaiting.length > 0) {
        const batch = this.claimsWaiting.splice(0, 1000);
        try {
          const held = await claimBlockDigests(this.db, batch.map((w) => w.claim));
          batch.forEach((w, i) => w.done(held[i]!));
        } catch (err) {
          for (const w of batch) w.failed(err as Error);
        }
      }
    } finally {
      this.claiming = false;
    }
  }

  /** Reads the claimed digests of the entries not held yet, in one query (a response's entries at once). */
  async loadBlocks(jobId: string, files: readonly { position: number; generation: number }[]): Promise<void> {
    const missing = files.filter((f) => !this.digests.has(`${jobId}:${f.position}:${f.generation}`));
    if (missing.length === 0) return;
    const loaded = await blockDigestsOf(this.db, jobId, missing);
    for (const f of missing) {
      const blocks = loaded.get(f.position)!;
      this.digests.set(`${jobId}:${f.position}:${f.generation}`, blocks);
      this.digestsHeld += blocks.size + 1;
    }
    for (const [key, blocks] of this.digests) {
      if (this.digestsHeld <= DIGESTS_KEPT) break;
      this.digests.delete(key);
      this.digestsHeld -= blocks.size + 1;
    }
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
    const macs = [...this.macs.values()];
    this.crcs.clear();
    this.checkpoints.clear();
    this.macs.clear();
    try {
      await recordCrcs(this.db, crcs);
      await recordMacs(this.db, macs);
      for (const c of checkpoints) await recordCrcCheckpoint(this.db, c.jobId, c.position, c.state);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'stream CRCs not persisted');
    }
  }
}
