import { describe, expect, it } from '@jest/globals';
import { codePointLength, hasControlCharacter, hasLoneSurrogate, splitExtension, stripControlCharacters, truncateUtf8, utf8Length } from './text';

describe('text helpers', () => {
  it('counts code points and UTF-8 bytes like Postgres and Buffer do', () => {
    for (const s of ['', 'abc', 'é', '€', '😀', 'a😀b', '\ud800', '\udc00x', '👨‍👩‍👧']) {
      expect({ s, bytes: utf8Length(s) }).toEqual({ s, bytes: Buffer.byteLength(s, 'utf8') });
      expect({ s, chars: codePointLength(s) }).toEqual({ s, chars: Array.from(s).length });
    }
    expect(codePointLength('😀😀')).toBe(2);
  });

  it('detects control characters and unpaired surrogates', () => {
    expect(['\u0000', '\u001f', '\u007f', '\u0085', '\u009f'].every(hasControlCharacter)).toBe(true);
    expect(['a b', 'é', '\u00a0', '\u200b'].some(hasControlCharacter)).toBe(false);
    expect(hasLoneSurrogate('a\ud800')).toBe(true);
    expect(hasLoneSurrogate('😀')).toBe(false);
    expect(stripControlCharacters('a\u0000b\u0085\ud800c😀')).toBe('abc😀');
  });

  it('splits at the last extension (no separator at position 0 or at the end)', () => {
    expect(splitExtension('photos.tar.gz')).toEqual(['photos.tar', '.gz']);
    expect(splitExtension('abc')).toEqual(['abc', '']);
    expect(splitExtension('.hidden')).toEqual(['.hidden', '']);
    expect(splitExtension('a.')).toEqual(['a.', '']);
    expect(splitExtension('.a.b')).toEqual(['.a', '.b']);
  });

  it('truncates to a byte budget at grapheme boundaries', () => {
    expect(truncateUtf8('abcdef', 4)).toBe('abcd');
    expect(truncateUtf8('ééé', 5)).toBe('éé');
    expect(truncateUtf8('e\u0301e\u0301', 4)).toBe('e\u0301'); // never strips the accent off
    expect(truncateUtf8('😀😀', 7)).toBe('😀');
    expect(truncateUtf8('short', 255)).toBe('short');
    expect(truncateUtf8('abc', 0)).toBe('');
    // One grapheme larger than the budget: cut at code points instead of returning nothing.
    expect(truncateUtf8('👨‍👩‍👧', 8)).toBe('👨\u200d');
  });
});
