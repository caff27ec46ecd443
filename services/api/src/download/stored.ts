// A stored ZIP: the object the packer uploaded, read from the store by range.
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '@ap/contract';
import type { DownloadBin } from '@ap/db';
import type { Logger } from '@ap/log';
import type { ByteSpan } from './http-range';
import type { ServableZip } from './servable';

/**
 * Reads an object's bytes (all, or a span): the one place a stored ZIP's store is reached (our
 * bucket, or the job's destination bucket: docs/private-sources.md#destination-buckets).
 */
export type ReadStoredObject = (key: string, span: ByteSpan | undefined, job: DownloadBin['job']) => Promise<{ body: Readable }>;

export function storedZip(bin: DownloadBin, readObject: ReadStoredObject, log: Logger): ServableZip {
  const { objectKey, etag } = bin;
  if (!objectKey || bin.size === null || !etag) throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');
  const size = Number(bin.size);
  return {
    head: { filename: bin.filename, size, etag: `"${etag}"`, lastModified: bin.completedAt ?? bin.updatedAt },
    async open(span) {
      const whole = !span || (span.start === 0 && span.end === size - 1);
      const object = await readObject(objectKey, whole ? undefined : span, bin.job);
      return {
        async writeTo(res) {
          // A client that goes away aborts the store read at once.
          await pipeline(object.body, res).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE') log.warn({ err: err.message, zipId: bin.id }, 'download interrupted');
          });
        },
      };
    },
  };
}
