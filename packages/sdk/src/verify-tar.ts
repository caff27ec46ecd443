// Checks a downloaded tar or tar.gz without trusting it: every header's checksum, each body
// inside the file (pax `size` records honoured), and the two zero blocks at the end.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ZipVerificationError, type ZipCheck } from './verify';

const BLOCK = 512;

function headerChecksumOk(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return parseInt(block.subarray(148, 156).toString('latin1').replace(/\0.*$/s, '').trim(), 8) === sum;
}

/** The archive's entries (pax headers not counted) and their bytes; throws a ZipVerificationError when it is not a whole tar. */
export async function verifyTar(path: string, options: { expectedSize?: number | null; gzip?: boolean } = {}): Promise<ZipCheck> {
  const size = (await stat(path)).size;
  if (options.expectedSize !== undefined && options.expectedSize !== null && size !== options.expectedSize) {
    throw new ZipVerificationError(`${path} has ${size} bytes, the API says ${options.expectedSize}`);
  }
  let input: Readable = createReadStream(path);
  if (options.gzip) input = input.pipe(createGunzip());
  let pending: Buffer = Buffer.alloc(0);
  let skip = 0;
  let paxSize: number | null = null;
  let collectPax = 0;
  let pax: Buffer[] = [];
  let entries = 0;
  let contentBytes = 0;
  let zeros = 0;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length > 0) {
        if (skip > 0) {
          const n = Math.min(skip, pending.length);
          if (collectPax > 0) pax.push(pending.subarray(0, Math.min(n, collectPax)));
          collectPax = Math.max(0, collectPax - n);
          skip -= n;
          pending = pending.subarray(n);
          if (skip === 0 && pax.length > 0) {
            const size = /(?:^|\n)\d+ size=(\d+)\n/.exec(Buffer.concat(pax).toString('utf8'));
            paxSize = size ? Number(size[1]) : null;
            pax = [];
          }
          continue;
        }
        if (pending.length < BLOCK) break;
        const block = pending.subarray(0, BLOCK);
        pending = pending.subarray(BLOCK);
        if (block.every((b) => b === 0)) {
          zeros++;
          continue;
        }
        if (zeros > 0) throw new ZipVerificationError(`${path}: a header follows the end blocks`);
        if (!headerChecksumOk(block)) throw new ZipVerificationError(`${path}: a header's checksum does not match`);
        const type = String.fromCharCode(block[156]!);
        const field = parseInt(block.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
        const bodySize = type === 'x' || type === 'g' ? field : (paxSize ?? field);
        skip = bodySize + ((BLOCK - (bodySize % BLOCK)) % BLOCK);
        if (type === 'x') collectPax = bodySize;
        else {
          paxSize = null;
          entries++;
          contentBytes += bodySize;
        }
      }
    }
  } catch (err) {
    if (err instanceof ZipVerificationError) throw err;
    throw new ZipVerificationError(`${path} is not a readable ${options.gzip ? 'tar.gz' : 'tar'}: ${(err as Error).message}`);
  }
  if (skip > 0 || pending.length > 0 || zeros < 2) throw new ZipVerificationError(`${path} ends inside the archive (not a whole tar)`);
  return { entries, contentBytes, crcChecked: false };
}
