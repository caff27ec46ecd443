import yazl from 'yazl';
import type { ZipEncryption } from './aes';
import { AesZipWriter, type BlockChecker } from './aes-writer';
import { crc32 } from './crc32';
import type { ZipOutput } from './zip-output';

/** The writer of a job's archive: yazl (stored or deflated), or ours for AES-256. */
export function newZipOutput(encryption: ZipEncryption | null, checkBlock: BlockChecker | null = null): ZipOutput {
  return encryption ? new AesZipWriter(encryption, checkBlock) : newZipFile();
}

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
export function YAZL_ENTRY_OPTIONS(mtime: Date, size: number | null, deflateLevel: number | null = null): { mtime: Date; compress: boolean; compressionLevel?: number; size?: number } {
  // Deflate is yazl's own (zlib's raw deflate at the job's level); its records are yazl's too.
  const compression = deflateLevel === null ? { compress: false } : { compress: true, compressionLevel: deflateLevel };
  return size === null ? { mtime, ...compression } : { mtime, ...compression, size };
}
