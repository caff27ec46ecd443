// Where a derived entry name comes from: a Content-Disposition header or the URL's last segment
// (docs/product-rules.md#counts-and-names). Names found here are not yet safe: entry-names.ts
// sanitises them.
//
// Decisions (where docs/product-rules.md#counts-and-names is silent):
// - Content-Disposition: `filename*` (RFC 5987, charsets UTF-8 and ISO-8859-1) wins over
//   `filename`; an undecodable `filename*` is ignored. A plain `filename` whose bytes are valid
//   UTF-8 is decoded as UTF-8 (servers often send raw UTF-8, which arrives as Latin-1 text).
//   Parameter names are case-insensitive; the first occurrence of a parameter counts. RFC 2231
//   continuations (`filename*0=`) and RFC 2047 encoded words are not decoded.
// - URL: the last non-empty segment of the final URL's path, percent-decoded as UTF-8; escapes
//   that are not valid UTF-8 stay as they are. The query and fragment are ignored.

// Content-Disposition (RFC 6266, RFC 5987)

/** Parameters of a Content-Disposition value, lower-cased names, first occurrence wins. */
function parseParameters(header: string): Map<string, string> {
  const params = new Map<string, string>();
  let i = 0;
  const n = header.length;
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  // Disposition type: a token before the first ';' (skipped; a missing type is tolerated).
  const firstSemi = header.indexOf(';');
  const firstEq = header.indexOf('=');
  if (firstEq === -1 || (firstSemi !== -1 && firstSemi < firstEq)) i = firstSemi === -1 ? n : firstSemi;
  while (i < n) {
    skipSpace();
    if (header[i] === ';') {
      i++;
      continue;
    }
    let name = '';
    while (i < n && header[i] !== ';' && header[i] !== '=') name += header[i++];
    name = name.trim().toLowerCase();
    if (header[i] !== '=') {
      // A parameter without a value: skip it.
      while (i < n && header[i] !== ';') i++;
      continue;
    }
    i++; // '='
    skipSpace();
    let value = '';
    if (header[i] === '"') {
      i++;
      while (i < n && header[i] !== '"') {
        if (header[i] === '\\' && i + 1 < n) i++;
        value += header[i++];
      }
      i++; // closing quote (or end)
      while (i < n && header[i] !== ';') i++; // ignore junk after the quoted string
    } else {
      while (i < n && header[i] !== ';') value += header[i++];
      value = value.trim();
    }
    if (name && !params.has(name)) params.set(name, value);
  }
  return params;
}

/** Bytes of a percent-encoded string; characters up to U+00FF count as one byte each. */
function percentDecodeBytes(value: string): Uint8Array | null {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '%') {
      const hex = value.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      const code = c.charCodeAt(0);
      if (code > 0xff) return null;
      bytes.push(code);
    }
  }
  return Uint8Array.from(bytes);
}

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

function latin1(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += String.fromCharCode(b);
  return out;
}

/** RFC 5987 ext-value: `charset'language'percent-encoded`. */
function decodeExtValue(raw: string): string | null {
  const match = /^([^']*)'[^']*'(.*)$/s.exec(raw.trim());
  if (!match) return null;
  const charset = match[1]!.trim().toLowerCase();
  const bytes = percentDecodeBytes(match[2]!);
  if (!bytes) return null;
  if (charset === 'utf-8' || charset === 'utf8') return decodeUtf8(bytes);
  if (charset === 'iso-8859-1' || charset === 'latin1' || charset === 'us-ascii') return latin1(bytes);
  return null;
}

/**
 * The file name a Content-Disposition header suggests (`filename*` before `filename`), not yet
 * sanitised; null when it has none.
 */
export function parseContentDispositionFilename(header: string | null | undefined): string | null {
  if (!header) return null;
  const params = parseParameters(header);
  const extended = params.get('filename*');
  if (extended !== undefined) {
    const decoded = decodeExtValue(extended);
    if (decoded) return decoded;
  }
  const plain = params.get('filename');
  if (plain === undefined || plain === '') return null;
  // Raw UTF-8 bytes in a header arrive as Latin-1 characters: decode them when they are valid UTF-8.
  if (/[\x80-\xff]/.test(plain) && !/[^\x00-\xff]/.test(plain)) {
    const asUtf8 = decodeUtf8(Uint8Array.from(plain, (c) => c.charCodeAt(0)));
    if (asUtf8) return asUtf8;
  }
  return plain;
}

// URL

function percentDecodeLenient(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // Decode the escapes that form valid UTF-8; keep the others as written.
    return segment.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => decodeEscapeRun(percentDecodeBytes(run)!));
  }
}

/** UTF-8 characters of a run of escaped bytes; bytes that are not valid UTF-8 stay `%XX`. */
function decodeEscapeRun(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len && i + len <= bytes.length) {
      const char = decodeUtf8(bytes.subarray(i, i + len));
      if (char !== null) {
        out += char;
        i += len;
        continue;
      }
    }
    out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    i++;
  }
  return out;
}

/** The last non-empty path segment of a URL, percent-decoded; null when there is none. */
export function lastUrlSegment(url: string | null | undefined): string | null {
  if (!url) return null;
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return null;
  }
  const segments = pathname.split('/').filter((s) => s !== '');
  const last = segments[segments.length - 1];
  return last === undefined ? null : percentDecodeLenient(last);
}
