// Names of the entries inside a ZIP (docs/product-rules.md#counts-and-names and docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse). Where derived names come from: entry-name-sources.ts; de-duplication:
// entry-name-dedupe.ts.
//
// Every name, given or derived, is normalised to Unicode NFC first (a name typed on macOS
// arrives decomposed: `Cafe\u0301` and `Caf\u00e9` are one name), then checked or cleaned, then
// de-duplicated. `* ? " < > |` (which Windows cannot hold in a name): a given filename with one
// is refused naming it; a derived name has each replaced by `_` (docs/product-rules.md#counts-and-names).
//
// Decisions (where docs/product-rules.md#counts-and-names is silent):
// - Given `filename`: besides what docs/product-rules.md#counts-and-names lists (absolute, `..` or empty segment,
//   backslash, NUL or control character, over 255 UTF-8 bytes, a Windows device name, a segment
//   ending in a dot or a space, a bidirectional control), a `.` segment (`./a.txt`, `a/./b`), a
//   leading drive letter (`C:...`, absolute on Windows), any other `:` (NTFS reads `a.txt:b` as
//   a hidden stream of `a.txt`) and unpaired UTF-16 surrogates (not encodable as UTF-8) are
//   rejected too. "Control character" = Unicode Cc (C0, DEL, C1). The
//   255-byte limit applies to the whole path, folders included. Device names are matched
//   case-insensitively (`con.txt`, `Lpt1.tar.gz`), as Windows matches them.
// - Derived names (Content-Disposition, URL): only the last path part is kept (`/` and `\` both
//   separate parts, `.` and `..` parts are dropped), control characters, bidirectional controls
//   and unpaired surrogates are removed, `:` becomes `_`, surrounding white space and trailing
//   dots are dropped, a device name gets a `_` in front (`_CON.txt`), and the name is cut to 255 UTF-8 bytes at a
//   grapheme boundary, keeping the extension when it is at most 32 bytes. A source that leaves
//   nothing falls through to the next one (Content-Disposition -> URL -> `file-<index>`).

import { parseContentDispositionFilename, lastUrlSegment } from './entry-name-sources';
import { ENTRY_NAME_MAX_BYTES } from './plans';
import { hasControlCharacter, hasLoneSurrogate, splitExtension, stripControlCharacters, truncateUtf8, utf8Length } from './text';

export { parseContentDispositionFilename, lastUrlSegment } from './entry-name-sources';
export { createEntryNameDeduper, dedupeEntryNames, entryNameKey, type EntryNameDeduper } from './entry-name-dedupe';

export type EntryNameCheck = { ok: true } | { ok: false; message: string };

/** Characters Windows cannot hold in a name (besides `:`, `\\`, `/` and controls, handled apart). */
const WINDOWS_RESERVED = /[*?"<>|]/;
const WINDOWS_RESERVED_GLOBAL = /[*?"<>|]/g;

/** Windows device names, with or without an extension: extracting them fails or opens a device. */
const DEVICE_NAME = /^(?:CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(?:\..*)?$/i;
/** Bidirectional embedding, override and isolate controls: they make `\u202egpj.exe` read as `exe.jpg`. */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;
const BIDI_CONTROL_GLOBAL = /[\u202A-\u202E\u2066-\u2069]/g;

export function isWindowsDeviceName(segment: string): boolean {
  return DEVICE_NAME.test(segment);
}

/** A given `filename` (request field): `null`-free problems only; `/` makes folders. */
export function validateGivenFilename(given: string): EntryNameCheck {
  if (given.length === 0) return { ok: false, message: 'must not be empty' };
  if (hasLoneSurrogate(given)) return { ok: false, message: 'must not contain unpaired UTF-16 surrogates' };
  // The rules hold for the name as stored: its NFC form.
  const name = given.normalize('NFC');
  const reserved = WINDOWS_RESERVED.exec(name);
  if (reserved) return { ok: false, message: `must not contain ${JSON.stringify(reserved[0])} (Windows cannot create a file with * ? " < > | in its name)` };
  if (name.startsWith('/')) return { ok: false, message: 'must be a relative path (it starts with "/")' };
  if (/^[A-Za-z]:/.test(name)) return { ok: false, message: 'must be a relative path (it starts with a drive letter)' };
  if (name.includes(':')) return { ok: false, message: 'must not contain ":" (Windows reads "a.txt:b" as a hidden stream of a.txt)' };
  if (name.includes('\\')) return { ok: false, message: 'must not contain a backslash (use "/" for folders)' };
  if (name.includes('\0')) return { ok: false, message: 'must not contain a NUL character' };
  if (hasControlCharacter(name)) return { ok: false, message: 'must not contain control characters' };
  if (BIDI_CONTROL.test(name)) return { ok: false, message: 'must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)' };
  for (const segment of name.split('/')) {
    if (segment === '') return { ok: false, message: 'must not contain an empty path segment ("//" or a trailing "/")' };
    if (segment === '..') return { ok: false, message: 'must not contain a ".." path segment' };
    if (segment === '.') return { ok: false, message: 'must not contain a "." path segment' };
    if (/[. ]$/.test(segment)) return { ok: false, message: `must not have a path segment ending with a dot or a space (${JSON.stringify(segment)})` };
    if (isWindowsDeviceName(segment)) return { ok: false, message: `must not use a Windows device name as a path segment (${JSON.stringify(segment)})` };
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

/** Leading white space, trailing white space and dots: Windows drops the trailing ones on extraction. */
function trimPart(part: string): string {
  return part.trim().replace(/[.\s]+$/u, '');
}

/** A device name made harmless (`CON.txt` -> `_CON.txt`); other names unchanged. */
function defuseDeviceName(part: string): string {
  return isWindowsDeviceName(part) ? `_${part}` : part;
}

/** One path part made safe: no control characters, bidi controls, surrogates, `:` or `* ? " < > |`, trimmed; `.`/`..` -> ''. */
function cleanPart(part: string): string {
  const cleaned = trimPart(stripControlCharacters(part).replace(BIDI_CONTROL_GLOBAL, '').replaceAll(':', '_').replace(WINDOWS_RESERVED_GLOBAL, '_'));
  return cleaned === '' ? '' : defuseDeviceName(cleaned);
}

/**
 * A derived name (Content-Disposition or URL) made safe as a single entry name; '' when nothing
 * usable is left. Never throws.
 */
export function sanitizeDerivedName(raw: string): string {
  const parts = stripControlCharacters(raw).normalize('NFC').split(/[/\\]/).map(cleanPart).filter(Boolean);
  const last = parts[parts.length - 1];
  // Cutting can end the name on a space or dot again, so trim once more.
  return last ? defuseDeviceName(trimPart(fitName(last, ENTRY_NAME_MAX_BYTES))) : '';
}

/** A given filename that failed validation (should not happen: it is checked at create time). */
function sanitizeGivenPath(raw: string): string {
  const rawParts = stripControlCharacters(raw).normalize('NFC').split(/[/\\]/);
  if (/^[A-Za-z]:$/.test(rawParts[0]?.trim() ?? '')) rawParts.shift();
  const parts = rawParts.map(cleanPart).filter(Boolean);
  const joined = parts.join('/');
  if (joined && utf8Length(joined) <= ENTRY_NAME_MAX_BYTES) return joined;
  return sanitizeDerivedName(raw);
}

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
    if (validateGivenFilename(given).ok) return given.normalize('NFC');
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

/**
 * A bin file's entry name (before de-duplication) from what its probe or response said: the
 * name the client gave, else the response's Content-Disposition, else the final URL, else by
 * position (0-based here, `file-<position + 1>`).
 */
export function entryNameOf(file: { position: number; filename: string | null }, seen: { contentDisposition?: string | null; finalUrl: string }): string {
  return deriveEntryName({ givenFilename: file.filename, contentDisposition: seen.contentDisposition, finalUrl: seen.finalUrl, index: file.position + 1 });
}

