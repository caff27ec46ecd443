import { randomBytes, randomInt } from 'node:crypto';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from '@jest/globals';
import { freeChunk } from './free-chunk';

const KiB = 1024;

/** Random bytes in a buffer of their own (not a slice of Node's pool, as small ones can be). */
function owned(size: number): Buffer {
  const chunk = Buffer.allocUnsafeSlow(size);
  randomBytes(size).copy(chunk);
  return chunk;
}

describe('freeChunk', () => {
  it('detaches a chunk that owns its memory, leaves slices of shared memory alone', () => {
    const ownChunks = Array.from({ length: 6 }, () => owned(randomInt(1, 64 * KiB)));
    const shared = randomBytes(40 * KiB);
    const sharedCopy = Buffer.from(shared);
    const slices = [shared.subarray(0, 10 * KiB), shared.subarray(10 * KiB)];
    const pooled = Buffer.from('a small chunk from the shared pool');
    for (const chunk of [...ownChunks, ...slices, pooled]) freeChunk(chunk);
    // Detached: their memory was handed back, they read as empty.
    for (const chunk of ownChunks) expect([chunk.length, chunk.buffer.byteLength]).toEqual([0, 0]);
    expect(shared.equals(sharedCopy)).toBe(true);
    expect(pooled.toString()).toBe('a small chunk from the shared pool');
  });

  it('gives back the memory of chunks old enough to be promoted at the next scavenge, not the next full GC', () => {
    v8.setFlagsFromString('--expose-gc');
    // Array buffers are otherwise swept on a background thread, after gc() has returned.
    v8.setFlagsFromString('--no-concurrent-array-buffer-sweeping');
    const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void;
    const MiB = 1024 * KiB;
    /** Chunks that sat in a buffer long enough for two scavenges (promoted), then were written. */
    const freedByScavenge = (free: boolean) => {
      const chunks = Array.from({ length: 512 }, () => Buffer.allocUnsafeSlow(64 * KiB));
      gc({ type: 'minor' });
      gc({ type: 'minor' });
      const before = process.memoryUsage().arrayBuffers;
      if (free) for (const chunk of chunks) freeChunk(chunk);
      chunks.length = 0;
      gc({ type: 'minor' });
      const freed = before - process.memoryUsage().arrayBuffers;
      gc({ type: 'major' });
      return freed;
    };
    expect(freedByScavenge(false)).toBeLessThan(4 * MiB);
    expect(freedByScavenge(true)).toBeGreaterThan(30 * MiB);
  });
});
