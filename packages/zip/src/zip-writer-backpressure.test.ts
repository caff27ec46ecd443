import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from '@jest/globals';
import { readWithYauzl } from './testing';
import { ZipWriter } from './zip-writer';

// The writer pushes each entry's data into its output stream and pauses the entry's source
// while that output is full. These tests hold the output back and check that nothing is lost,
// reordered or buffered without bound.

const MTIME = new Date('2026-11-25T12:00:00Z');
const OUTPUT_BUFFER = 1024 * 1024; // the output's highWaterMark
const CHUNK = 64 * 1024;

/** A source that yields `bytes` in 64 KiB chunks, as a socket does. */
function chunked(bytes: Buffer): Readable {
  let at = 0;
  return new Readable({
    read() {
      if (at >= bytes.length) return void this.push(null);
      this.push(bytes.subarray(at, at + CHUNK));
      at += CHUNK;
    },
  });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Reads the whole output slowly (a pause every few chunks), noting its largest buffered length. */
async function drainSlowly(output: Readable): Promise<{ bytes: Buffer; maxBuffered: number }> {
  const parts: Buffer[] = [];
  let maxBuffered = 0;
  for await (const chunk of output) {
    parts.push(chunk as Buffer);
    maxBuffered = Math.max(maxBuffered, output.readableLength);
    if (parts.length % 8 === 0) await sleep(2);
  }
  return { bytes: Buffer.concat(parts), maxBuffered };
}

describe('ZipWriter output', () => {
  it('keeps every entry whole and in order behind a slow consumer, stored and compressed alike', async () => {
    const bodies = {
      'a.bin': randomBytes(3 * 1024 * 1024 + 17),
      'b.txt': Buffer.from('compressible '.repeat(200_000)),
      'c.bin': randomBytes(5),
      'd.bin': randomBytes(2 * 1024 * 1024),
      'e.bin': randomBytes(1024),
    };
    const zip = new ZipWriter();
    zip.addReadStreamLazy('a.bin', { mtime: MTIME, compress: false, size: bodies['a.bin'].length }, (cb) => cb(null, chunked(bodies['a.bin'])));
    zip.addReadStreamLazy('b.txt', { mtime: MTIME, compress: true }, (cb) => cb(null, chunked(bodies['b.txt'])));
    zip.addReadStreamLazy('c.bin', { mtime: MTIME, compress: false, size: 5 }, (cb) => cb(null, chunked(bodies['c.bin'])));
    zip.addReadStreamLazy('d.bin', { mtime: MTIME, compress: false }, (cb) => cb(null, chunked(bodies['d.bin'])));
    zip.addReadStreamLazy('e.bin', { mtime: MTIME, compress: true, size: 1024 }, (cb) => cb(null, chunked(bodies['e.bin'])));
    zip.end();

    const { bytes, maxBuffered } = await drainSlowly(zip.outputStream as unknown as Readable);

    // Sources were paused: the output never held much more than its own buffer.
    expect(maxBuffered).toBeLessThanOrEqual(OUTPUT_BUFFER + CHUNK);
    const entries = await readWithYauzl(bytes);
    expect(entries.map((e) => e.name)).toEqual(Object.keys(bodies));
    for (const e of entries) expect(sha(e.data)).toBe(sha(bodies[e.name as keyof typeof bodies]));
    // A second, independent reader.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'zip-writer-output-'));
    try {
      writeFileSync(path.join(dir, 'out.zip'), bytes);
      expect(execFileSync('unzip', ['-t', path.join(dir, 'out.zip')]).toString()).toMatch(/No errors detected/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('resumes the paused source when the consumer reads again', async () => {
    const body = randomBytes(4 * 1024 * 1024);
    const source = chunked(body);
    const zip = new ZipWriter();
    zip.addReadStreamLazy('big.bin', { mtime: MTIME, compress: false, size: body.length }, (cb) => cb(null, source));
    zip.end();
    const output = zip.outputStream as unknown as Readable;
    // Nobody reads: the source stops once the output buffer is full.
    output.pause();
    output.on('readable', () => undefined); // let the output fill without consuming it
    await sleep(100);
    expect(source.isPaused()).toBe(true);
    expect(output.readableLength).toBeGreaterThanOrEqual(OUTPUT_BUFFER);
    expect(output.readableLength).toBeLessThanOrEqual(OUTPUT_BUFFER + CHUNK);
    output.removeAllListeners('readable');
    const { bytes } = await drainSlowly(output);
    const [entry] = await readWithYauzl(bytes);
    expect(sha(entry!.data)).toBe(sha(body));
  });
});
