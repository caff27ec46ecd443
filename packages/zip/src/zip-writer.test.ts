// The writer (stored jobs, stream downloads of unknown size) writes exactly the bytes of the
// layout with the same encryption: a resumed upload, built from the layout, continues them.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { ZipEncryption } from './aes';
import { ZipWriter } from './zip-writer';
import { planZip } from './layout';
import { buildRange, planRange } from './range';
import { readAesZip } from './testing-aes';

const MTIME = new Date('2026-11-26T15:00:00Z');

describe('ZipWriter, AES', () => {
  it('writes the layout bytes, entry by entry as streams arrive, with a slow reader', async () => {
    const bodies = [randomBytes(3 << 20), Buffer.alloc(0), randomBytes(17)];
    const encryption = () => new ZipEncryption('password-123', Buffer.alloc(32, 1), 3);
    const writer = new ZipWriter(encryption());
    bodies.forEach((b, i) =>
      writer.addReadStreamLazy(`e${i}`, { mtime: MTIME, size: b.length }, (cb) => {
        const stream = Readable.from(b.length ? [b.subarray(0, 1000), b.subarray(1000)] : []);
        cb(null, stream);
        // What the packer does right after: a listener of its own, which starts the flow.
        stream.on('data', () => undefined);
      }),
    );
    writer.end();
    const chunks: Buffer[] = [];
    for await (const chunk of writer.outputStream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      await new Promise((r) => setImmediate(r));
    }
    const written = Buffer.concat(chunks);
    const layout = planZip(bodies.map((b, i) => ({ name: `e${i}`, size: b.length })), { mtime: MTIME, encryption: encryption() });
    const plan = planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null });
    expect(written.equals(buildRange(layout, plan, { read: (e, f, t) => bodies[e]!.subarray(f, t) }, new Map()).bytes)).toBe(true);
    expect(readAesZip(written, 'password-123').map((e) => e.data.length)).toEqual(bodies.map((b) => b.length));
  });

  it('with a block checker, asks about every 1 MiB block before encrypting it: the same bytes, or an error before a refused block', async () => {
    const bodies = [randomBytes((3 << 20) + 5), Buffer.alloc(0), randomBytes(17)];
    const encryption = () => new ZipEncryption('password-123', Buffer.alloc(32, 2), 1);
    const run = async (refuse: { entry: number; block: number } | null) => {
      const asked: string[] = [];
      const writer = new ZipWriter(encryption(), async (entry, block, digest) => {
        asked.push(`${entry}:${block}:${digest.length}`);
        await new Promise((r) => setTimeout(r, 1));
        return !(refuse && refuse.entry === entry && refuse.block === block);
      });
      bodies.forEach((b, i) =>
        writer.addReadStreamLazy(`e${i}`, { mtime: MTIME, size: b.length }, (cb) => {
          // Chunks that straddle block boundaries.
          const cuts = [0, 1000, 700_000, 1_500_000, 2_200_000, b.length].filter((c) => c <= b.length);
          const stream = Readable.from(cuts.slice(1).map((c, j) => b.subarray(cuts[j]!, c)).filter((c) => c.length > 0));
          cb(null, stream);
          stream.on('data', () => undefined);
        }),
      );
      writer.end();
      const chunks: Buffer[] = [];
      let failed: Error | null = null;
      try {
        for await (const chunk of writer.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
      } catch (err) {
        failed = err as Error;
      }
      return { asked, written: Buffer.concat(chunks), failed };
    };
    const whole = await run(null);
    expect(whole.failed).toBeNull();
    expect(whole.asked).toEqual(['0:0:16', '0:1:16', '0:2:16', '0:3:16', '2:0:16']);
    const layout = planZip(bodies.map((b, i) => ({ name: `e${i}`, size: b.length })), { mtime: MTIME, encryption: encryption() });
    const plan = planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null });
    expect(whole.written.equals(buildRange(layout, plan, { read: (e, f, t) => bodies[e]!.subarray(f, t) }, new Map()).bytes)).toBe(true);

    const refused = await run({ entry: 0, block: 1 });
    expect(refused.failed?.message).toMatch(/changed/);
    // Nothing of the refused block went out: the header, salt, verifier and block 0 at most.
    expect(refused.written.length).toBeLessThanOrEqual(layout.entries[0]!.dataOffset + (1 << 20));
  });

  it('deflates then encrypts an entry added with compress: method 99, 0x9901 method 8, sizes in the descriptor', async () => {
    const text = Buffer.from('id,name,amount\n'.repeat(20_000));
    const bodies = [text, Buffer.alloc(0), randomBytes(70_000)];
    const writer = new ZipWriter(new ZipEncryption('password-123', Buffer.alloc(32, 2), 1));
    bodies.forEach((b, i) =>
      writer.addReadStreamLazy(`d${i}`, { mtime: MTIME, compress: true, compressionLevel: 9, size: b.length }, (cb) => {
        const stream = Readable.from(b.length ? [b.subarray(0, 999), b.subarray(999)] : []);
        cb(null, stream);
        stream.on('data', () => undefined);
      }),
    );
    writer.end();
    const chunks: Buffer[] = [];
    for await (const chunk of writer.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
    const written = Buffer.concat(chunks);
    // The text shrinks; the random bytes grow by deflate's framing only.
    expect(written.length).toBeLessThan(text.length / 10 + 71_000);
    const read = readAesZip(written, 'password-123');
    expect(read.map((e) => e.method)).toEqual([8, 8, 8]);
    read.forEach((e, i) => expect(e.data.equals(bodies[i]!)).toBe(true));
  });
});
