// Names of the entries inside a ZIP (decisions.md "Counts and names").
//
// Decisions (where decisions.md is silent):
// - Given `filename`: besides what decisions.md lists (absolute, `..` or empty segment,
//   backslash, NUL or control character, over 255 UTF-8 bytes), a `.` segment (`./a.txt`,
//   `a/./b`), a leading drive letter (`C:...`, absolute on Windows) and unpaired UTF-16
//   surrogates (not encodable as UTF-8) are rejected too. "Control character" = Unicode Cc
//   (C0, DEL, C1). The 255-byte limit applies to the whole path, folders included.
// - Derived names (Content-Disposition, URL): only the last path part is kept (`/` and `\` both
//   separate parts, `.` and `..` parts are dropped), control characters and unpaired surrogates
//   are removed, surrounding white space is trimmed, and the name is cut to 255 UTF-8 bytes at a
//   grapheme boundary, keeping the extension when it is at most 32 bytes. A source that leaves
//   nothing falls through to the next one (Content-Disposition -> URL -> `file-<index>`).
// - Content-Disposition: `filename*` (RFC 5987, charsets UTF-8 and ISO-8859-1) wins over
//   `filename`; an undecodable `filename*` is ignored. A plain `filename` whose bytes are valid
//   UTF-8 is decoded as UTF-8 (servers often send raw UTF-8, which arrives as Latin-1 text).
//   Parameter names are case-insensitive; the first occurrence of a parameter counts. RFC 2231
//   continuations (`filename*0=`) and RFC 2047 encoded words are not decoded.
// - URL: the last non-empty segment of the final URL's path, percent-decoded as UTF-8; escapes
//   that are not valid UTF-8 stay as they are. The query and fragment are ignored.
// - Duplicates: compared case-insensitively after Unicode NFC normalisation, because the ZIPs
//   are mostly extracted on Windows and macOS, whose file systems would merge `Report.pdf` and
//   `report.pdf` (ZIP itself is case-sensitive, so this only ever adds a suffix, never loses a
//   file). Later duplicates become `name (1).ext`, `name (2).ext`, ... on the last segment's base
//   name (`dir/a (1).txt`, `archive.tar (1).gz`, `.bashrc (1)`); a generated name skips any name
//   already used and any name that appears literally later in the batch. A file whose name is
//   also a folder of another entry (`docs` and `docs/a.txt`) would make the ZIP unextractable,
//   so the file gets the suffix (`docs (1)`); when the folder comes after the file and the
//   batch is not known in advance (the incremental deduper), the folder gets it instead
//   (`docs (1)/a.txt`). Suffixed names are kept within 255 bytes by shortening the base name.

import { ENTRY_NAME_MAX_BYTES } from './plans';
import { hasControlCharacter, hasLoneSurrogate, splitExtension, stripControlCharacters, truncateUtf8, utf8Length } from './text';

export type EntryNameCheck = { ok: true } | { ok: false; message: string };

/** A given `filename` (request field): `null`-free problems only; `/` makes folders. */
export function validateGivenFilename(name: string): EntryNameCheck {
  if (name.length === 0) return { ok: false, message: 'must not be empty' };
  if (name.startsWith('/')) return { ok: false, message: 'must be a relative path (it starts with "/")' };
  if (/^[A-Za-z]:/.test(name)) return { ok: false, message: 'must be a relative path (it starts with a drive letter)' };
  if (name.includes('\\')) return { ok: false, message: 'must not contain a backslash (use "/" for folders)' };
  if (name.includes('\0')) return { ok: false, message: 'must not contain a NUL character' };
  if (hasControlCharacter(name)) return { ok: false, message: 'must not contain control characters' };
  if (hasLoneSurrogate(name)) return { ok: false, message: 'must not contain unpaired UTF-16 surrogates' };
  for (const segment of name.split('/')) {
    if (segment === '') return { ok: false, message: 'must not contain an empty path segment ("//" or a trailing "/")' };
    if (segment === '..') return { ok: false, message: 'must not contain a ".." path segment' };
    if (segment === '.') return { ok: false, message: 'must not contain a "." path segment' };
  }
  const bytes = utf8Length(name);
  if (bytes > ENTRY_NAME_MAX_BYTES) return { ok: false, message: `must be at most ${ENTRY_NAME_MAX_BYTES} bytes in UTF-8 (got ${bytes})` };
  return { ok: true };
}

/** Extensions longer than this are not worth keeping when a name is cut. */
const KEEP_EXTENSION_MAX_BYTES = 32;

/** Cuts a single name (no `/`) to `maxBytes`, keeping a short extension. */
function fitName(name: string, maxBytes: number): string {
  if (utf8Length(name) <= maxBytes) return name;
  const [base, ext] = splitExtension(name);
  const extBytes = utf8Length(ext);
  if (ext && extBytes <= KEEP_EXTENSION_MAX_BYTES && extBytes < maxBytes) {
    const cutBase = truncateUtf8(base, maxBytes - extBytes);
    if (cutBase) return cutBase + ext;
  }
  return truncateUtf8(name, maxBytes);
}

/** One path part made safe: no control characters or surrogates, trimmed, `.`/`..` -> ''. */
function cleanPart(part: string): string {
  const cleaned = stripControlCharacters(part).trim();
  return cleaned === '.' || cleaned === '..' ? '' : cleaned;
}

/**
 * A derived name (Content-Disposition or URL) made safe as a single entry name; '' when nothing
 * usable is left. Never throws.
 */
export function sanitizeDerivedName(raw: string): string {
  const parts = stripControlCharacters(raw).split(/[/\\]/).map(cleanPart).filter(Boolean);
  const last = parts[parts.length - 1];
  return last ? fitName(last, ENTRY_NAME_MAX_BYTES).trim() : '';
}

/** A given filename that failed validation (should not happen: it is checked at create time). */
function sanitizeGivenPath(raw: string): string {
  const parts = stripControlCharacters(raw).split(/[/\\]/).map(cleanPart).filter(Boolean);
  if (/^[A-Za-z]:$/.test(parts[0] ?? '')) parts.shift();
  const joined = parts.join('/');
  if (joined && utf8Length(joined) <= ENTRY_NAME_MAX_BYTES) return joined;
  return sanitizeDerivedName(raw);
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------

export interface DeriveEntryNameInput {
  /** The request's `filename`, or null/undefined when not supplied. */
  givenFilename?: string | null;
  /** The response's Content-Disposition header, if any. */
  contentDisposition?: string | null;
  /** The URL the body came from, after redirects. */
  finalUrl?: string | null;
  /** 1-based input position, for `file-<index>`. */
  index: number;
}

/**
 * The entry name of one file, as a browser would name the download: the given filename; else
 * Content-Disposition's; else the URL's last segment; else `file-<index>`. Derived names are
 * sanitised, never rejected. Not yet de-duplicated.
 */
export function deriveEntryName(input: DeriveEntryNameInput): string {
  const given = input.givenFilename;
  if (given !== null && given !== undefined && given !== '') {
    if (validateGivenFilename(given).ok) return given;
    const sanitized = sanitizeGivenPath(given);
    if (sanitized) return sanitized;
  }
  const fromHeader = parseContentDispositionFilename(input.contentDisposition);
  if (fromHeader !== null) {
    const name = sanitizeDerivedName(fromHeader);
    if (name) return name;
  }
  const fromUrl = lastUrlSegment(input.finalUrl);
  if (fromUrl !== null) {
    const name = sanitizeDerivedName(fromUrl);
    if (name) return name;
  }
  return `file-${input.index}`;
}

// ---------------------------------------------------------------------------------------------
// De-duplication

/** Comparison key of a name: NFC, lower case (see the decision at the top). */
export function entryNameKey(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

/** Folder prefixes of a path: `a/b/c.txt` -> [`a`, `a/b`]. */
function folderPrefixes(path: string): string[] {
  const segments = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) out.push(segments.slice(0, i).join('/'));
  return out;
}

/** `name (k)` on the base of `last`, the whole of `folder + last` kept within 255 bytes when possible. */
function suffixed(folder: string, last: string, k: number): string {
  const [base, ext] = splitExtension(last);
  const suffix = ` (${k})`;
  const prefix = folder ? `${folder}/` : '';
  const room = ENTRY_NAME_MAX_BYTES - utf8Length(prefix) - utf8Length(suffix) - utf8Length(ext);
  const fittedBase = utf8Length(base) > room && room > 0 ? truncateUtf8(base, room) || base : base;
  return `${prefix}${fittedBase}${suffix}${ext}`;
}

export interface EntryNameDeduper {
  /** The unique name to use for the next entry, given its wanted name. */
  take(name: string): string;
}

/**
 * Hands out unique entry names one at a time, in entry order. `upcoming` lists the names that
 * will be taken later, when known (the batch `dedupeEntryNames` passes them all): generated
 * names then avoid them, and files yield to their folders. Without it, a later literal name
 * that collides with an earlier generated one gets a suffix of its own.
 */
export function createEntryNameDeduper(upcoming: Iterable<string> = []): EntryNameDeduper {
  const takenFiles = new Set<string>();
  const takenFolders = new Set<string>();
  const reservedFiles = new Set<string>();
  const reservedFolders = new Set<string>();
  for (const name of upcoming) {
    reservedFiles.add(entryNameKey(name));
    for (const folder of folderPrefixes(name)) reservedFolders.add(entryNameKey(folder));
  }
  /** Folders renamed because a file already had their name: original key -> new path. */
  const renamedFolders = new Map<string, string>();
  /** Next suffix to try per wanted name, so n copies of a name cost O(n), not O(n^2). */
  const nextSuffix = new Map<string, number>();

  const isFree = (key: string, generated: boolean) =>
    !takenFiles.has(key) && !takenFolders.has(key) && !reservedFolders.has(key) && !(generated && reservedFiles.has(key));

  function mapFolders(segments: string[]): string {
    let out = '';
    let original = '';
    for (const segment of segments) {
      original = original ? `${original}/${segment}` : segment;
      const originalKey = entryNameKey(original);
      const renamed = renamedFolders.get(originalKey);
      if (renamed !== undefined) {
        out = renamed;
        continue;
      }
      let candidate = out ? `${out}/${segment}` : segment;
      if (takenFiles.has(entryNameKey(candidate))) {
        const parent = out;
        for (let k = 1; ; k++) {
          candidate = `${parent ? `${parent}/` : ''}${segment} (${k})`;
          const key = entryNameKey(candidate);
          if (!takenFiles.has(key) && !takenFolders.has(key) && !reservedFiles.has(key)) break;
        }
        renamedFolders.set(originalKey, candidate);
      }
      out = candidate;
    }
    return out;
  }

  return {
    take(name: string): string {
      const segments = name.split('/');
      const last = segments.pop()!;
      const folder = mapFolders(segments);
      let result = folder ? `${folder}/${last}` : last;
      if (!isFree(entryNameKey(result), false)) {
        const wantedKey = entryNameKey(result);
        let k = nextSuffix.get(wantedKey) ?? 1;
        for (; ; k++) {
          result = suffixed(folder, last, k);
          if (isFree(entryNameKey(result), true)) break;
        }
        nextSuffix.set(wantedKey, k + 1);
      }
      takenFiles.add(entryNameKey(result));
      for (const prefix of folderPrefixes(result)) takenFolders.add(entryNameKey(prefix));
      return result;
    },
  };
}

/**
 * Unique entry names for one ZIP (or one job), in input order: the first of equal names keeps
 * it, later ones become `name (1).ext`, `name (2).ext`, ... skipping names used literally
 * anywhere in the list.
 */
export function dedupeEntryNames(names: readonly string[]): string[] {
  const deduper = createEntryNameDeduper(names);
  return names.map((name) => deduper.take(name));
}
