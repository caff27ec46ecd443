// "A ZIP we can serve": what a download link points at, whichever way its bytes are made.
// The route answers the head and ranges from `head`, then sends what `open` gives.
import type { Response } from 'express';
import type { ByteSpan, ZipHead } from './http-range';

export interface ServableZip {
  readonly head: ZipHead;
  /**
   * The bytes of `span` (null: the whole ZIP of unknown size). Whatever can fail before the
   * first byte fails here, so the client gets an error envelope instead of a cut ZIP.
   * `ended` aborts when the response ends: reading stops at once.
   */
  open(span: ByteSpan | null, ended: AbortSignal): Promise<ZipBody>;
}

export interface ZipBody {
  /** Writes the bytes and ends the response, or cuts it (a truncated transfer) when they fail. Never rejects. */
  writeTo(res: Response): Promise<void>;
}
