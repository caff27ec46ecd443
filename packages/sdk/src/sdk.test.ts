// The SDK's types are the document's: the committed openapi.ts must be what the document
// generates now (a route or schema change without `pnpm --filter @ap/sdk generate` fails here).
// And the ZIP check refuses truncated and corrupted archives.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import yazl from 'yazl';
import { generateTypes, GENERATED_TYPES_PATH } from './generate';
import { verifyZip, ZipVerificationError } from './verify';

describe('generated types', () => {
  it('match the OpenAPI document the API serves', async () => {
    const committed = readFileSync(GENERATED_TYPES_PATH, 'utf8');
    const fresh = await generateTypes();
    expect(committed === fresh ? 'in sync' : 'stale: run pnpm --filter @ap/sdk generate').toBe('in sync');
  });
});

async function zipOf(entries: { name: string; body: Buffer }[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const e of entries) zip.addBuffer(e.body, e.name, { compress: false, mtime: new Date(0) });
  zip.end();
  const chunks: Buffer[] = [];
  const sink = zip.outputStream.pipe(new PassThrough());
  for await (const c of sink) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('verifyZip', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sdk-verify-'));
  const entries = [
    { name: 'a.txt', body: Buffer.from('hello world\n'.repeat(1000)) },
    { name: 'dir/b.bin', body: Buffer.alloc(50_000, 7) },
  ];

  it('accepts a whole ZIP, with and without the CRC check', async () => {
    const bytes = await zipOf(entries);
    const file = path.join(dir, 'ok.zip');
    writeFileSync(file, bytes);
    expect(await verifyZip(file, { expectedSize: bytes.length })).toEqual({ entries: 2, contentBytes: 62_000, crcChecked: false });
    expect(await verifyZip(file, { crc: true })).toEqual({ entries: 2, contentBytes: 62_000, crcChecked: true });
  });

  it('refuses a wrong size, a truncated file, and (with crc) a changed byte', async () => {
    const bytes = await zipOf(entries);
    const file = path.join(dir, 'x.zip');
    writeFileSync(file, bytes);
    await expect(verifyZip(file, { expectedSize: bytes.length + 1 })).rejects.toThrow(ZipVerificationError);
    writeFileSync(file, bytes.subarray(0, bytes.length - 30));
    await expect(verifyZip(file)).rejects.toThrow(ZipVerificationError);
    writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length / 2)));
    await expect(verifyZip(file)).rejects.toThrow(ZipVerificationError);
    const flipped = Buffer.from(bytes);
    flipped[100] = flipped[100]! ^ 0xff; // inside a.txt's data
    writeFileSync(file, flipped);
    await expect(verifyZip(file)).resolves.toMatchObject({ entries: 2 });
    await expect(verifyZip(file, { crc: true })).rejects.toThrow(/CRC-32/);
  });
});
