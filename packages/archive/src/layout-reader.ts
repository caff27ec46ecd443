// The bytes of any range of a planned ZIP (a layout), built from the origins: headers and
// records rendered from the layout, bodies fetched by range, CRC-32s learned on the way.
// Stream-mode downloads serve ranges with it; the packer resumes a multipart upload with it.
import { setMaxListeners } from 'node:events';
import { Readable } from 'node:stream';
import { crc32, planSlices, renderSegment, type CrcCheckpoint, type RangePiece, type RangePlan, type SegmentSlice, type ZipLayout } from '@ap/zip';
import { FetchAhead, FetchError, type Fetcher, type FetchAheadOptions, type FileAccess, type OpenedBody } from '@ap/fetch';
import type { BinFileRow } from '@ap/db';
import type { CrcStore } from './crc-store';

/** Tunables; tests and benches shrink them. */
export interface LayoutReaderOptions {
  /** A body's CRC checkpoint is persisted every this many bytes (and when reading stops). */
  checkpointEvery: number;
  /** Connections and memory budget for fetching bodies ahead (defaults: 8, 64 MiB). */
  fetchAhead?: FetchAheadOptions;
}

export const LAYOUT_READER_DEFAULTS: LayoutReaderOptions = { checkpointEvery: 64 << 20 };

/** Non-data bytes are gathered into chunks of about this size (70,000 central records). */
export const BATCH_BYTES = 64 * 1024;
/** Body chunks under this size are batched too. */
const SMALL_CHUNK = 16 * 1024;

/** One entry's input as probed, with the best known CRC checkpoint of its body. */
export interface LayoutInput {
  position: number;
  url: string;
  size: number;
  etag: string | null;
  lastModified: string | null;
  checkpoint: CrcCheckpoint | null;
  /** Its request headers or source credentials. */
  access?: FileAccess;
}

/** A layout's file as Postgres holds it (job_files), with what earlier passes learned. */
export type RecordedInput = Pick<BinFileRow, 'position' | 'url' | 'size' | 'etag' | 'lastModified' | 'crc32' | 'crcPrefix' | 'crcPrefixLen'> & { access?: FileAccess };

/** The reader's inputs and the CRC-32s already known (by index), from the recorded files. */
export function layoutInputsOf(rows: readonly RecordedInput[]): { inputs: LayoutInput[]; crcs: Map<number, number> } {
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
  return { inputs, crcs };
}

type BodyPiece = Extract<RangePiece, { kind: 'body' }>;

/** The bytes of slices of one layout, in order; CRCs learned go to the CRC store. */
export class LayoutReader {
  /** The bodies of the data slices, fetched ahead in order (FetchAhead). */
  private ahead: FetchAhead<DataSource> | null = null;
  private first: { piece: BodyPiece; source: DataSource } | null = null;
  /** The plan of the slices asked for (packages/zip `planSlices`), made once per reader. */
  private planned: { slices: readonly SegmentSlice[]; plan: RangePlan } | null = null;

  constructor(
    private readonly fetcher: Fetcher,
    private readonly opts: LayoutReaderOptions,
    private readonly crcStore: CrcStore,
    private readonly jobId: string,
    private readonly layout: ZipLayout,
    private readonly inputs: LayoutInput[],
    private readonly crcs: Map<number, number>,
    private readonly signal: AbortSignal,
  ) {}

  async prepare(slices: SegmentSlice[]): Promise<void> {
    const plan = this.planOf(slices);
    for (const { entry, from } of plan.upfront) this.learn(entry, await this.crcOfRange(this.inputs[entry]!, from, this.inputs[entry]!.size));
    const ahead = this.aheadFor(plan);
    const piece = plan.pieces.find((p) => p.kind === 'body');
    if (piece) this.first = { piece, source: await ahead.take(0) };
  }

  /** What the slices are made of and how each body's CRC is learned; `prepare` and `bytes` share it. */
  private planOf(slices: readonly SegmentSlice[]): RangePlan {
    if (this.planned?.slices === slices) return this.planned.plan;
    const plan = planSlices(this.layout, slices, { has: (e) => this.crcs.has(e), checkpoint: (e) => this.inputs[e]!.checkpoint });
    this.planned = { slices, plan };
    return plan;
  }

  /** The scheduler over the plan's bodies: one per reader (prepare and bytes share it). */
  private aheadFor(plan: RangePlan): FetchAhead<DataSource> {
    if (this.ahead) return this.ahead;
    // Every request in flight listens on the signal: more than Node's default 10 at once is normal here.
    setMaxListeners(0, this.signal);
    this.ahead = new FetchAhead(
      plan.pieces.filter((p) => p.kind === 'body').map((piece) => ({ size: piece.to - piece.from, open: () => this.openSource(piece) })),
      (source) => source.stream,
      this.opts.fetchAhead,
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
          const bytes = renderSegment(this.layout, segment, (e) => this.crcOf(e));
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

  /** Releases the first body if `bytes` never ran, and stores what was learned. */
  async close(): Promise<void> {
    this.ahead?.close();
    if (this.first) await this.first.source.close();
    await this.crcStore.flush();
  }

  private crcOf(entry: number): number {
    const crc = this.crcs.get(entry);
    if (crc === undefined) throw new Error(`CRC of entry ${entry} is not known`); // crcsNeededUpfront guarantees it
    return crc;
  }

  private learn(entry: number, crc: number): void {
    this.crcs.set(entry, crc);
    this.crcStore.crc(this.jobId, this.inputs[entry]!.position, crc);
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

  /** CRC-32 of body bytes [from.length, upTo), continuing from.crc: fetched, not sent. */
  private async crcOfRange(input: LayoutInput, from: CrcCheckpoint, upTo: number): Promise<number> {
    if (from.length >= upTo) return from.crc;
    const opened = await this.open(input, from.length, upTo);
    let crc = from.crc;
    let got = 0;
    for await (const chunk of opened.stream as AsyncIterable<Buffer>) {
      crc = crc32(chunk, crc);
      got += chunk.length;
    }
    if (got !== upTo - from.length) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
    return crc;
  }

  private async openSource(piece: BodyPiece): Promise<DataSource> {
    const { entry, from, to, crc } = piece;
    const input = this.inputs[entry]!;
    // A CRC tracked from where a checkpoint ends; a prefix before the slice is hashed first.
    const tracked = crc === null ? null : crc.kind === 'track' ? crc.state : { length: from, crc: await this.crcOfRange(input, crc.state, from) };
    const opened = await this.open(input, from, to);
    return new DataSource(this, entry, input, opened, from, to, tracked);
  }

  /** Called by a data source as its body streams. */
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

/** The body bytes of one data slice, with the entry's running CRC when it is tracked. */
class DataSource {
  private closed = false;

  constructor(
    private readonly session: LayoutReader,
    private readonly entry: number,
    private readonly input: LayoutInput,
    private readonly opened: OpenedBody,
    private readonly from: number,
    private readonly to: number,
    private readonly tracked: CrcCheckpoint | null,
  ) {}

  get stream(): Readable {
    return this.opened.stream;
  }

  async *read(): AsyncGenerator<Buffer> {
    const { checkpointEvery } = this.session.options;
    let at = this.from;
    // The CRC covers body bytes [0, hashed); it catches up once `at` passes a checkpoint ahead.
    let hashed = this.tracked?.length ?? -1;
    let crc = this.tracked?.crc ?? 0;
    let saved = hashed;
    let complete = false;
    try {
      for await (const chunk of this.opened.stream as AsyncIterable<Buffer>) {
        if (chunk.length > this.to - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
        const end = at + chunk.length;
        if (hashed >= at && hashed < end) {
          crc = crc32(hashed === at ? chunk : chunk.subarray(hashed - at), crc);
          hashed = end;
          if (hashed - saved >= checkpointEvery && hashed < this.input.size) {
            saved = hashed;
            this.session.onProgress(this.entry, { length: hashed, crc }, false);
          }
        }
        at = end;
        yield chunk;
      }
      if (at !== this.to) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
      complete = true;
    } finally {
      // Every byte read was handed to the response, so the client never has more than `hashed`:
      // a resume from anywhere up to it needs no extra origin bytes. A range ending mid-body
      // leaves one exactly where the client will resume.
      if (hashed === this.input.size && complete) this.session.onProgress(this.entry, { length: hashed, crc }, true);
      else if (hashed > saved) this.session.onProgress(this.entry, { length: hashed, crc }, false);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.opened.stream.destroy();
  }
}

/** For an origin that ignored Range: drops `skip` bytes, then passes `take`. */
function skipTake(stream: Readable, skip: number, take: number): Readable {
  return Readable.from(
    (async function* () {
      let pos = 0;
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          const a = Math.max(0, skip - pos);
          const b = Math.min(chunk.length, skip + take - pos);
          pos += chunk.length;
          if (b > a) yield chunk.subarray(a, b);
          if (pos >= skip + take) break;
        }
      } finally {
        stream.destroy();
      }
    })(),
    { objectMode: false },
  );
}

