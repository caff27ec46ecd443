// The bytes of any range of a planned ZIP (a layout), built from the origins: headers and
// records rendered from the layout, bodies fetched by range, CRC-32s learned on the way.
// Stream-mode downloads serve ranges with it; the packer resumes a multipart upload with it.
import { setMaxListeners } from 'node:events';
import { crc32, planSlices, renderSegment, type CrcCheckpoint, type EntryMac, type RangePiece, type RangePlan, type SegmentSlice, type ZipLayout } from '@ap/zip';
import { FetchAhead, FetchError, type Fetcher, type FetchAheadOptions, type FileAccess, type OpenedBody } from '@ap/fetch';
import type { BinFileRow } from '@ap/db';
import { hostOf } from './host-of';
import type { CrcStore } from './crc-store';
import { CrcWork, type CrcInput } from './crc-work';
import { crcNeeded, ResponseCrcs } from './response-crcs';
import { DataSource } from './data-source';
import { Readable } from 'node:stream';
import { blockSpan, digestOf, encryptedBody, readWhole, type BlockCheck } from './encrypted-body';
import { KeysAhead } from './keys-ahead';
import { skipTake } from './skip-take';

/** Tunables; tests and benches shrink them. */
export interface LayoutReaderOptions {
  /** A body's CRC checkpoint is persisted every this many bytes (and when reading stops). */
  checkpointEvery: number;
  /** Connections and memory budget for fetching bodies ahead (defaults: 8, 64 MiB). */
  fetchAhead?: FetchAheadOptions;
  /** The process's shared CRC work (the API's, across its downloads); without it, each reader has its own. */
  crcWork?: CrcWork;
}

export const LAYOUT_READER_DEFAULTS: LayoutReaderOptions = { checkpointEvery: 64 << 20 };

/** Non-data bytes are gathered into chunks of about this size (70,000 central records). */
export const BATCH_BYTES = 64 * 1024;
/** Encrypted bodies up to this size are read and checked when opened, ahead of their turn (8 at once: 2 MiB). */
const CHECKED_WHEN_OPENED = 256 * 1024;
/** Body chunks under this size are batched too. */
const SMALL_CHUNK = 16 * 1024;

/** One entry's input as probed, with the best known CRC checkpoint of its body: the CRC work's input (crc-work.ts). */
export type LayoutInput = CrcInput;

/** A layout's file as Postgres holds it (job_files), with what earlier passes learned. */
export type RecordedInput = Pick<BinFileRow, 'position' | 'url' | 'size' | 'etag' | 'lastModified' | 'crc32' | 'crcPrefix' | 'crcPrefixLen'> & Partial<Pick<BinFileRow, 'aesMac'>> & { access?: FileAccess };

/** The reader's inputs and the CRC-32s and MACs already known (by index), from the recorded files. */
export function layoutInputsOf(rows: readonly RecordedInput[]): { inputs: LayoutInput[]; crcs: Map<number, number>; macs: Map<number, Buffer> } {
  const inputs = rows.map((r) => ({
    position: r.position,
    url: r.url,
    size: Number(r.size),
    etag: r.etag,
    lastModified: r.lastModified,
    checkpoint: r.crcPrefixLen === null || r.crcPrefix === null ? null : { length: Number(r.crcPrefixLen), crc: r.crcPrefix >>> 0 },
    ...(r.access ? { access: r.access } : {}),
  }));
  const crcs = new Map<number, number>();
  rows.forEach((r, i) => {
    if (r.crc32 !== null) crcs.set(i, r.crc32 >>> 0);
    else if (inputs[i]!.size === 0) crcs.set(i, 0);
  });
  const macs = new Map<number, Buffer>();
  rows.forEach((r, i) => r.aesMac && macs.set(i, Buffer.from(r.aesMac)));
  return { inputs, crcs, macs };
}

type BodyPiece = Extract<RangePiece, { kind: 'body' }>;

/** Where a reader puts the CRC-32s, checkpoints and MACs it learns (the CRC store, or a segment's own tally). */
export type CrcSink = Pick<CrcStore, 'crc' | 'checkpoint' | 'mac' | 'macCheckpoint' | 'macCheckpointOf' | 'flush' | 'forget'> & Partial<Pick<CrcStore, 'claimBlock' | 'loadBlocks'>>;

/** The bytes of slices of one layout, in order; CRCs learned go to the CRC store. */
export class LayoutReader {
  /** The bodies of the data slices, fetched ahead in order (FetchAhead). */
  private ahead: FetchAhead<DataSource> | null = null;
  private first: { piece: BodyPiece; source: DataSource } | null = null;
  /** The plan of the slices asked for (packages/zip `planSlices`), made once per reader. */
  private planned: { slices: readonly SegmentSlice[]; plan: RangePlan } | null = null;
  /** An encrypted layout's keys, derived off the event loop before each entry's bytes are made. */
  private keys: KeysAhead | null = null;
  /** What was learned of a file found changed, being dropped. */
  private forgetting: Promise<void> = Promise.resolve();
  /** CRCs not known yet, worked out by the process's shared work (or this reader's own). */
  private readonly shared: ResponseCrcs;

  constructor(
    private readonly fetcher: Fetcher,
    private readonly opts: LayoutReaderOptions,
    private readonly crcStore: CrcSink,
    private readonly jobId: string,
    private readonly layout: ZipLayout,
    private readonly inputs: LayoutInput[],
    private readonly crcs: Map<number, number>,
    private readonly signal: AbortSignal,
    /** MACs already known, by index (encrypted layouts). */
    private readonly macs = new Map<number, Buffer>(),
  ) {
    const work = opts.crcWork ?? new CrcWork(fetcher, null, { siblingWaitMs: 0 });
    this.shared = new ResponseCrcs(work, jobId, inputs, crcs, signal);
  }

  async prepare(slices: SegmentSlice[]): Promise<void> {
    const plan = this.planOf(slices);
    if (this.layout.encryption && this.crcStore.loadBlocks) {
      // The digests the response's bodies are checked against, read at once.
      const entries = new Set([...plan.upfront.map((u) => u.entry), ...plan.pieces.flatMap((p) => (p.kind === 'body' ? [p.entry] : []))]);
      const encryption = this.layout.encryption;
      await this.crcStore.loadBlocks(this.jobId, [...entries].map((e) => ({ position: this.inputs[e]!.position, generation: encryption.generationOf(e) })));
    }
    if (this.layout.encryption) {
      // A MAC runs over the whole ciphertext in order: it is computed alone, before the first byte.
      for (const { entry } of plan.upfront) {
        await this.keys?.need(entry);
        this.learnMac(entry, (await this.macUpTo(entry, this.inputs[entry]!.size)).digest());
      }
    } else {
      // The first byte goes out at once: CRCs needed later are worked out while the bytes before them stream.
      this.shared.start(plan);
      // What the first bytes need is awaited here, so a file that cannot be read fails before any byte.
      const lead = plan.pieces[0];
      if (lead?.kind === 'record') {
        const entry = crcNeeded(lead.slice.segment);
        if (entry !== null) await this.need(entry);
      }
    }
    const ahead = this.aheadFor(plan);
    const piece = plan.pieces.find((p) => p.kind === 'body');
    if (piece) this.first = { piece, source: await ahead.take(0) };
  }

  /** What the slices are made of and how each body's CRC is learned; `prepare` and `bytes` share it. */
  private planOf(slices: readonly SegmentSlice[]): RangePlan {
    if (this.planned?.slices === slices) return this.planned.plan;
    // An encrypted entry's checkpoint is a MAC state this process kept (crc unused).
    const plan = this.layout.encryption
      ? planSlices(this.layout, slices, { has: (e) => this.macs.has(e), checkpoint: (e) => this.macCheckpoint(e) })
      : planSlices(this.layout, slices, { has: (e) => this.shared.has(e), checkpoint: (e) => this.shared.checkpoint(e) });
    this.planned = { slices, plan };
    if (this.layout.encryption) this.keys = new KeysAhead(this.layout.encryption, plan);
    return plan;
  }

  /** The scheduler over the plan's bodies: one per reader (prepare and bytes share it). */
  private aheadFor(plan: RangePlan): FetchAhead<DataSource> {
    if (this.ahead) return this.ahead;
    // Every request in flight listens on the signal: more than Node's default 10 at once is normal here.
    setMaxListeners(0, this.signal);
    this.ahead = new FetchAhead(
      plan.pieces.filter((p) => p.kind === 'body').map((piece) => ({ size: piece.to - piece.from, host: hostOf(this.inputs[piece.entry]!.url), open: () => this.openSource(piece) })),
      (source) => source.stream,
      // The per-host limits (and ranged mode's growth up to them) as for a stored ZIP's bodies.
      { hosts: this.fetcher.hosts, spill: this.fetcher.spill, ...this.opts.fetchAhead },
    );
    return this.ahead;
  }

  /** Most body bytes the scheduler had buffered at once (0 unless measured). */
  get peakBufferedBytes(): number {
    return this.ahead?.peakBufferedBytes ?? 0;
  }

  /** The slices' bytes; each chunk is the caller's (never kept or reused here), so it may be freed once written. */
  async *bytes(slices: SegmentSlice[]): AsyncGenerator<Buffer> {
    // Small pieces (records, tiny bodies) are gathered into one chunk: 70,000 entries would
    // otherwise cost 200,000 writes.
    let batch: Buffer[] = [];
    let batched = 0;
    const take = () => {
      const out = batch.length === 1 ? batch[0]! : Buffer.concat(batch, batched);
      batch = [];
      batched = 0;
      return out;
    };
    // Bodies are fetched ahead (several at once, within the memory budget) and read in order.
    const plan = this.planOf(slices);
    const ahead = this.aheadFor(plan);
    let current = -1;
    try {
      for (const piece of plan.pieces) {
        if (piece.kind === 'record') {
          const { segment, from, length } = piece.slice;
          if (segment.kind === 'header' || segment.kind === 'mac') await this.keys?.need(segment.entry);
          const needs = crcNeeded(segment);
          if (needs !== null && !this.layout.encryption) await this.need(needs);
          const bytes = renderSegment(this.layout, segment, (e) => this.crcOf(e), (e) => this.macOf(e));
          batch.push(from === 0 && length === bytes.length ? bytes : bytes.subarray(from, from + length));
          batched += length;
          if (batched >= BATCH_BYTES) yield take();
          continue;
        }
        current++;
        const source = current === 0 && this.first?.piece === piece ? this.first.source : await ahead.take(current);
        try {
          for await (const chunk of source.read()) {
            if (chunk.length < SMALL_CHUNK) {
              batch.push(chunk);
              batched += chunk.length;
              if (batched >= BATCH_BYTES) yield take();
              continue;
            }
            if (batched > 0) yield take();
            yield chunk;
          }
        } finally {
          await source.close();
        }
      }
      // CRCs learned here are stored before the last bytes go out, so a client that reads
      // the archive and then asks for a range finds them.
      await this.crcStore.flush();
      if (batched > 0) yield take();
    } finally {
      ahead.close();
    }
  }

  /** Resolves once what was learned of a file found changed is dropped (in Postgres too). */
  async forgotten(): Promise<void> {
    await this.forgetting;
  }

  /** Releases the first body if `bytes` never ran, and stores what was learned. */
  async close(): Promise<void> {
    this.ahead?.close();
    this.shared.close();
    if (this.first) await this.first.source.close();
    await this.forgetting;
    await this.crcStore.flush();
  }

  private crcOf(entry: number): number {
    const crc = this.crcs.get(entry);
    if (crc === undefined) throw new Error(`CRC of entry ${entry} is not known`); // crcsNeededUpfront guarantees it
    return crc;
  }

  /** Waits for a CRC the next bytes need (learned on the way, or worked out meanwhile). */
  private async need(entry: number): Promise<void> {
    const crc = await this.shared.need(entry);
    if (crc !== null && !this.crcs.has(entry)) this.learn(entry, crc);
  }

  private macOf(entry: number): Buffer {
    const mac = this.macs.get(entry) ?? (this.inputs[entry]!.size === 0 ? this.layout.encryption!.mac(entry).digest() : undefined);
    if (mac === undefined) throw new Error(`MAC of entry ${entry} is not known`); // crcsNeededUpfront guarantees it
    return mac;
  }

  private learnMac(entry: number, mac: Buffer): void {
    const known = this.macs.get(entry);
    if (known?.equals(mac)) return;
    if (known) this.changed(entry);
    this.macs.set(entry, mac);
    this.crcStore.mac(this.jobId, this.inputs[entry]!.position, mac);
  }

  private macCheckpoint(entry: number): CrcCheckpoint | null {
    const held = this.crcStore.macCheckpointOf(this.jobId, this.inputs[entry]!.position);
    return held ? { length: held.length, crc: 0 } : null;
  }

  /** A MAC to track from `at` or later (its kept checkpoint, which may have moved on), null when there is none. */
  private macFrom(entry: number, at: number, upTo = Infinity): { at: number; mac: EntryMac } | null {
    const held = at === 0 ? null : this.crcStore.macCheckpointOf(this.jobId, this.inputs[entry]!.position);
    if (held && held.length >= at && held.length <= upTo) return { at: held.length, mac: held.mac };
    return at === 0 ? { at: 0, mac: this.layout.encryption!.mac(entry) } : null;
  }

  /** The MAC of an encrypted entry over its ciphertext [0, upTo), from its kept checkpoint or 0: fetched, not sent. */
  private async macUpTo(entry: number, upTo: number, start: CrcCheckpoint | null = this.macCheckpoint(entry)): Promise<EntryMac> {
    const held = start && start.length > 0 ? this.macFrom(entry, start.length, upTo) : null;
    const { at: from, mac } = held ?? { at: 0, mac: this.layout.encryption!.mac(entry) };
    if (from === upTo) return mac;
    // The prefix's whole blocks are checked too: a resumed upload's MAC must cover the bytes
    // its stored parts hold, not others (docs/archive-options.md#changed-origins).
    const span = this.blockCheck(entry, from, upTo);
    const blocks = span && { ...span, end: upTo };
    const opened = await this.open(this.inputs[entry]!, blocks?.start ?? from, upTo);
    const tracked = { at: from, mac };
    for await (const ciphertext of encryptedBody(opened.stream, from, upTo, this.layout.encryption!.cipher(entry), tracked, () => undefined, blocks)) void ciphertext;
    return mac;
  }

  private learn(entry: number, crc: number): void {
    const known = this.crcs.get(entry);
    if (known === crc) return;
    if (known !== undefined) this.changed(entry);
    this.crcs.set(entry, crc);
    this.shared.learned(entry, crc);
    this.crcStore.crc(this.jobId, this.inputs[entry]!.position, crc);
  }

  /** The origin sent other bytes than those learned: the response is cut before the sum goes out, and the next one learns again. */
  private changed(entry: number): never {
    this.crcs.delete(entry);
    this.shared.forget(entry);
    this.macs.delete(entry);
    // An encrypted entry's next layout gets a fresh salt: its keystream never meets the new bytes.
    this.forgetting = this.crcStore.forget(this.jobId, this.inputs[entry]!.position, this.layout.encryption?.generationOf(entry));
    throw new FetchError('changed', 'file changed since it was first read', { retryable: false });
  }

  /** Opens the body bytes of a data slice, checking the input is what was probed. */
  private async open(input: LayoutInput, start: number, end: number): Promise<OpenedBody> {
    const whole = start === 0 && end === input.size;
    const opened = await this.fetcher.openBody(input.url, {
      ...(whole ? {} : { range: { start, end: end - 1 } }),
      expectedSize: input.size,
      ...(input.etag ? { ifMatch: input.etag } : {}),
      ...(input.access ? { access: input.access } : {}),
      signal: this.signal,
    });
    const changed =
      (input.etag !== null && opened.etag !== undefined && opened.etag !== input.etag) ||
      (input.etag === null && input.lastModified !== null && opened.lastModified !== undefined && opened.lastModified !== input.lastModified);
    if (changed || (opened.totalSize !== null && opened.totalSize !== input.size)) {
      opened.stream.destroy();
      throw new FetchError('changed', 'file changed since it was probed', { retryable: false });
    }
    if (!whole && !opened.rangeHonoured) opened.stream = skipTake(opened.stream, start, end - start);
    return opened;
  }

  private async openSource(piece: BodyPiece): Promise<DataSource> {
    const { entry, from, to, crc } = piece;
    const input = this.inputs[entry]!;
    // A body sent whole whose sum is known is summed again and checked (docs/archive-options.md#changed-origins); a tar has no sums.
    const whole = from === 0 && to === input.size;
    if (this.layout.encryption) {
      await this.keys?.need(entry);
      // The MAC runs over the whole ciphertext: tracked from 0 or a kept checkpoint, or over a prefix fetched first.
      const mac = crc === null ? (whole ? { at: 0, mac: this.layout.encryption.mac(entry) } : null) : crc.kind === 'track' ? this.macFrom(entry, crc.state.length) : { at: from, mac: await this.macUpTo(entry, from, crc.state) };
      const blocks = this.blockCheck(entry, from, to);
      const opened = await this.open(input, blocks?.start ?? from, blocks?.end ?? to);
      const cipher = this.layout.encryption.cipher(entry);
      if (blocks && input.size <= CHECKED_WHEN_OPENED) {
        // One block, checked now: the claims of the small bodies opened ahead go to Postgres together.
        const plaintext = await readWhole(opened.stream, input.size);
        await blocks.check(0, digestOf([plaintext]));
        opened.stream = Readable.from([plaintext.subarray(from, to)]);
        return new DataSource(this, entry, input, opened, from, to, null, { cipher, mac, blocks: null });
      }
      return new DataSource(this, entry, input, opened, from, to, null, { cipher, mac, blocks });
    }
    // A CRC tracked from where a checkpoint ends; one whose prefix is not known is the shared work's (prepare).
    const tracked = crc === null ? (whole && !this.layout.tar ? { length: 0, crc: 0 } : null) : crc.kind === 'track' ? crc.state : null;
    const opened = await this.open(input, from, to);
    return new DataSource(this, entry, input, opened, from, to, tracked, null, this.shared.tapOf(piece));
  }

  /**
   * The whole plaintext blocks around an encrypted slice, each checked against the digest its
   * keystream holds before it is encrypted (docs/archive-options.md#changed-origins); null
   * where the sink keeps no digests (a segment's own tally).
   */
  private blockCheck(entry: number, from: number, to: number): BlockCheck | null {
    const claim = this.crcStore.claimBlock?.bind(this.crcStore);
    if (!claim) return null;
    const { position, size } = this.inputs[entry]!;
    const generation = this.layout.encryption!.generationOf(entry);
    return {
      ...blockSpan(from, to, size),
      check: async (block, digest) => {
        if (!(await claim(this.jobId, position, generation, block, digest))) this.changed(entry);
      },
    };
  }

  /** Called by a data source as its body streams. */
  onMac(entry: number, mac: EntryMac, length: number): void {
    if (length === this.inputs[entry]!.size) this.learnMac(entry, mac.digest());
    else this.crcStore.macCheckpoint(this.jobId, this.inputs[entry]!.position, length, mac);
  }

  onProgress(entry: number, state: CrcCheckpoint, done: boolean): void {
    const input = this.inputs[entry]!;
    if (done) return this.learn(entry, state.crc);
    input.checkpoint = state;
    this.crcStore.checkpoint(this.jobId, input.position, state);
  }

  get options(): LayoutReaderOptions {
    return this.opts;
  }
}
