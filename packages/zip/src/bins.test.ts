import { randomInt } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { packBins, type BinInput } from './bins';
import { zipSize } from './layout';

const GiB = 2 ** 30;

function files(sizes: number[], name = (i: number) => `file-${i}.bin`): BinInput[] {
  return sizes.map((size, index) => ({ index, name: name(index), size }));
}

function binSize(input: BinInput[], indexes: number[]): number {
  return zipSize(indexes.map((i) => input[i]!))!;
}

/** What one file costs inside a ZIP beyond its body (below 4 GiB): records and its end share. */
const perFile = (name: string) => 30 + Buffer.byteLength(name) + 9 + 16 + 46 + Buffer.byteLength(name) + 9;

describe('packBins', () => {
  it('preserve-order fills bins in input order and closes a bin on the first file that does not fit', () => {
    const input = files([400, 400, 400, 100, 900, 50]);
    const max = zipSize([input[0]!, input[1]!])!; // exactly two of the 400s
    const packed = packBins(input, { maxZipSize: max, strategy: 'preserve-order', allowOversize: false });
    expect(packed).toEqual({
      ok: true,
      bins: [
        { indexes: [0, 1], size: max, oversize: false },
        { indexes: [2, 3], size: binSize(input, [2, 3]), oversize: false },
        { indexes: [4], size: binSize(input, [4]), oversize: false },
        { indexes: [5], size: binSize(input, [5]), oversize: false },
      ],
    });
  });

  it('counts the records, not just the bodies, against the limit', () => {
    const input = files([500, 500]);
    const bodiesOnly = 1000;
    const packed = packBins(input, { maxZipSize: bodiesOnly + 2 * perFile('file-0.bin') + 22 - 1, strategy: 'preserve-order', allowOversize: false });
    expect(packed.ok && packed.bins.map((b) => b.indexes)).toEqual([[0], [1]]);
    const fits = packBins(input, { maxZipSize: bodiesOnly + 2 * perFile('file-0.bin') + 22, strategy: 'preserve-order', allowOversize: false });
    expect(fits.ok && fits.bins.map((b) => b.indexes)).toEqual([[0, 1]]);
  });

  it('gives an allowed oversize file a bin of its own in its input position, and refuses it otherwise', () => {
    const input = files([100, 100, 5000, 100]);
    const max = zipSize([input[0]!, input[1]!])!;
    const allowed = packBins(input, { maxZipSize: max, strategy: 'preserve-order', allowOversize: true });
    expect(allowed.ok && allowed.bins.map((b) => [b.indexes, b.oversize])).toEqual([
      [[0, 1], false],
      [[2], true],
      [[3], false],
    ]);
    const refused = packBins(input, { maxZipSize: max, strategy: 'ffd', allowOversize: false });
    expect(refused).toMatchObject({ ok: false, index: 2 });
  });

  it('ffd places the largest first into the first bin that fits, ties in input order, entries kept in input order', () => {
    const input = files([300, 300, 700, 700]);
    const max = zipSize([input[0]!, input[2]!])!;
    const ffd = packBins(input, { maxZipSize: max, strategy: 'ffd', allowOversize: false });
    expect(ffd.ok && ffd.bins.map((b) => b.indexes)).toEqual([
      [0, 2],
      [1, 3],
    ]);
    const ordered = packBins(input, { maxZipSize: max, strategy: 'preserve-order', allowOversize: false });
    expect(ordered.ok && ordered.bins.map((b) => b.indexes)).toEqual([[0, 1], [2], [3]]);
  });

  it('never exceeds the limit and reports each bin at its exact size, for random inputs in both strategies', () => {
    for (let round = 0; round < 200; round++) {
      const input = files(
        Array.from({ length: randomInt(1, 60) }, () => randomInt(0, 10_000)),
        (i) => `${'ü'.repeat(randomInt(0, 5))}${i}.dat`,
      );
      const max = randomInt(200, 40_000);
      for (const strategy of ['preserve-order', 'ffd'] as const) {
        const packed = packBins(input, { maxZipSize: max, strategy, allowOversize: true });
        if (!packed.ok) throw new Error(packed.error);
        expect(packed.bins.flatMap((b) => b.indexes).sort((a, b) => a - b)).toEqual(input.map((f) => f.index));
        for (const bin of packed.bins) {
          expect(bin.size).toBe(binSize(input, bin.indexes));
          expect(bin.indexes).toEqual([...bin.indexes].sort((a, b) => a - b));
          if (bin.oversize) expect(bin.indexes).toHaveLength(1);
          else expect(bin.size).toBeLessThanOrEqual(max);
        }
        if (strategy === 'preserve-order') expect(packed.bins.flatMap((b) => b.indexes)).toEqual(input.map((f) => f.index));
      }
    }
  });

  it('sizes bins beyond 4 GiB with their ZIP64 records, in input order even for ffd', () => {
    const input = files([3 * GiB, 1 * GiB, 2 * GiB, 5 * GiB, 1 * GiB]);
    const max = 6 * GiB;
    for (const strategy of ['preserve-order', 'ffd'] as const) {
      const packed = packBins(input, { maxZipSize: max, strategy, allowOversize: false });
      if (!packed.ok) throw new Error(packed.error);
      for (const bin of packed.bins) {
        expect(bin.size).toBe(binSize(input, bin.indexes));
        expect(bin.size).toBeLessThanOrEqual(max);
      }
    }
  });
});
