// De-duplication of entry names inside one ZIP (docs/product-rules.md#counts-and-names).
//
// Decisions (where docs/product-rules.md#counts-and-names is silent): duplicates are compared case-insensitively after
// Unicode NFC normalisation, because the ZIPs are mostly extracted on Windows and macOS, whose
// file systems would merge `Report.pdf` and `report.pdf` (ZIP itself is case-sensitive, so this
// only ever adds a suffix, never loses a file). Later duplicates become `name (1).ext`,
// `name (2).ext`, ... on the last segment's base name (`dir/a (1).txt`, `archive.tar (1).gz`,
// `.bashrc (1)`); a generated name skips any name already used and any name that appears
// literally later in the batch. A file whose name is also a folder of another entry (`docs` and
// `docs/a.txt`) would make the ZIP unextractable, so the file gets the suffix (`docs (1)`); when
// the folder comes after the file and the batch is not known in advance (the incremental
// deduper), the folder gets it instead (`docs (1)/a.txt`). Suffixed names are kept within 255
// bytes by shortening the base name.

import { ENTRY_NAME_MAX_BYTES } from './plans';
import { splitExtension, truncateUtf8, utf8Length } from './text';

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
