import { describe, expect, it } from '@jest/globals';
import { formatBytes, parseSize } from './sizes';
import { parseUrlList } from './url-list';

describe('formatBytes', () => {
  it('writes decimal units with one decimal at most', () => {
    expect([0, 999, 1000, 1_500_000, 251_234, 12_345_678, 104_857_600, 999_960, 2e9, 536_870_912_000, 3e12].map(formatBytes)).toEqual([
      '0 B', '999 B', '1 kB', '1.5 MB', '251.2 kB', '12.3 MB', '104.9 MB', '1 MB', '2 GB', '536.9 GB', '3 TB',
    ]);
  });
});

describe('parseSize', () => {
  it('reads bytes, decimal and binary units', () => {
    expect(parseSize('104857600')).toBe(104857600);
    expect(parseSize('100MB')).toBe(100_000_000);
    expect(parseSize('100 mb')).toBe(100_000_000);
    expect(parseSize('2GiB')).toBe(2 * 1024 ** 3);
    expect(parseSize('1.5GB')).toBe(1_500_000_000);
    expect(parseSize('100M')).toBe(100 * 1024 ** 2);
  });
  it('refuses what is not a size', () => {
    for (const bad of ['', 'MB', '12QB', '-5', '1e9', '5 5']) expect(parseSize(bad)).toBeNull();
  });
});

describe('parseUrlList', () => {
  it('reads one URL per line with an optional filename, skipping blanks and comments', () => {
    expect(parseUrlList('# list\nhttps://a.example/1\n\n  https://a.example/2  my file.txt \r\nhttps://a.example/3\n\thttps://a.example/4\tfour.bin')).toEqual([
      { url: 'https://a.example/1' },
      { url: 'https://a.example/2', filename: 'my file.txt' },
      { url: 'https://a.example/3' },
      { url: 'https://a.example/4', filename: 'four.bin' },
    ]);
  });
});
