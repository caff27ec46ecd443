import { describe, expect, it } from '@jest/globals';
import { layoutOfFiles, planZip } from './layout';

describe('the layout of a bin\'s files', () => {
  it('is the plan of their entry names and sizes', () => {
    const rows = [
      { entryName: 'given.txt', size: 10n },
      { entryName: 'b/c.bin', size: 70_000n },
    ];
    expect(layoutOfFiles(rows, new Date(0))).toEqual(planZip([{ name: 'given.txt', size: 10 }, { name: 'b/c.bin', size: 70_000 }], { mtime: new Date(0) }));
  });
});
