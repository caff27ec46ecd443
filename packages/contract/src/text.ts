// Small string helpers shared by the contract's rules.
//
// "Characters" (decision): where docs/api.md#limits counts characters (zip_filename, API key name, metadata
// keys and values) they are Unicode code points, which is also how Postgres counts the
// VARCHAR(255) columns these values are stored in. Byte limits (entry names) are UTF-8 bytes.

/** Number of Unicode code points (a lone surrogate counts as one). */
export function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const d = value.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** UTF-8 byte length (what `Buffer.byteLength(value, 'utf8')` gives, without Buffer). */
export function utf8Length(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length && isLowSurrogate(value.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else n += 3; // BMP, or a lone surrogate (encoded as U+FFFD, 3 bytes)
  }
  return n;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** Control characters: C0 (including NUL), DEL and C1 (Unicode category Cc). */
const CONTROL = /\p{Cc}/u;
const CONTROL_GLOBAL = /\p{Cc}/gu;
/** An unpaired UTF-16 surrogate: not encodable as UTF-8 (it would silently become U+FFFD). */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATE_GLOBAL = /\p{Cs}/gu;

export function hasControlCharacter(value: string): boolean {
  return CONTROL.test(value);
}

export function hasLoneSurrogate(value: string): boolean {
  return LONE_SURROGATE.test(value);
}

export function stripControlCharacters(value: string): string {
  return value.replace(CONTROL_GLOBAL, '').replace(LONE_SURROGATE_GLOBAL, '');
}

/**
 * Splits a file name at its last extension: `photos.tar.gz` -> [`photos.tar`, `.gz`].
 *
 * Decision: an extension is a `.` followed by at least one character, and a `.` at position 0
 * is not an extension separator. So `.hidden` and `a.` have no extension (-> [name, '']), and
 * `.config.zip` -> [`.config`, `.zip`]. Everything after the last `.` counts, whatever it is.
 */
export function splitExtension(name: string): [base: string, ext: string] {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return [name, ''];
  return [name.slice(0, dot), name.slice(dot)];
}

const graphemes = typeof Intl !== 'undefined' && 'Segmenter' in Intl ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;

/**
 * The longest prefix of `value` whose UTF-8 form is at most `maxBytes`, cut at a grapheme
 * boundary (so an accent or emoji sequence is never split), or at a code point boundary when
 * even one grapheme does not fit.
 */
export function truncateUtf8(value: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  if (utf8Length(value) <= maxBytes) return value;
  let out = '';
  let bytes = 0;
  if (graphemes) {
    for (const { segment } of graphemes.segment(value)) {
      const b = utf8Length(segment);
      if (bytes + b > maxBytes) break;
      out += segment;
      bytes += b;
    }
    if (out !== '') return out;
  }
  for (const cp of value) {
    const b = utf8Length(cp);
    if (bytes + b > maxBytes) break;
    out += cp;
    bytes += b;
  }
  return out;
}
