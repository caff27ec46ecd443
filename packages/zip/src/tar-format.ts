// The bytes of a POSIX pax tar (docs/archive-options.md#formats-and-contents), written by us so that a
// tar's exact size is known from names and sizes alone, as a ZIP's is: 512-byte ustar headers,
// a pax extended header ('x') before an entry whose name does not fit ustar or is not ASCII, or
// whose size is 8 GiB or more; files 0644, folders 0755, uid/gid 0, no user or group names,
// every mtime the job's. The archive ends with two zero blocks.

export const TAR_BLOCK = 512;
/** The two zero blocks that end a tar. */
export const TAR_END_LENGTH = 2 * TAR_BLOCK;
/** ustar's size field holds 11 octal digits: sizes from here on need a pax `size` record. */
export const USTAR_MAX_SIZE = 8 ** 11 - 1;

const NAME = 100;
const PREFIX = 155;
const PAX_NAME = '././@PaxHeader';

/** An entry as its header describes it. */
export interface TarEntryHeader {
  /** The entry's path (a folder's ends in "/"). */
  name: string;
  size: number;
  folder: boolean;
}

/** Bytes after a body (or pax records) up to the next block boundary. */
export function tarPadding(length: number): number {
  return (TAR_BLOCK - (length % TAR_BLOCK)) % TAR_BLOCK;
}

/** Where ustar's name and prefix fields can hold an ASCII name: [prefix, name], or null when they cannot. */
function ustarSplit(name: string): [string, string] | null {
  if (name.length <= NAME) return ['', name];
  // The prefix ends before a "/" that is not the name's own trailing one; the rest fits in name.
  const limit = Math.min(PREFIX, name.length - 2);
  for (let i = limit; i > 0; i--) {
    if (name[i] !== '/') continue;
    const rest = name.slice(i + 1);
    if (rest.length === 0 || rest.length > NAME) return null;
    return [name.slice(0, i), rest];
  }
  return null;
}

const isAscii = (s: string) => /^[\x20-\x7e]*$/.test(s);

/** The pax records an entry needs (empty: a plain ustar header does). */
export function paxRecords(entry: TarEntryHeader): Buffer {
  const records: string[] = [];
  if (!isAscii(entry.name) || ustarSplit(entry.name) === null) records.push(paxRecord('path', entry.name));
  if (entry.size > USTAR_MAX_SIZE) records.push(paxRecord('size', String(entry.size)));
  return Buffer.from(records.join(''), 'utf8');
}

/** `"<length> <key>=<value>\n"`, the length counting its own digits. */
function paxRecord(key: string, value: string): string {
  const body = Buffer.byteLength(` ${key}=${value}\n`);
  let length = body + 1;
  while (body + String(length).length !== length) length = body + String(length).length;
  return `${length} ${key}=${value}\n`;
}

/** Exact bytes of an entry's headers: the pax header and its records (when needed) and the ustar header. */
export function tarHeaderLength(name: string, size: number): number {
  const records = paxRecords({ name, size, folder: false }).length;
  return records === 0 ? TAR_BLOCK : TAR_BLOCK + records + tarPadding(records) + TAR_BLOCK;
}

/** Exact bytes an entry takes in the archive: headers, body and the body's padding. */
export function tarEntryLength(name: string, size: number): number {
  return tarHeaderLength(name, size) + size + tarPadding(size);
}

/** The headers of an entry (pax header and records when needed, then ustar), `mtime` in seconds. */
export function tarHeader(entry: TarEntryHeader, mtime: number): Buffer {
  const records = paxRecords(entry);
  const ustar = ustarHeader(entry, mtime);
  if (records.length === 0) return ustar;
  const pax = ustarHeader({ name: PAX_NAME, size: records.length, folder: false }, mtime, 'x');
  return Buffer.concat([pax, records, Buffer.alloc(tarPadding(records.length)), ustar]);
}

function ustarHeader(entry: TarEntryHeader, mtime: number, type?: string): Buffer {
  const block = Buffer.alloc(TAR_BLOCK);
  // With a pax path the ustar fields carry an ASCII stand-in (readers take the pax one).
  const ascii = entry.name.replace(/[^\x20-\x7e]/gu, '_');
  const [prefix, name] = ustarSplit(ascii) ?? ['', ascii.slice(0, NAME)];
  block.write(name, 0, NAME, 'latin1');
  octal(block, 100, 8, entry.folder ? 0o755 : 0o644);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, entry.size > USTAR_MAX_SIZE ? 0 : entry.size);
  octal(block, 136, 12, mtime);
  block.write(type ?? (entry.folder ? '5' : '0'), 156, 1, 'latin1');
  block.write('ustar\u000000', 257, 8, 'latin1');
  block.write(prefix, 345, PREFIX, 'latin1');
  // The checksum: the header's bytes summed with its own field read as eight spaces.
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'latin1');
  return block;
}

/** A zero-padded octal number and its NUL, filling `width` bytes. */
function octal(block: Buffer, at: number, width: number, value: number): void {
  block.write(`${Math.floor(value).toString(8).padStart(width - 1, '0')}\u0000`, at, width, 'latin1');
}
