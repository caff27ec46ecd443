// The body bytes of one data slice of a layout (LayoutReader's), as they go out: plain with
// the entry's running CRC-32, or encrypted (encrypted-body.ts).
import type { Readable } from 'node:stream';
import { crc32, crc32Combine, type AesCtr, type CrcCheckpoint, type EntryMac } from '@ap/zip';
import { FetchError, type OpenedBody } from '@ap/fetch';
import type { CrcTap } from './crc-tap';
import { encryptedBody, type BlockCheck } from './encrypted-body';

/** What a data source tells its reader (LayoutReader) as its body streams. */
export interface DataSession {
  readonly options: { checkpointEvery: number };
  onMac(entry: number, mac: EntryMac, length: number): void;
  onProgress(entry: number, state: CrcCheckpoint, done: boolean): void;
}

/** The body bytes of one data slice, with the entry's running CRC when it is tracked. */
export class DataSource {
  private closed = false;

  constructor(
    private readonly session: DataSession,
    private readonly entry: number,
    private readonly input: { size: number },
    private readonly opened: OpenedBody,
    private readonly from: number,
    private readonly to: number,
    private readonly tracked: CrcCheckpoint | null,
    /** An encrypted entry: its cipher, and its MAC when this slice learns it. */
    private readonly encrypted: { cipher: AesCtr; mac: { at: number; mac: EntryMac } | null; blocks: BlockCheck | null } | null = null,
    /** The entry's shared CRC work sees the bytes too (crc-work.ts), when its CRC is not known. */
    private readonly tap: CrcTap | null = null,
  ) {}

  get stream(): Readable {
    return this.opened.stream;
  }

  async *read(): AsyncGenerator<Buffer> {
    if (this.encrypted) {
      const { cipher, mac, blocks } = this.encrypted;
      return yield* encryptedBody(this.opened.stream, this.from, this.to, cipher, mac, (m, hashed) => this.session.onMac(this.entry, m, hashed), blocks);
    }
    const { checkpointEvery } = this.session.options;
    const tap = this.tap;
    let at = this.from;
    // The CRC covers body bytes [0, hashed); it catches up once `at` passes a checkpoint ahead.
    // Tracked from where the slice starts, it is the tap's CRC joined on (no byte hashed twice).
    const joined = tap !== null && this.tracked !== null && this.tracked.length === this.from;
    let hashed = this.tracked?.length ?? -1;
    let crc = this.tracked?.crc ?? 0;
    const crcAt = () => (joined ? crc32Combine(this.tracked!.crc, tap.run(), hashed - this.from) : crc);
    let saved = hashed;
    let complete = false;
    try {
      for await (const chunk of this.opened.stream as AsyncIterable<Buffer>) {
        if (chunk.length > this.to - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
        const end = at + chunk.length;
        tap?.update(chunk);
        if (hashed >= at && hashed < end) {
          if (!joined) crc = crc32(hashed === at ? chunk : chunk.subarray(hashed - at), crc);
          hashed = end;
          if (hashed - saved >= checkpointEvery && hashed < this.input.size) {
            saved = hashed;
            this.session.onProgress(this.entry, { length: hashed, crc: crcAt() }, false);
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
      if (hashed === this.input.size && complete) this.session.onProgress(this.entry, { length: hashed, crc: crcAt() }, true);
      else if (hashed > saved) this.session.onProgress(this.entry, { length: hashed, crc: crcAt() }, false);
      tap?.end();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tap?.end();
    this.opened.stream.destroy();
  }
}
