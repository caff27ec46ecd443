import { describe, expect, it } from '@jest/globals';
import { planZip } from '@ap/zip';
import { entryNameOf, layoutOfFiles } from './file-rows';

describe('what a bin file row gives', () => {
  it('lays out a bin from its rows\' entry names and sizes', () => {
    const rows = [
      { entryName: 'given.txt', size: 10n },
      { entryName: 'b/c.bin', size: 70_000n },
    ];
    expect(layoutOfFiles(rows, new Date(0))).toEqual(planZip([{ name: 'given.txt', size: 10 }, { name: 'b/c.bin', size: 70_000 }], { mtime: new Date(0) }));
  });

  it('names an entry from the given name, else the response', () => {
    expect(entryNameOf({ position: 0, filename: 'x/y.txt' }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('x/y.txt');
    expect(entryNameOf({ position: 0, filename: null }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('h.bin');
    expect(entryNameOf({ position: 0, filename: null }, { finalUrl: 'http://o/u.dat' })).toBe('u.dat');
  });
});
