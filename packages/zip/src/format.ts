import { AES_EXTRA, AES_METHOD, AES_OVERHEAD } from './aes';

/**
 * The records of our ZIPs, as ZipWriter (zip-writer.ts) writes them and layouts render them
 * (general purpose bits 3 and 11, a data descriptor after every body, ZIP64 extra fields and
 * end records where needed). Every local header carries what a reader walking the archive
 * front to back needs (docs/readers.md): the Info-ZIP "UT" timestamp (so file times are the
 * job's in every time zone) and, on a ZIP64 entry, the ZIP64 extra (so its descriptor is
 * known to be 24 bytes). Encrypted entries (WinZip AES-256, AE-2, aes.ts) are the same
 * records with method 99, the encrypted flag, a 0x9901 extra field in both headers, CRC 0 and
 * the data's 28 extra bytes. format.test.ts holds writer and layout to the same bytes.
 */

export const ZIP64_LIMIT = 0xfffffffe; // an entry's records are ZIP64 above this
export const LOCAL_HEADER_FIXED = 30;
export const CENTRAL_RECORD_FIXED = 46;
export const UT_EXTRA = 9;
export const ZIP64_EXTRA = 28;
/** The local header's ZIP64 extra: both sizes (zero here: they are in the descriptor), no offset. */
export const ZIP64_LOCAL_EXTRA = 20;
export const DESCRIPTOR = 16;
export const ZIP64_DESCRIPTOR = 24;
export const END_RECORD = 22;
export const ZIP64_END_RECORDS = 56 + 20;

const FLAGS = (1 << 11) | (1 << 3); // UTF-8 names; CRC and sizes in the data descriptor
const VERSION_MADE_BY = (3 << 8) | 63; // unix, spec 6.3
const VERSION_NEEDED = 20;
const VERSION_NEEDED_ZIP64 = 45;
const VERSION_NEEDED_AES = 51;
const ENCRYPTED = 1;
const FILE_ATTRIBUTES = (0o100664 << 16) >>> 0;

/** MS-DOS date and time, in the process's local time zone (services run in UTC: the UTC wall clock). */
export interface DosTime {
  date: number;
  time: number;
  /** Unix seconds for the UT extra field, clamped to 32 bits. */
  unix: number;
}

const MIN_DOS = new Date(1980, 0, 1);
const MAX_DOS = new Date(2107, 11, 31, 23, 59, 58);

export function dosTime(mtime: Date): DosTime {
  const d = mtime < MIN_DOS ? MIN_DOS : mtime > MAX_DOS ? MAX_DOS : mtime;
  const date = (d.getDate() & 0x1f) | (((d.getMonth() + 1) & 0xf) << 5) | (((d.getFullYear() - 1980) & 0x7f) << 9);
  const time = Math.floor(d.getSeconds() / 2) | ((d.getMinutes() & 0x3f) << 5) | ((d.getHours() & 0x1f) << 11);
  const unix = Math.min(0x7fffffff, Math.max(-0x80000000, Math.floor(mtime.getTime() / 1000)));
  return { date, time, unix };
}

/** What the records of one entry are made of. */
export interface EntryRecord {
  name: Buffer;
  size: number;
  offset: number;
  /** The descriptor and central record are ZIP64. */
  zip64: boolean;
  /** The local header is (it has the ZIP64 extra); as `zip64` unless the size was unknown then. */
  headerZip64?: boolean;
  /** Encrypted with WinZip AES-256 (AE-2). */
  aes?: boolean;
  /** Deflated (stored jobs): the deflated length, before any AES framing. */
  deflated?: number;
}

/** The header's method: AES (its 0x9901 extra names the method under it), DEFLATE or STORE. */
function methodOf(entry: EntryRecord): number {
  if (entry.aes === true) return AES_METHOD;
  return entry.deflated === undefined ? 0 : 8;
}

/** Bytes of an entry's data in the archive: the body, plus salt, verifier and MAC when encrypted. */
export function storedLength(size: number, aes: boolean): number {
  return aes ? size + AES_OVERHEAD : size;
}

/** Bytes of the entry's data in the archive: its deflated or stored body, with the AES framing. */
function dataLength(entry: EntryRecord): number {
  return storedLength(entry.deflated ?? entry.size, entry.aes === true);
}

/**
 * Whether an entry's records are ZIP64: its data (`stored`: its length in the archive) or its
 * header's offset passes 4 GiB. A body of unknown length is judged by its offset when its
 * header is written (docs/readers.md: a small one must not get a 24-byte descriptor), and by
 * its length too once it has ended (`headerZip64` false then, as yazl did).
 */
export function usesZip64(stored: number, offset: number): boolean {
  return stored > ZIP64_LIMIT || offset > ZIP64_LIMIT;
}

/** The one formula for a local header's length (every layout, sizer and writer uses it). */
export function localHeaderLength(nameBytes: number, zip64: boolean, aes = false): number {
  return LOCAL_HEADER_FIXED + nameBytes + UT_EXTRA + (zip64 ? ZIP64_LOCAL_EXTRA : 0) + (aes ? AES_EXTRA : 0);
}

export function descriptorLength(zip64: boolean): number {
  return zip64 ? ZIP64_DESCRIPTOR : DESCRIPTOR;
}

export function centralRecordLength(nameBytes: number, zip64: boolean, aes = false): number {
  return CENTRAL_RECORD_FIXED + nameBytes + UT_EXTRA + (zip64 ? ZIP64_EXTRA : 0) + (aes ? AES_EXTRA : 0);
}

/** Whether the archive needs the ZIP64 end records. */
export function needsZip64End(entryCount: number, centralSize: number, centralOffset: number): boolean {
  return entryCount >= 0xffff || centralSize >= 0xffffffff || centralOffset >= 0xffffffff;
}

export function endRecordsLength(zip64End: boolean): number {
  return END_RECORD + (zip64End ? ZIP64_END_RECORDS : 0);
}

function writeUInt64(buf: Buffer, value: number, at: number): void {
  buf.writeUInt32LE(value % 0x100000000, at);
  buf.writeUInt32LE(Math.floor(value / 0x100000000), at + 4);
}

/** The 0x9901 extra field: AE-2, vendor "AE", AES-256, the data's real method (STORE or DEFLATE). */
function writeAesExtra(buf: Buffer, at: number, deflated: boolean): void {
  buf.writeUInt16LE(0x9901, at);
  buf.writeUInt16LE(AES_EXTRA - 4, at + 2);
  buf.writeUInt16LE(2, at + 4); // AE-2: the CRC field is 0, the MAC authenticates
  buf.write('AE', at + 6, 'latin1');
  buf.writeUInt8(3, at + 8); // 256-bit key
  buf.writeUInt16LE(deflated ? 8 : 0, at + 9); // the method under the encryption
}

export function localHeader(entry: EntryRecord, time: DosTime): Buffer {
  const aes = entry.aes === true;
  const nameLength = entry.name.length;
  const zip64 = entry.headerZip64 ?? entry.zip64;
  const buf = Buffer.alloc(localHeaderLength(nameLength, zip64, aes));
  buf.writeUInt32LE(0x04034b50, 0);
  buf.writeUInt16LE(aes ? VERSION_NEEDED_AES : zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 4);
  buf.writeUInt16LE(aes ? FLAGS | ENCRYPTED : FLAGS, 6);
  buf.writeUInt16LE(methodOf(entry), 8);
  buf.writeUInt16LE(time.time, 10);
  buf.writeUInt16LE(time.date, 12);
  // CRC-32 and sizes are zero here: they follow the body in the data descriptor. A ZIP64
  // entry's are 0xffffffff, pointing at its ZIP64 extra (APPNOTE 4.5.3).
  if (zip64) {
    buf.writeUInt32LE(0xffffffff, 18);
    buf.writeUInt32LE(0xffffffff, 22);
  }
  buf.writeUInt16LE(nameLength, 26);
  buf.writeUInt16LE(UT_EXTRA + (zip64 ? ZIP64_LOCAL_EXTRA : 0) + (aes ? AES_EXTRA : 0), 28);
  entry.name.copy(buf, LOCAL_HEADER_FIXED);
  let at = writeTimestampExtra(buf, LOCAL_HEADER_FIXED + nameLength, time);
  if (zip64) {
    buf.writeUInt16LE(0x0001, at);
    buf.writeUInt16LE(ZIP64_LOCAL_EXTRA - 4, at + 2);
    at += ZIP64_LOCAL_EXTRA; // both sizes 0, as the fixed fields would be without ZIP64
  }
  if (aes) writeAesExtra(buf, at, entry.deflated !== undefined);
  return buf;
}

/** Info-ZIP's extended timestamp, as it writes it: flags 1 (mtime), the mtime in Unix seconds. */
function writeTimestampExtra(buf: Buffer, at: number, time: DosTime): number {
  buf.writeUInt16LE(0x5455, at);
  buf.writeUInt16LE(UT_EXTRA - 4, at + 2);
  buf.writeUInt8(1, at + 4);
  buf.writeInt32LE(time.unix, at + 5);
  return at + UT_EXTRA;
}

export function dataDescriptor(entry: EntryRecord, crc: number): Buffer {
  const buf = Buffer.alloc(descriptorLength(entry.zip64));
  buf.writeUInt32LE(0x08074b50, 0);
  const aes = entry.aes === true;
  const stored = dataLength(entry);
  buf.writeUInt32LE(aes ? 0 : crc >>> 0, 4);
  if (entry.zip64) {
    writeUInt64(buf, stored, 8);
    writeUInt64(buf, entry.size, 16);
  } else {
    buf.writeUInt32LE(stored, 8);
    buf.writeUInt32LE(entry.size, 12);
  }
  return buf;
}

export function centralRecord(entry: EntryRecord, crc: number, time: DosTime): Buffer {
  const nameLength = entry.name.length;
  const aes = entry.aes === true;
  const stored = dataLength(entry);
  const buf = Buffer.alloc(centralRecordLength(nameLength, entry.zip64, aes));
  buf.writeUInt32LE(0x02014b50, 0);
  buf.writeUInt16LE(VERSION_MADE_BY, 4);
  buf.writeUInt16LE(aes ? VERSION_NEEDED_AES : entry.zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 6);
  buf.writeUInt16LE(aes ? FLAGS | ENCRYPTED : FLAGS, 8);
  buf.writeUInt16LE(methodOf(entry), 10);
  buf.writeUInt16LE(time.time, 12);
  buf.writeUInt16LE(time.date, 14);
  buf.writeUInt32LE(aes ? 0 : crc >>> 0, 16);
  buf.writeUInt32LE(entry.zip64 ? 0xffffffff : stored, 20);
  buf.writeUInt32LE(entry.zip64 ? 0xffffffff : entry.size, 24);
  buf.writeUInt16LE(nameLength, 28);
  buf.writeUInt16LE(UT_EXTRA + (entry.zip64 ? ZIP64_EXTRA : 0) + (aes ? AES_EXTRA : 0), 30);
  buf.writeUInt16LE(0, 32); // comment
  buf.writeUInt16LE(0, 34); // disk
  buf.writeUInt16LE(0, 36); // internal attributes
  buf.writeUInt32LE(FILE_ATTRIBUTES, 38);
  buf.writeUInt32LE(entry.zip64 ? 0xffffffff : entry.offset, 42);
  entry.name.copy(buf, CENTRAL_RECORD_FIXED);
  let at = writeTimestampExtra(buf, CENTRAL_RECORD_FIXED + nameLength, time);
  if (entry.zip64) {
    buf.writeUInt16LE(0x0001, at);
    buf.writeUInt16LE(ZIP64_EXTRA - 4, at + 2);
    writeUInt64(buf, entry.size, at + 4);
    writeUInt64(buf, stored, at + 12);
    writeUInt64(buf, entry.offset, at + 20);
    at += ZIP64_EXTRA;
  }
  if (aes) writeAesExtra(buf, at, entry.deflated !== undefined);
  return buf;
}

export function endRecords(entryCount: number, centralSize: number, centralOffset: number): Buffer {
  const zip64 = needsZip64End(entryCount, centralSize, centralOffset);
  const buf = Buffer.alloc(endRecordsLength(zip64));
  let at = 0;
  if (zip64) {
    buf.writeUInt32LE(0x06064b50, 0);
    writeUInt64(buf, 56 - 12, 4);
    buf.writeUInt16LE(VERSION_MADE_BY, 12);
    buf.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
    buf.writeUInt32LE(0, 16);
    buf.writeUInt32LE(0, 20);
    writeUInt64(buf, entryCount, 24);
    writeUInt64(buf, entryCount, 32);
    writeUInt64(buf, centralSize, 40);
    writeUInt64(buf, centralOffset, 48);
    buf.writeUInt32LE(0x07064b50, 56);
    buf.writeUInt32LE(0, 60);
    writeUInt64(buf, centralOffset + centralSize, 64); // where the ZIP64 end record starts
    buf.writeUInt32LE(1, 72);
    at = ZIP64_END_RECORDS;
  }
  buf.writeUInt32LE(0x06054b50, at);
  buf.writeUInt16LE(0, at + 4);
  buf.writeUInt16LE(0, at + 6);
  buf.writeUInt16LE(entryCount >= 0xffff ? 0xffff : entryCount, at + 8);
  buf.writeUInt16LE(entryCount >= 0xffff ? 0xffff : entryCount, at + 10);
  buf.writeUInt32LE(centralSize >= 0xffffffff ? 0xffffffff : centralSize, at + 12);
  buf.writeUInt32LE(centralOffset >= 0xffffffff ? 0xffffffff : centralOffset, at + 16);
  buf.writeUInt16LE(0, at + 20);
  return buf;
}
