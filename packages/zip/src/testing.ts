import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { crc32, crc32Combine } from './crc32';
import { renderSegment, type ZipLayout } from './layout';
import { ENTRY_OPTIONS } from './entry-options';
import { ZipWriter } from './zip-writer';

/** A body for tests: either real bytes or `length` zero bytes produced without allocating them. */
export type TestBody = { bytes: Buffer } | { zeros: number };

export function bodyLength(body: TestBody): number {
  return 'bytes' in body ? body.bytes.length : body.zeros;
}

const ZERO_CHUNK = Buffer.alloc(4 * 1024 * 1024);

export function bodyStream(body: TestBody): Readable {
  if ('bytes' in body) return Readable.from([body.bytes]);
  let left = body.zeros;
  return new Readable({
    read() {
      if (left === 0) return void this.push(null);
      const n = Math.min(left, ZERO_CHUNK.length);
      left -= n;
      this.push(n === ZERO_CHUNK.length ? ZERO_CHUNK : ZERO_CHUNK.subarray(0, n));
    },
  });
}

/** CRC-32 of n zero bytes in O(log n), by combining CRCs of doubling runs. */
export function zerosCrc(n: number): number {
  let crc = crc32(Buffer.alloc(0));
  let run = crc32(Buffer.alloc(1));
  let runLength = 1;
  let left = n;
  while (left > 0) {
    if (left % 2 === 1) crc = crc32Combine(crc, run, runLength);
    run = crc32Combine(run, run, runLength);
    runLength *= 2;
    left = Math.floor(left / 2);
  }
  return crc;
}

export function bodyCrc(body: TestBody): number {
  return 'bytes' in body ? crc32(body.bytes) : zerosCrc(body.zeros);
}

/**
 * Runs the writer the packers use over these entries and hands every output chunk to
 * `onChunk` with its offset; resolves with the total length.
 */
export function writerArchive(
  entries: { name: string; body: TestBody; declareSize: boolean }[],
  mtime: Date,
  onChunk: (chunk: Buffer, offset: number) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const zip = new ZipWriter();
    let offset = 0;
    for (const e of entries) {
      zip.addReadStreamLazy(e.name, ENTRY_OPTIONS(mtime, e.declareSize ? bodyLength(e.body) : null), (cb) => cb(null, bodyStream(e.body)));
    }
    zip.end();
    zip.on('error', reject);
    zip.outputStream.on('data', (chunk: Buffer) => {
      onChunk(chunk, offset);
      offset += chunk.length;
    });
    zip.outputStream.on('end', () => resolve(offset));
    zip.outputStream.on('error', reject);
  });
}

/** The whole archive the layout describes, for small test inputs. */
export function renderWhole(layout: ZipLayout, bodies: Buffer[]): Buffer {
  const crcs = bodies.map((b) => crc32(b));
  return Buffer.concat(layout.segments.map((s) => (s.kind === 'data' ? bodies[s.entry]! : renderSegment(layout, s, (i) => crcs[i]!))));
}

/** Every entry of an archive, read back by yauzl with its strict checks. */
export function readWithYauzl(zip: Buffer): Promise<{ name: string; data: Buffer }[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, file) => {
      if (err) return reject(err);
      const out: { name: string; data: Buffer }[] = [];
      file.on('entry', (entry: yauzl.Entry) => {
        file.openReadStream(entry, (e, stream) => {
          if (e) return reject(e);
          const parts: Buffer[] = [];
          stream.on('data', (c: Buffer) => parts.push(c));
          stream.on('end', () => {
            out.push({ name: entry.fileName, data: Buffer.concat(parts) });
            file.readEntry();
          });
        });
      });
      file.on('end', () => resolve(out));
      file.on('error', reject);
      file.readEntry();
    });
  });
}
