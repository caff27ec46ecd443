import { describe, expect, it } from '@jest/globals';
import { formatBytes, parseSize, parseUrlList } from './sizes';

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
    expect(parseUrlList('# list\nhttps://a.example/1\n\n  https://a.example/2  my file.txt \r\nhttps://a.example/3\n')).toEqual([
      { url: 'https://a.example/1' },
      { url: 'https://a.example/2', filename: 'my file.txt' },
      { url: 'https://a.example/3' },
    ]);
  });
});

it('formats bytes', () => {
  expect(formatBytes(999)).toBe('999 B');
  expect(formatBytes(1_500_000)).toBe('1.50 MB');
});
