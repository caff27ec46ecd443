import { describe, expect, it } from '@jest/globals';
import { createLogger } from '@ap/log';
import { createDurableWriter } from './durable-usage';

describe('createDurableWriter', () => {
  it('tries a write again until it is taken, in the background, and counts what waits', async () => {
    const writer = createDurableWriter(createLogger('test', 'silent'), [20, 40]);
    const taken: number[] = [];
    let failuresLeft = 3;
    const write = async () => {
      if (failuresLeft-- > 0) throw new Error('connection refused');
      taken.push(Date.now());
    };
    await writer.write(write, 'usage');
    expect(taken).toEqual([]);
    expect(writer.pending).toBe(1);
    for (let i = 0; i < 100 && taken.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(taken).toHaveLength(1);
    expect(writer.pending).toBe(0);
  });

  it('writes once when the first attempt is taken', async () => {
    const writer = createDurableWriter(createLogger('test', 'silent'));
    let writes = 0;
    await writer.write(async () => void writes++, 'usage');
    expect({ writes, pending: writer.pending }).toEqual({ writes: 1, pending: 0 });
  });
});
