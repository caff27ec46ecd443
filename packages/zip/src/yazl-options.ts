import yazl from 'yazl';
import { crc32 } from './crc32';

/**
 * A yazl ZipFile that checksums with our CRC-32 (yazl patched to take it): every archive the
 * services write is made here.
 */
export function newZipFile(): yazl.ZipFile {
  const ZipFile = yazl.ZipFile as unknown as new (options: { crc32: typeof crc32 }) => yazl.ZipFile;
  return new ZipFile({ crc32 });
}

/**
 * The options every packer entry is added to yazl with; the layout in this package
 * reproduces exactly the bytes yazl writes with them (format.test.ts).
 */
export function YAZL_ENTRY_OPTIONS(mtime: Date, size: number | null): { mtime: Date; compress: false; size?: number } {
  return size === null ? { mtime, compress: false } : { mtime, compress: false, size };
}
