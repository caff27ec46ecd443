import type { ZipEncryption } from './aes';
import type { EntryOptions } from './zip-output';
import { ZipWriter, type BlockChecker } from './zip-writer';

/** The writer of a job's archive (stored or deflated, AES-256 when `encryption` is given). */
export function newZipOutput(encryption: ZipEncryption | null, checkBlock: BlockChecker | null = null): ZipWriter {
  return new ZipWriter(encryption, checkBlock);
}

/**
 * The options every packer entry is added with; the layout in this package reproduces exactly
 * the bytes the writer writes with them (format.test.ts). The size, when known, is given: it
 * decides the entry's ZIP64 form before its header is written.
 */
export function ENTRY_OPTIONS(mtime: Date, size: number | null, deflateLevel: number | null = null): EntryOptions {
  const compression = deflateLevel === null ? { compress: false } : { compress: true, compressionLevel: deflateLevel };
  return size === null ? { mtime, ...compression } : { mtime, ...compression, size };
}
