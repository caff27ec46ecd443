/** What a BodyStream is given: its size, how to resume it and fetch its ranges, its retries. */
import type { Readable } from 'node:stream';
import { shortBodyError, type FetchError } from './errors';

/** What a continuation may hand back: the body's bytes [offset, end). */
export type ResumeBody = (offset: number, end: number, signal: AbortSignal | undefined) => Promise<Readable>;
/** Opens the body's bytes [from, to) as a checked ranged GET; null: the origin sent the whole body instead. */
export type OpenSegment = (from: number, to: number, signal: AbortSignal | undefined) => Promise<Readable | null>;

export interface BodyStreamOptions {
  /** Bytes the whole body has, when known (a cut is then told from an end). */
  size: number | null;
  /** Continues the body from an offset; absent: a cut is final. */
  resume?: ResumeBody;
  /** Fetches a range of the body on a connection of its own; absent: no ranged mode. */
  segment?: OpenSegment;
  /** Continuations allowed after the first cut. */
  retries: number;
  /** Wait before continuation number n (1-based). */
  backoff(attempt: number): number;
  signal?: AbortSignal;
  /** What the length is called in a "body shorter than ..." message. */
  lengthName: string;
  /** A body held back (unread) this long is closed, to be continued when read. */
  holdLimitMs: number;
  /** Maps a source's error to a FetchError (the fetcher's classification). */
  toError(error: unknown): FetchError;
}

/** A cut that a ranged GET from the last byte can repair. */
export function isCut(error: FetchError): boolean {
  return error.kind === 'connection' || error.kind === 'timeout' || (error.kind === 'length' && error.userMessage.startsWith('body shorter'));
}

/**
 * The error a body ends with: a short body is reported over the whole body (not the last
 * continuation's range), with the attempts made.
 */
export function wholeBodyError(error: FetchError, received: number, opts: Pick<BodyStreamOptions, 'size' | 'lengthName'>, attempts: number): FetchError {
  if (error.kind === 'length' && opts.size !== null && received < opts.size && error.userMessage.startsWith('body shorter')) {
    const whole = shortBodyError(received, opts.size, opts.lengthName);
    whole.url = error.url;
    whole.attempts = attempts;
    return whole;
  }
  error.attempts = attempts;
  return error;
}
