import { describe, expect, it } from '@jest/globals';
import {
  createEntryNameDeduper,
  dedupeEntryNames,
  deriveEntryName,
  entryNameOf,
  lastUrlSegment,
  parseContentDispositionFilename,
  sanitizeDerivedName,
  validateGivenFilename,
} from './entry-names';
import { utf8Length } from './text';

const rejected = (name: string) => {
  const r = validateGivenFilename(name);
  if (r.ok) throw new Error(`expected ${JSON.stringify(name)} to be rejected`);
  return r.message;
};

describe('validateGivenFilename', () => {
  it('accepts names and folder paths', () => {
    for (const name of ['a.txt', 'folder/empty.txt', 'a/b/c d.pdf', 'résumé.bin', '.hidden', 'x', 'a..b', 'C', 'é'.repeat(127)]) {
      expect({ name, ok: validateGivenFilename(name).ok }).toEqual({ name, ok: true });
    }
  });

  it('rejects absolute paths', () => {
    expect(rejected('/etc/passwd')).toContain('relative');
    expect(rejected('C:/x.txt')).toContain('drive letter');
    expect(rejected('c:x.txt')).toContain('drive letter');
  });

  it('rejects .. and empty segments (and . segments)', () => {
    expect(rejected('../a.txt')).toContain('".."');
    expect(rejected('a/../b.txt')).toContain('".."');
    expect(rejected('a/..')).toContain('".."');
    expect(rejected('a//b.txt')).toContain('empty path segment');
    expect(rejected('dir/')).toContain('empty path segment');
    expect(rejected('./a.txt')).toContain('"."');
    expect(rejected('')).toContain('empty');
  });

  it('rejects backslashes, NUL and control characters, unpaired surrogates', () => {
    expect(rejected('a\\b.txt')).toContain('backslash');
    expect(rejected('a\u0000b')).toContain('NUL');
    expect(rejected('a\nb')).toContain('control');
    expect(rejected('a\tb')).toContain('control');
    expect(rejected('a\u007fb')).toContain('control');
    expect(rejected('a\u0085b')).toContain('control');
    expect(rejected('a\ud800b')).toContain('surrogate');
  });

  it('rejects over 255 bytes of UTF-8 (not characters)', () => {
    expect(validateGivenFilename('a'.repeat(255)).ok).toBe(true);
    expect(rejected('a'.repeat(256))).toContain('255 bytes');
    expect(validateGivenFilename('é'.repeat(127)).ok).toBe(true); // 254 bytes
    expect(rejected('é'.repeat(128))).toContain('got 256');
    expect(rejected(`${'d/'.repeat(127)}ab`)).toContain('got 256'); // the whole path counts
  });
});

describe('parseContentDispositionFilename', () => {
  it('prefers filename* (RFC 5987) over filename', () => {
    expect(parseContentDispositionFilename(`attachment; filename="fallback.bin"; filename*=UTF-8''r%C3%A9sum%C3%A9.bin`)).toBe('résumé.bin');
    expect(parseContentDispositionFilename(`attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.bin; filename="fallback.bin"`)).toBe('résumé.bin');
  });

  it('handles quoted strings with escapes and semicolons, tokens, case-insensitive names', () => {
    expect(parseContentDispositionFilename('attachment; filename="a \\"b\\" c.txt"')).toBe('a "b" c.txt');
    expect(parseContentDispositionFilename('attachment; filename="a;b.txt"; size=3')).toBe('a;b.txt');
    expect(parseContentDispositionFilename('attachment; filename=plain.txt')).toBe('plain.txt');
    expect(parseContentDispositionFilename('inline;FILENAME=Upper.TXT')).toBe('Upper.TXT');
    expect(parseContentDispositionFilename('attachment;   filename =  "spaced.txt"  ')).toBe('spaced.txt');
    expect(parseContentDispositionFilename('filename=no-type.txt')).toBe('no-type.txt');
  });

  it('decodes ISO-8859-1 ext-values and tolerates a quoted ext-value and a language tag', () => {
    expect(parseContentDispositionFilename(`attachment; filename*=iso-8859-1'en'%A3%20rates.txt`)).toBe('£ rates.txt');
    expect(parseContentDispositionFilename(`attachment; filename*="UTF-8''%E2%82%AC.txt"`)).toBe('€.txt');
  });

  it('ignores an undecodable filename* and uses filename', () => {
    expect(parseContentDispositionFilename(`attachment; filename*=UTF-8''%FF%FE.txt; filename="ok.txt"`)).toBe('ok.txt');
    expect(parseContentDispositionFilename(`attachment; filename*=KOI8-R''%C1.txt; filename="ok.txt"`)).toBe('ok.txt');
    expect(parseContentDispositionFilename(`attachment; filename*=UTF-8''%G1.txt; filename="ok.txt"`)).toBe('ok.txt');
    expect(parseContentDispositionFilename(`attachment; filename*=no-quotes.txt; filename="ok.txt"`)).toBe('ok.txt');
  });

  it('decodes a raw UTF-8 filename that arrived as Latin-1 text, keeps real Latin-1', () => {
    const raw = Buffer.from('résumé.pdf', 'utf8').toString('latin1');
    expect(parseContentDispositionFilename(`attachment; filename="${raw}"`)).toBe('résumé.pdf');
    expect(parseContentDispositionFilename('attachment; filename="caf\u00e9.txt"')).toBe('café.txt');
  });

  it('returns null without a filename', () => {
    expect(parseContentDispositionFilename(null)).toBeNull();
    expect(parseContentDispositionFilename(undefined)).toBeNull();
    expect(parseContentDispositionFilename('')).toBeNull();
    expect(parseContentDispositionFilename('attachment')).toBeNull();
    expect(parseContentDispositionFilename('attachment; filename=""')).toBeNull();
    expect(parseContentDispositionFilename('attachment; name="x.txt"')).toBeNull();
  });
});

describe('lastUrlSegment', () => {
  it('takes the last non-empty segment, percent-decoded, ignoring query and fragment', () => {
    expect(lastUrlSegment('https://h/docs/report%20final.pdf?x=1#y')).toBe('report final.pdf');
    expect(lastUrlSegment('https://h/x/')).toBe('x');
    expect(lastUrlSegment('https://h/a//')).toBe('a');
    expect(lastUrlSegment('https://h/r%C3%A9sum%C3%A9')).toBe('résumé');
  });
  it('keeps escapes that are not UTF-8 as written', () => {
    expect(lastUrlSegment('https://h/caf%E9%20ok.txt')).toBe('caf%E9 ok.txt');
  });
  it('null for no path or an invalid URL', () => {
    expect(lastUrlSegment('https://h/')).toBeNull();
    expect(lastUrlSegment('https://h')).toBeNull();
    expect(lastUrlSegment('not a url')).toBeNull();
    expect(lastUrlSegment(null)).toBeNull();
  });
});

describe('sanitizeDerivedName', () => {
  it('strips path parts, backslashes, .. and control characters', () => {
    expect(sanitizeDerivedName('../../etc/passwd')).toBe('passwd');
    expect(sanitizeDerivedName('C:\\Users\\x\\evil.exe')).toBe('evil.exe');
    expect(sanitizeDerivedName('a/..')).toBe('a');
    expect(sanitizeDerivedName('..')).toBe('');
    expect(sanitizeDerivedName('.')).toBe('');
    expect(sanitizeDerivedName('/')).toBe('');
    expect(sanitizeDerivedName('a\u0000b\nc\u0085.txt')).toBe('abc.txt');
    expect(sanitizeDerivedName('  spaced.txt  ')).toBe('spaced.txt');
    expect(sanitizeDerivedName('x\ud800y')).toBe('xy');
  });

  it('cuts to 255 bytes at a character boundary, keeping the extension', () => {
    const long = `${'é'.repeat(200)}.pdf`; // 404 bytes
    const cut = sanitizeDerivedName(long);
    expect(utf8Length(cut)).toBeLessThanOrEqual(255);
    expect(cut).toBe(`${'é'.repeat(125)}.pdf`); // 250 + 4 bytes
    expect(cut.endsWith('.pdf')).toBe(true);
  });

  it('never splits an emoji sequence; drops a long extension rather than the whole base', () => {
    const family = '👨‍👩‍👧'; // 18 bytes, one grapheme
    const cut = sanitizeDerivedName(`${family.repeat(20)}.txt`);
    // 251 bytes for the base: 13 whole sequences (234 bytes); a 14th (252) does not fit.
    expect(cut).toBe(`${family.repeat(13)}.txt`);
  });

  it('cuts a name with a very long extension as a whole', () => {
    const cut = sanitizeDerivedName(`a.${'x'.repeat(300)}`);
    expect(cut).toBe(`a.${'x'.repeat(253)}`);
  });
});

describe('deriveEntryName', () => {
  const base = { givenFilename: null, contentDisposition: null, finalUrl: null, index: 3 };

  it('uses the given filename first, folders included', () => {
    expect(
      deriveEntryName({ ...base, givenFilename: 'folder/empty.txt', contentDisposition: 'attachment; filename="cd.txt"', finalUrl: 'https://h/u.txt' }),
    ).toBe('folder/empty.txt');
  });

  it('then Content-Disposition (filename* first), then the final URL, then file-<index>', () => {
    expect(deriveEntryName({ ...base, contentDisposition: `attachment; filename="f.bin"; filename*=UTF-8''r%C3%A9sum%C3%A9.bin`, finalUrl: 'https://h/dl' })).toBe('résumé.bin');
    expect(deriveEntryName({ ...base, contentDisposition: 'inline', finalUrl: 'https://h/final/target.dat' })).toBe('target.dat');
    expect(deriveEntryName({ ...base, finalUrl: 'https://h/docs/report%20final.pdf' })).toBe('report final.pdf');
    expect(deriveEntryName({ ...base, finalUrl: 'https://h/' })).toBe('file-3');
    expect(deriveEntryName({ index: 1 })).toBe('file-1');
  });

  it('sanitises derived names, falling through when nothing is left', () => {
    expect(deriveEntryName({ ...base, contentDisposition: 'attachment; filename="../../x/evil.sh"' })).toBe('evil.sh');
    expect(deriveEntryName({ ...base, contentDisposition: 'attachment; filename=".."', finalUrl: 'https://h/u.txt' })).toBe('u.txt');
    expect(deriveEntryName({ ...base, finalUrl: 'https://h/a/%2E%2E' })).toBe('file-3');
    expect(deriveEntryName({ ...base, finalUrl: 'https://h/a%2Fb.txt' })).toBe('b.txt');
    expect(deriveEntryName({ ...base, finalUrl: 'https://h/%0A%0D' })).toBe('file-3');
  });

  it('treats an empty given filename as absent, and sanitises an invalid one (never throws)', () => {
    expect(deriveEntryName({ ...base, givenFilename: '', finalUrl: 'https://h/u.txt' })).toBe('u.txt');
    expect(deriveEntryName({ ...base, givenFilename: '/abs/../x//y.txt' })).toBe('abs/x/y.txt');
    expect(deriveEntryName({ ...base, givenFilename: 'a\\b.txt' })).toBe('a/b.txt');
  });
});

describe('dedupeEntryNames', () => {
  it('later duplicates become name (1).ext, name (2).ext ...', () => {
    expect(dedupeEntryNames(['a.txt', 'b.txt', 'a.txt', 'a.txt'])).toEqual(['a.txt', 'b.txt', 'a (1).txt', 'a (2).txt']);
    expect(dedupeEntryNames(['x', 'x'])).toEqual(['x', 'x (1)']);
    expect(dedupeEntryNames(['photos.tar.gz', 'photos.tar.gz'])).toEqual(['photos.tar.gz', 'photos.tar (1).gz']);
    expect(dedupeEntryNames(['.bashrc', '.bashrc'])).toEqual(['.bashrc', '.bashrc (1)']);
  });

  it('a generated name never takes a name used literally, earlier or later', () => {
    expect(dedupeEntryNames(['a.txt', 'a.txt', 'a (1).txt'])).toEqual(['a.txt', 'a (2).txt', 'a (1).txt']);
    expect(dedupeEntryNames(['a (1).txt', 'a.txt', 'a.txt'])).toEqual(['a (1).txt', 'a.txt', 'a (2).txt']);
    expect(dedupeEntryNames(['a.txt', 'a.txt', 'a (1).txt', 'a (1).txt'])).toEqual(['a.txt', 'a (2).txt', 'a (1).txt', 'a (1) (1).txt']);
  });

  it('suffixes the last segment of folder paths', () => {
    expect(dedupeEntryNames(['folder/empty.txt', 'other/empty.txt', 'folder/empty.txt'])).toEqual([
      'folder/empty.txt',
      'other/empty.txt',
      'folder/empty (1).txt',
    ]);
  });

  it('compares case-insensitively after NFC normalisation (keeping each spelling)', () => {
    expect(dedupeEntryNames(['Report.pdf', 'report.PDF'])).toEqual(['Report.pdf', 'report (1).PDF']);
    expect(dedupeEntryNames(['caf\u00e9.txt', 'cafe\u0301.txt'])).toEqual(['caf\u00e9.txt', 'cafe\u0301 (1).txt']);
    expect(dedupeEntryNames(['Dir/a.txt', 'dir/A.txt'])).toEqual(['Dir/a.txt', 'dir/A (1).txt']);
  });

  it('a file never shares its name with a folder: the file yields', () => {
    expect(dedupeEntryNames(['docs', 'docs/a.txt'])).toEqual(['docs (1)', 'docs/a.txt']);
    expect(dedupeEntryNames(['docs/a.txt', 'docs'])).toEqual(['docs/a.txt', 'docs (1)']);
    expect(dedupeEntryNames(['a/b', 'a/b/c', 'a'])).toEqual(['a/b (1)', 'a/b/c', 'a (1)']);
  });

  it('keeps suffixed names within 255 bytes', () => {
    const long = `${'n'.repeat(251)}.txt`; // 255 bytes
    const [first, second] = dedupeEntryNames([long, long]);
    expect(first).toBe(long);
    expect(second).toBe(`${'n'.repeat(247)} (1).txt`);
    expect(utf8Length(second!)).toBe(255);
  });

  it('scales to 20,000 copies of one name', () => {
    const started = Date.now();
    const out = dedupeEntryNames(Array.from({ length: 20_000 }, () => 'same.bin'));
    expect(new Set(out).size).toBe(20_000);
    expect(out[19_999]).toBe('same (19999).bin');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('createEntryNameDeduper (incremental)', () => {
  it('gives the same result as the batch when no later literal collides', () => {
    const names = ['a.txt', 'b/c.txt', 'a.txt', 'B/C.txt', 'a.txt'];
    const d = createEntryNameDeduper();
    expect(names.map((n) => d.take(n))).toEqual(dedupeEntryNames(names));
    expect(names.map((n) => createEntryNameDeduper().take(n))).toEqual(names);
  });

  it('cannot know later literals: a later name that collides gets its own suffix', () => {
    const d = createEntryNameDeduper();
    expect(['a.txt', 'a.txt', 'a (1).txt'].map((n) => d.take(n))).toEqual(['a.txt', 'a (1).txt', 'a (1) (1).txt']);
  });

  it('renames a folder that comes after a file of its name, consistently', () => {
    const d = createEntryNameDeduper();
    expect(['docs', 'docs/a.txt', 'DOCS/b.txt', 'docs/sub/c.txt', 'docs (1)'].map((n) => d.take(n))).toEqual([
      'docs',
      'docs (1)/a.txt',
      'docs (1)/b.txt',
      'docs (1)/sub/c.txt',
      'docs (1) (1)',
    ]);
  });

  it('with upcoming names it avoids them like the batch does', () => {
    const names = ['a.txt', 'a.txt', 'a (1).txt'];
    const d = createEntryNameDeduper(names);
    expect(names.map((n) => d.take(n))).toEqual(['a.txt', 'a (2).txt', 'a (1).txt']);
  });
});

describe('names that break extraction', () => {
  it.each([
    ['CON', 'device'],
    ['nul.txt', 'device'],
    ['docs/Com1.tar.gz', 'device'],
    ['LPT9', 'device'],
    ['aux/readme.md', 'device'],
    ['report.', 'dot or a space'],
    ['report ', 'dot or a space'],
    ['folder./a.txt', 'dot or a space'],
    ['\u202egpj.exe', 'bidirectional'],
    ['a\u2066b.txt', 'bidirectional'],
  ])('rejects the given filename %j', (name, reason) => {
    expect(rejected(name)).toContain(reason);
  });

  it.each(['CONSOLE.txt', 'COM0', 'LPT10', 'nul_file', 'icon.png', 'a.b', '.bashrc', 'a/b.c/d'])('still accepts %j', (name) => {
    expect(validateGivenFilename(name)).toEqual({ ok: true });
  });

  it.each([
    ['CON', '_CON'],
    ['nul.txt', '_nul.txt'],
    ['report. . ', 'report'],
    ['  spaced name .pdf  ', 'spaced name .pdf'],
    ['\u202egpj.exe', 'gpj.exe'],
    ['x\u2067y\u2069.txt', 'xy.txt'],
    ['dir/COM3.log...', '_COM3.log'],
  ])('sanitises the derived name %j to %j', (raw, expected) => {
    expect(sanitizeDerivedName(raw)).toBe(expected);
  });

  it('sanitises names from Content-Disposition and the URL the same way', () => {
    expect(deriveEntryName({ contentDisposition: "attachment; filename*=UTF-8''%E2%80%AEgpj.exe", index: 1 })).toBe('gpj.exe');
    expect(deriveEntryName({ contentDisposition: 'attachment; filename="PRN.pdf"', index: 1 })).toBe('_PRN.pdf');
    expect(deriveEntryName({ finalUrl: 'https://example.com/files/aux.', index: 2 })).toBe('_aux');
    expect(deriveEntryName({ contentDisposition: 'attachment; filename=". ."', finalUrl: 'https://example.com/', index: 3 })).toBe('file-3');
  });

  it('keeps a cut derived name free of a trailing space', () => {
    const name = sanitizeDerivedName(`${'a'.repeat(254)} b`);
    expect(utf8Length(name)).toBeLessThanOrEqual(255);
    expect(name).toMatch(/a$/);
  });
});

describe('a bin file\'s entry name', () => {
  it('is the given name, else the response\'s, else the final URL\'s', () => {
    expect(entryNameOf({ position: 0, filename: 'x/y.txt' }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('x/y.txt');
    expect(entryNameOf({ position: 0, filename: null }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('h.bin');
    expect(entryNameOf({ position: 0, filename: null }, { finalUrl: 'http://o/u.dat' })).toBe('u.dat');
    expect(entryNameOf({ position: 2, filename: null }, { finalUrl: 'http://o/' })).toBe('file-3');
  });
});

describe('":" in names (NTFS reads "a.txt:b" as a hidden stream of a.txt, "C:x" as a drive)', () => {
  it.each(['a.txt:Zone.Identifier', 'C:evil.exe', 'docs/a:b.txt', 'dir:x/a.txt', 'a/b/c:', ':'])('rejects the given filename %j', (name) => {
    expect(rejected(name)).toMatch(/":"|drive letter/);
  });

  it('says why for a ":" after the first character', () => {
    expect(rejected('report.pdf:secret')).toContain('must not contain ":"');
  });

  it.each([
    ['a.txt:Zone.Identifier', 'a.txt_Zone.Identifier'],
    ['C:evil.exe', 'C_evil.exe'],
    ['dir/a:b:c.txt', 'a_b_c.txt'],
  ])('replaces ":" by "_" in the derived name %j', (raw, expected) => {
    expect(sanitizeDerivedName(raw)).toBe(expected);
  });

  it('derives from Content-Disposition, the URL and an invalid given name without ":"', () => {
    expect(deriveEntryName({ contentDisposition: 'attachment; filename="a.txt:Zone.Identifier"', index: 1 })).toBe('a.txt_Zone.Identifier');
    expect(deriveEntryName({ finalUrl: 'https://example.com/files/C%3Aevil.exe', index: 2 })).toBe('C_evil.exe');
    expect(deriveEntryName({ givenFilename: 'docs/a:b.txt', index: 3 })).toBe('docs/a_b.txt');
  });
});

describe('names every desktop can hold (decisions.md wave 5)', () => {
  it.each([
    ['FAQ?.txt', '?'],
    ['Report "final".pdf', '"'],
    ['a|b.txt', '|'],
    ['x<y>.txt', '<'],
    ['abc*def/readme.txt', '*'],
    ['docs/b>.txt', '>'],
  ])('rejects the given filename %j, naming %j', (name, character) => {
    expect(rejected(name)).toContain(`must not contain ${JSON.stringify(character)}`);
  });

  it('replaces * ? " < > | by "_" in names derived from Content-Disposition, the URL and an S3 key', () => {
    expect(deriveEntryName({ contentDisposition: 'attachment; filename="Report \\"final\\".pdf"', index: 1 })).toBe('Report _final_.pdf');
    expect(deriveEntryName({ finalUrl: 'https://example.com/files/FAQ%3F%7C%2A.txt', index: 2 })).toBe('FAQ___.txt');
    // A listed S3 object's name (folder/key) goes through the given-name rules and is cleaned.
    expect(deriveEntryName({ givenFilename: 'photos/x<y>.jpg', index: 3 })).toBe('photos/x_y_.jpg');
    expect(sanitizeDerivedName('a|b*c?.txt')).toBe('a_b_c_.txt');
  });

  it('normalises every name to NFC, before the rules and before de-duplication', () => {
    const decomposed = 'Cafe\u0301.txt';
    const composed = 'Caf\u00e9.txt';
    expect(validateGivenFilename(decomposed)).toEqual({ ok: true });
    expect(deriveEntryName({ givenFilename: decomposed, index: 1 })).toBe(composed);
    expect(deriveEntryName({ contentDisposition: `attachment; filename*=UTF-8''Cafe%CC%81.txt`, index: 1 })).toBe(composed);
    expect(deriveEntryName({ finalUrl: 'https://example.com/Cafe%CC%81.txt', index: 1 })).toBe(composed);
    expect(deriveEntryName({ givenFilename: 'dir/Cafe\u0301:x.txt', index: 1 })).toBe('dir/Caf\u00e9_x.txt');
    // One name, however it was typed: the second gets the suffix, and both are NFC.
    const names = [decomposed, composed].map((n) => deriveEntryName({ givenFilename: n, index: 1 }));
    expect(dedupeEntryNames(names)).toEqual([composed, 'Caf\u00e9 (1).txt']);
    // A name that is 255 bytes only once composed is accepted.
    expect(validateGivenFilename('e\u0301'.repeat(126) + '.t').ok).toBe(true);
  });
});
