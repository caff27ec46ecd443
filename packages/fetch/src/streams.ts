/** Stream stages the fetch layer adds only where got cannot do the job itself. */
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { longBodyError, shortBodyError } from './errors';

const noop = (): void => {};

/** A length to enforce on a body that declares none, and what it is called in the error. */
export interface LengthLimit {
  length: number;
  what: string;
}

/** Counts bytes where no Content-Length lets got do it: errors on too few or too many. */
class LengthCheck extends Transform {
  private seen = 0;
  constructor(
    private readonly expected: number,
    private readonly what: string,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.expected) callback(longBodyError(this.expected, this.what));
    else callback(null, chunk);
  }
  override _flush(callback: TransformCallback): void {
    if (this.seen < this.expected) callback(shortBodyError(this.seen, this.expected, this.what));
    else callback();
  }
}

/** Counts bytes where no Content-Length lets got do it (see LengthCheck); the stream as is without a limit. */
export function limitLength(stream: Readable, enforce: LengthLimit | undefined): Readable {
  if (!enforce) return stream;
  const check = new LengthCheck(enforce.length, enforce.what);
  check.on('error', noop);
  pipeline(stream, check, noop);
  return check;
}

/** Drops `skip` bytes, then passes `take` bytes. */
export function skipTake(source: Readable, skip: number, take: number): Readable {
  let pos = 0;
  const out = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const a = Math.max(0, skip - pos);
      const b = Math.min(chunk.length, skip + take - pos);
      pos += chunk.length;
      callback(null, b > a ? chunk.subarray(a, b) : undefined);
    },
  });
  out.on('error', noop);
  pipeline(source, out, noop);
  return out;
}
