// Answers of S3 endpoints users control are read to a fixed size (docs/guarantees.md#hardening-third-round-items-1-6):
// the SDK collects every non-streamed body (list pages, error bodies, CompleteMultipartUpload)
// whole into memory before parsing it, so an endpoint answering 600 MB of XML would take a pod's
// memory. A GetObject body answered 2xx is streamed to its reader and not held here.
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { FetchError } from './errors';

export const MAX_S3_ANSWER_BYTES = 8 * 1024 * 1024;

const tooLarge = (maxBytes: number) =>
  new FetchError('length', `the S3 endpoint's answer is too large (over ${Math.round(maxBytes / 1024 / 1024)} MiB)`, { retryable: false });

/**
 * Gathers at most `maxBytes` into one buffer and passes it on at the end; one byte more is an
 * error (the answer stops being read). The buffer is reserved whole but only its written pages
 * take memory (a large allocation is mapped lazily), and the socket's chunks are garbage at
 * once instead of kept until the answer ends: the peak stays near the bytes actually read.
 */
class AnswerLimit extends Transform {
  private gathered: Buffer | null = null;
  private length = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const length = this.length + chunk.length;
    if (length > this.maxBytes) return callback(tooLarge(this.maxBytes));
    this.gathered ??= Buffer.allocUnsafeSlow(this.maxBytes);
    chunk.copy(this.gathered, this.length);
    this.length = length;
    callback();
  }
  override _flush(callback: TransformCallback): void {
    callback(null, this.gathered?.subarray(0, this.length) ?? Buffer.alloc(0));
  }
}

const isNodeReadable = (body: unknown): body is Readable => typeof (body as Readable | null)?.pipe === 'function' && typeof (body as Readable).destroy === 'function';

/** Every answer of `client` but a 2xx GetObject body is read to `maxBytes` at most. */
export function boundS3Answers(client: S3Client, maxBytes = MAX_S3_ANSWER_BYTES): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const response = result.response as { statusCode?: number; headers?: Record<string, string>; body?: unknown };
      const status = response.statusCode ?? 0;
      const body = response.body;
      // A HEAD answer's Content-Length is the object's, and it has no body.
      if ((args.request as { method?: string }).method === 'HEAD') return result;
      if ((context.commandName === 'GetObjectCommand' && status >= 200 && status < 300) || !isNodeReadable(body)) return result;
      if (Number(response.headers?.['content-length'] ?? 0) > maxBytes) {
        body.destroy();
        throw tooLarge(maxBytes);
      }
      const limited = new AnswerLimit(maxBytes);
      body.on('error', (err) => limited.destroy(err));
      limited.on('error', () => body.destroy());
      response.body = body.pipe(limited);
      return result;
    },
    // Inside the deserializer (low priority in its step): it reads the limited body.
    { step: 'deserialize', priority: 'low', name: 'boundedS3Answers' },
  );
}
