import { randomBytes, randomInt } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from '@jest/globals';
import { PartBufferPool, PartCutter, releasePart, sendPartsOf } from './parts';

const KiB = 1024;

/** Feeds `data` in random chunk sizes (some larger than a part) and collects the parts, releasing each at once. */
async function cutAll(data: Buffer, partSize: number, pool = new PartBufferPool(1024 * KiB)): Promise<Buffer[]> {
  const cutter = new PartCutter(partSize, 3, pool);
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const n = Math.min(data.length - at, randomInt(1, partSize * 3));
    chunks.push(data.subarray(at, at + n));
    at += n;
  }
  return partsOf(cutter, chunks);
}

/** Writes `chunks` through `cutter` and collects copies of its parts, releasing each at once. */
async function partsOf(cutter: PartCutter, chunks: Buffer[]): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  const feeding = pipeline(Readable.from(chunks), cutter);
  for await (const part of cutter as AsyncIterable<Buffer>) {
    parts.push(Buffer.from(part));
    releasePart(part);
  }
  await feeding;
  return parts;
}

describe('PartCutter', () => {
  it('cuts a byte stream into exact parts and a shorter last one, bytes unchanged', async () => {
    const partSize = 64 * KiB;
    for (const size of [1, partSize - 1, partSize + 1, 5 * partSize + 777, randomInt(1, 20 * partSize)]) {
      const data = randomBytes(size);
      const parts = await cutAll(data, partSize);
      expect(Buffer.concat(parts).equals(data)).toBe(true);
      expect(parts.length).toBe(Math.ceil(size / partSize));
      for (const part of parts.slice(0, -1)) expect(part.length).toBe(partSize);
      expect(parts.at(-1)!.length).toBe(size - (parts.length - 1) * partSize);
    }
  });

  it('ends on an exact part boundary without an empty part, and yields nothing for no bytes', async () => {
    const partSize = 32 * KiB;
    const parts = await cutAll(randomBytes(4 * partSize), partSize);
    expect(parts.map((p) => p.length)).toEqual([partSize, partSize, partSize, partSize]);
    expect(await cutAll(Buffer.alloc(0), partSize)).toEqual([]);
  });

  it('holds at most its buffers: writing waits until a part is released, then goes on', async () => {
    const partSize = 16 * KiB;
    const cutter = new PartCutter(partSize, 3, new PartBufferPool(0));
    const out: Buffer[] = [];
    cutter.on('data', (part: Buffer) => out.push(part));
    const data = randomBytes(10 * partSize);
    let written = false;
    cutter.write(data, () => (written = true));
    await new Promise((r) => setImmediate(r));
    // Three full parts are out and not released: the rest of the write waits.
    expect(out.length).toBe(3);
    expect(cutter.held).toBe(3);
    expect(written).toBe(false);
    releasePart(out[0]!);
    await new Promise((r) => setImmediate(r));
    expect(out.length).toBe(4);
    expect(written).toBe(false);
    for (let i = 1; out.length < 10 || !written; i++) {
      releasePart(out[i]!);
      await new Promise((r) => setImmediate(r));
    }
    expect(written).toBe(true);
    expect(out.length).toBe(10);
    cutter.destroy();
  });

  it('refills released buffers instead of allocating new ones', async () => {
    const partSize = 16 * KiB;
    const pool = new PartBufferPool(1024 * KiB);
    const cutter = new PartCutter(partSize, 3, pool);
    const memories = new Set<ArrayBufferLike>();
    const feeding = pipeline(Readable.from([randomBytes(40 * partSize)]), cutter);
    for await (const part of cutter as AsyncIterable<Buffer>) {
      memories.add(part.buffer);
      releasePart(part);
    }
    await feeding;
    // Released at once, each part's buffer takes the part after the next one.
    expect(memories.size).toBeLessThanOrEqual(3);
    expect(pool.idleSize).toBe(memories.size * partSize);
  });

  it('gives its filling buffer back when destroyed, and a late release still returns to the pool', async () => {
    const partSize = 16 * KiB;
    const pool = new PartBufferPool(1024 * KiB);
    const cutter = new PartCutter(partSize, 3, pool);
    const out: Buffer[] = [];
    cutter.on('data', (part: Buffer) => out.push(part));
    cutter.on('error', () => undefined);
    cutter.write(randomBytes(partSize + 10));
    await new Promise((r) => setImmediate(r));
    expect(out.length).toBe(1);
    cutter.destroy(new Error('source failed'));
    expect(pool.idleSize).toBe(partSize);
    releasePart(out[0]!);
    expect(pool.idleSize).toBe(2 * partSize);
  });
});

/** Random bytes in a buffer of their own (not a slice of Node's pool, as small ones can be). */
function owned(size: number): Buffer {
  const chunk = Buffer.allocUnsafeSlow(size);
  randomBytes(size).copy(chunk);
  return chunk;
}

describe('freeing written chunks', () => {
  /** Stands for freeChunk: records the chunk and spoils its bytes, so a chunk handed over too early shows. */
  const spoiling = (freed: Buffer[]) => (chunk: Buffer) => {
    freed.push(chunk);
    chunk.fill(0);
  };

  it('hands each chunk over once it is copied, in order, parts unchanged', async () => {
    const partSize = 16 * KiB;
    const chunks = Array.from({ length: 12 }, () => owned(randomInt(1, 3 * partSize)));
    const expected = Buffer.concat(chunks);
    const freed: Buffer[] = [];
    const parts = await partsOf(new PartCutter(partSize, 2, new PartBufferPool(1024 * KiB), { freeWrittenChunk: spoiling(freed) }), chunks);
    expect(Buffer.concat(parts).equals(expected)).toBe(true);
    expect(freed).toHaveLength(chunks.length);
    freed.forEach((chunk, i) => expect(chunk).toBe(chunks[i]));
  });

  it('hands a chunk over only after every listener of the source saw it whole', async () => {
    // As in the packer: yazl forwards a body's chunk to the output, which writes it into the
    // cutter at once, and a listener added after yazl's (the resume checkpoints) reads it next.
    const partSize = 16 * KiB;
    const chunks = Array.from({ length: 20 }, () => owned(randomInt(1, 2 * partSize)));
    const expected = Buffer.concat(chunks);
    const source = new Readable({ read() {} });
    const freed: Buffer[] = [];
    const cutter = new PartCutter(partSize, 2, new PartBufferPool(1024 * KiB), { freeWrittenChunk: spoiling(freed) });
    source.pipe(cutter);
    const seen: Buffer[] = [];
    source.on('data', (chunk: Buffer) => seen.push(Buffer.from(chunk)));
    const parts: Buffer[] = [];
    cutter.on('data', (part: Buffer) => {
      parts.push(Buffer.from(part));
      releasePart(part);
    });
    for (const chunk of chunks) {
      source.push(chunk);
      await new Promise((r) => setImmediate(r));
    }
    source.push(null);
    await new Promise((r) => cutter.once('end', r));
    expect(Buffer.concat(seen).equals(expected)).toBe(true);
    expect(Buffer.concat(parts).equals(expected)).toBe(true);
    expect(freed).toHaveLength(chunks.length);
  });

  it('keeps the chunks without the option', async () => {
    const chunk = owned(40 * KiB);
    const copy = Buffer.from(chunk);
    const cutter = new PartCutter(16 * KiB, 2, new PartBufferPool(1024 * KiB));
    const feeding = pipeline(Readable.from([chunk]), cutter);
    for await (const part of cutter as AsyncIterable<Buffer>) releasePart(part);
    await feeding;
    expect(chunk.equals(copy)).toBe(true);
  });
});

describe('PartBufferPool', () => {
  it('keeps idle buffers up to its cap, by size', () => {
    const pool = new PartBufferPool(3 * KiB);
    const a = pool.take(KiB);
    const b = pool.take(KiB);
    const c = pool.take(2 * KiB);
    pool.give(a);
    pool.give(c);
    pool.give(b); // over the cap: left to the GC
    expect(pool.idleSize).toBe(3 * KiB);
    expect(pool.take(KiB)).toBe(a);
    expect(pool.take(2 * KiB)).toBe(c);
    expect(pool.take(KiB)).not.toBe(b);
    expect(pool.idleSize).toBe(0);
  });

  it('ignores bodies that are not part buffers', () => {
    expect(() => releasePart(Buffer.alloc(10))).not.toThrow();
    expect(() => releasePart('text')).not.toThrow();
    expect(() => releasePart(undefined)).not.toThrow();
  });
});

describe('sendPartsOf', () => {
  const partSize = 16 * KiB;
  /** `size` bytes as chunks of random sizes, each a fresh copy (as a socket read is). */
  const chunksOf = (data: Buffer) => {
    const chunks: Buffer[] = [];
    for (let at = 0; at < data.length; ) {
      const n = Math.min(data.length - at, randomInt(1, partSize * 2));
      chunks.push(Buffer.from(data.subarray(at, at + n)));
      at += n;
    }
    return chunks;
  };
  const tick = () => new Promise((r) => setImmediate(r));

  it('hands every part to send in order, by index, in two buffers in all, passed-over parts too', async () => {
    const data = randomBytes(11 * partSize + 123);
    const pool = new PartBufferPool(1024 * KiB);
    const seen = new Map<number, Buffer>();
    const count = await sendPartsOf(Readable.from(chunksOf(data)), partSize, async (index, part) => {
      // Every third part is passed over (a part another writer stores): its buffer comes back all the same.
      if (index % 3 === 1) return;
      await tick();
      seen.set(index, Buffer.from(part));
    }, { pool });
    expect(count).toBe(12);
    for (const [index, part] of seen) expect(part.equals(data.subarray(index * partSize, (index + 1) * partSize))).toBe(true);
    expect(seen.get(11)!.length).toBe(123);
    expect(pool.allocated).toBe(2);
    expect(pool.idleSize).toBe(2 * partSize);
  });

  it("keeps a part's buffer until its send settles, whatever the store's client releases", async () => {
    const data = randomBytes(8 * partSize);
    const pool = new PartBufferPool(1024 * KiB);
    const sent: Buffer[] = [];
    await sendPartsOf(Readable.from(chunksOf(data)), partSize, async (_index, part) => {
      // The store's client gives a part back once it has answered (releasePart); the send then
      // goes on with the part (records it) before it settles: the bytes must not change meanwhile.
      releasePart(part);
      await tick();
      await tick();
      sent.push(Buffer.from(part));
    }, { pool });
    expect(Buffer.concat(sent).equals(data)).toBe(true);
  });

  it('stops at the first failed send, waits for the sends under way, and rejects with its error', async () => {
    let read = 0;
    async function* body() {
      for (let i = 0; i < 100; i++) {
        read++;
        yield randomBytes(partSize);
      }
    }
    const settled: number[] = [];
    const failure = new Error('the store refused part 3');
    await expect(
      sendPartsOf(body(), partSize, async (index) => {
        await tick();
        if (index === 3) throw failure;
        await tick();
        settled.push(index);
      }),
    ).rejects.toBe(failure);
    expect(read).toBeLessThan(10);
    expect(settled).toContain(2);
  });

  it("rejects with the body's error", async () => {
    async function* body() {
      yield randomBytes(partSize + 1);
      throw new Error('origin reset');
    }
    await expect(sendPartsOf(body(), partSize, async () => undefined)).rejects.toThrow('origin reset');
  });
});
