// Checks a downloaded ZIP without trusting it: the central directory is read (yauzl), every
// entry's local header and data must lie inside the file, stored entries' sizes must agree,
// and with `crc` every entry is read in full and its CRC-32 compared with the directory's.
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';

export interface ZipCheck {
  entries: number;
  /** Sum of the entries' uncompressed sizes. */
  contentBytes: number;
  /** Whether every entry's CRC-32 was checked. */
  crcChecked: boolean;
}

export class ZipVerificationError extends Error {
  override name = 'ZipVerificationError';
}

export async function verifyZip(path: string, options: { expectedSize?: number | null; crc?: boolean } = {}): Promise<ZipCheck> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: false }, (err, z) => (err ? reject(err) : resolve(z))),
  ).catch((err: Error) => {
    throw new ZipVerificationError(`${path} is not a readable ZIP: ${err.message}`);
  });
  try {
    if (options.expectedSize !== undefined && options.expectedSize !== null && zip.fileSize !== options.expectedSize) {
      throw new ZipVerificationError(`${path} has ${zip.fileSize} bytes, the API says ${options.expectedSize}`);
    }
    let entries = 0;
    let contentBytes = 0;
    await new Promise<void>((resolve, reject) => {
      zip.on('error', (err: Error) => reject(new ZipVerificationError(`${path}: ${err.message}`)));
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        entries++;
        contentBytes += entry.uncompressedSize;
        const problem =
          entry.relativeOffsetOfLocalHeader + 30 + entry.compressedSize > zip.fileSize
            ? `entry "${entry.fileName}" runs past the end of the file`
            : entry.compressionMethod === 0 && entry.compressedSize !== entry.uncompressedSize
              ? `entry "${entry.fileName}" is stored but its sizes differ`
              : null;
        if (problem) return reject(new ZipVerificationError(`${path}: ${problem}`));
        if (!options.crc || entry.fileName.endsWith('/')) return zip.readEntry();
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(new ZipVerificationError(`${path}: entry "${entry.fileName}": ${err.message}`));
          let crc = 0;
          stream.on('data', (chunk: Buffer) => (crc = crc32(chunk, crc)));
          stream.on('error', (e: Error) => reject(new ZipVerificationError(`${path}: entry "${entry.fileName}": ${e.message}`)));
          stream.on('end', () => {
            if (crc >>> 0 !== entry.crc32 >>> 0) reject(new ZipVerificationError(`${path}: entry "${entry.fileName}" fails its CRC-32 check`));
            else zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
    return { entries, contentBytes, crcChecked: options.crc === true };
  } finally {
    zip.close();
  }
}
