// The CRC-32s stream ranges need, worked out once per process and shared by every response
// (docs/engine.md#stream-ranges): one EntryCrc per entry under way, its reads of bytes not sent
// anywhere spread over several connections of the ZIP (the origin host's limits apply), the
// ZIP's first entries first.
import type { Fetcher, FileAccess } from '@ap/fetch';
import { FetchError } from '@ap/fetch';
import type { CrcCheckpoint } from '@ap/zip';
import { EntryCrc, type EntryCrcHost } from './entry-crc';
import { hostOf } from './host-of';
import { skipTake } from './skip-take';

export interface CrcWorkOptions {
  /** Connections one ZIP's CRC reads may hold at once (within the origin host's limit). */
  connections: number;
  /** How long a response that will need a CRC later waits for sibling ranges before reading gaps. */
  siblingWaitMs: number;
  /** How long a response that needs a CRC now counts on another response's slice still to come (by its rate so far). */
  patienceMs: number;
  /** Reads of a gap are at least and at most this long (bytes). */
  minChunk: number;
  maxChunk: number;
  /** Entries kept in memory with what was learned of them (idle ones go first). */
  entriesKept: number;
}

export const CRC_WORK_DEFAULTS: CrcWorkOptions = { connections: 16, siblingWaitMs: 300, patienceMs: 10_000, minChunk: 1 << 20, maxChunk: 32 << 20, entriesKept: 10_000 };

/** One entry's input as probed, with the best known CRC checkpoint of its body (the layout reader's `LayoutInput`). */
export interface CrcInput {
  position: number;
  url: string;
  size: number;
  etag: string | null;
  lastModified: string | null;
  checkpoint: CrcCheckpoint | null;
  /** Its request headers or source credentials. */
  access?: FileAccess;
}

/** Where the CRCs and checkpoints learned go (the CRC store), when they are to be kept. */
export interface CrcKeeper {
  crc(jobId: string, position: number, crc: number): void;
  checkpoint(jobId: string, position: number, state: CrcCheckpoint): void;
}

function keyOf(jobId: string, input: Pick<CrcInput, 'position' | 'etag' | 'lastModified'>): string {
  return `${jobId}:${input.position}:${input.etag ?? ''}:${input.lastModified ?? ''}`;
}

interface QueuedRead {
  order: [number, number];
  run: () => Promise<void>;
}

export class CrcWork {
  private readonly opts: CrcWorkOptions;
  private readonly entries = new Map<string, EntryCrc>();
  /** Reads waiting and running, by ZIP. */
  private readonly zips = new Map<string, { running: number; queue: QueuedRead[] }>();

  constructor(
    private readonly fetcher: Fetcher,
    private readonly keeper: CrcKeeper | null = null,
    options: Partial<CrcWorkOptions> = {},
  ) {
    this.opts = { ...CRC_WORK_DEFAULTS, ...options };
  }

  /** The entry's shared work if it has any. */
  peek(jobId: string, input: CrcInput): EntryCrc | undefined {
    return this.entries.get(keyOf(jobId, input));
  }

  /** The entry's shared work (made on first use, seeded with the input's stored checkpoint). */
  entry(jobId: string, input: CrcInput): EntryCrc {
    const zip = jobId;
    const key = keyOf(jobId, input);
    let work = this.entries.get(key);
    if (work) {
      this.entries.delete(key);
      this.entries.set(key, work);
      work.seed(input.checkpoint);
      return work;
    }
    const host: EntryCrcHost = {
      siblingWaitMs: this.opts.siblingWaitMs,
      patienceMs: this.opts.patienceMs,
      chunkOf: (gap) => Math.min(this.opts.maxChunk, Math.max(this.opts.minChunk, Math.ceil(gap / this.opts.connections))),
      read: (from, to, signal, hash) => this.queue(zip, [input.position, from], () => this.read(input, from, to, signal, hash)),
      progressed: (prefix, whole) => {
        if (whole) this.keeper?.crc(jobId, input.position, prefix.crc);
        else this.keeper?.checkpoint(jobId, input.position, prefix);
      },
    };
    work = new EntryCrc(host, input.size, input.checkpoint);
    this.entries.set(key, work);
    this.trim();
    return work;
  }

  /** What was learned of a changed input goes. */
  forget(jobId: string, input: Pick<CrcInput, 'position' | 'etag' | 'lastModified'>): void {
    this.entries.delete(keyOf(jobId, input));
  }

  private trim(): void {
    if (this.entries.size <= this.opts.entriesKept) return;
    for (const [key, e] of this.entries) {
      if (this.entries.size <= this.opts.entriesKept) break;
      if (e.idle) this.entries.delete(key);
    }
  }

  /** Runs `run` when the ZIP (its job's reads) has a connection free, its earliest entries and offsets first. */
  private queue(zip: string, order: [number, number], run: () => Promise<void>): Promise<void> {
    let state = this.zips.get(zip);
    if (!state) this.zips.set(zip, (state = { running: 0, queue: [] }));
    const zipState = state;
    return new Promise<void>((resolve, reject) => {
      const item: QueuedRead = { order, run: () => run().then(resolve, reject) };
      const at = zipState.queue.findIndex((q) => q.order[0] > order[0] || (q.order[0] === order[0] && q.order[1] > order[1]));
      zipState.queue.splice(at === -1 ? zipState.queue.length : at, 0, item);
      this.pump(zip);
    });
  }

  private pump(zip: string): void {
    const state = this.zips.get(zip)!;
    while (state.running < this.opts.connections && state.queue.length > 0) {
      const item = state.queue.shift()!;
      state.running++;
      void item.run().finally(() => {
        state.running--;
        if (state.running === 0 && state.queue.length === 0) this.zips.delete(zip);
        else this.pump(zip);
      });
    }
  }

  /** Reads body bytes [from, to) of the input under its validators, handing them to `hash`. */
  private async read(input: CrcInput, from: number, to: number, signal: AbortSignal, hash: (chunk: Buffer) => void): Promise<void> {
    if (signal.aborted) throw new FetchError('aborted', 'no longer needed', { retryable: false });
    const host = hostOf(input.url);
    if (host !== undefined) await this.fetcher.hosts.whenRoom(host, signal);
    const opened = await this.fetcher.openBody(input.url, {
      range: { start: from, end: to - 1 },
      expectedSize: input.size,
      ...(input.etag ? { ifMatch: input.etag } : {}),
      ...(input.access ? { access: input.access } : {}),
      signal,
    });
    const changed =
      (input.etag !== null && opened.etag !== undefined && opened.etag !== input.etag) ||
      (input.etag === null && input.lastModified !== null && opened.lastModified !== undefined && opened.lastModified !== input.lastModified);
    if (changed || (opened.totalSize !== null && opened.totalSize !== input.size)) {
      opened.stream.destroy();
      throw new FetchError('changed', 'file changed since it was probed', { retryable: false });
    }
    const stream = opened.rangeHonoured ? opened.stream : skipTake(opened.stream, from, to - from);
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) hash(chunk);
    } finally {
      stream.destroy();
    }
  }
}
