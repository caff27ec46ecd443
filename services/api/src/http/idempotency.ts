// Idempotency-Key on create routes (docs/fair-share.md#idempotent-requests): one line per route,
// `router.post(path, idempotent, handler)`, after authentication.
import { createHmac, hkdfSync } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { ApiError } from '@ap/contract';
import type { Db } from '@ap/db';
import { claimIdempotencyKey, deleteExpiredIdempotencyKeys, releaseIdempotencyKey, storeIdempotentResponse } from '../domain/idempotency-keys';
import { authOf } from './auth';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;

export interface IdempotencyOptions {
  db: Db;
  /**
   * The server secret (SESSION_SECRET) the keys of this table are derived from: the one that
   * encrypts stored responses (with the Idempotency-Key itself) and the one fingerprints are
   * HMACs under (docs/api-hardening.md#idempotency-fingerprints).
   */
  secret: string;
  /** The clock keys expire by (tests move it). */
  now?: () => Date;
}

/** The HMAC key of fingerprints: an HKDF subkey of the server secret, of no other use. */
function fingerprintKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, '', 'idempotency-fingerprint', 32));
}

/** What makes two requests the same: method, path (query included) and body, keyed so that a stored value confirms no guess of a body's secrets. */
function fingerprintOf(hmacKey: Buffer, method: string, url: string, body: unknown): string {
  return createHmac('sha256', hmacKey).update(`${method} ${url}\n${JSON.stringify(body ?? null)}`).digest('hex');
}

export function idempotency({ db, secret, now = () => new Date() }: IdempotencyOptions): RequestHandler {
  const hmacKey = fingerprintKey(secret);
  return (req, res, next) => {
    const key = req.get(IDEMPOTENCY_KEY_HEADER);
    if (key === undefined) return next();
    if (!KEY_FORMAT.test(key)) return next(new ApiError('INVALID_REQUEST', `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters`));
    const userId = authOf(req).user.id;
    const at = now();
    void (async () => {
      await deleteExpiredIdempotencyKeys(db, userId, at);
      const claim = await claimIdempotencyKey(db, secret, { userId, key, fingerprint: fingerprintOf(hmacKey, req.method, req.originalUrl, req.body), now: at });
      switch (claim.kind) {
        case 'reused':
          throw new ApiError('IDEMPOTENCY_KEY_REUSED', `this ${IDEMPOTENCY_KEY_HEADER} was used with another request; use a new key for a new request`);
        case 'in-use':
          throw new ApiError('IDEMPOTENCY_KEY_IN_USE', `a request with this ${IDEMPOTENCY_KEY_HEADER} is still running; retry later`).withHeaders({ 'Retry-After': '1' });
        case 'replay':
          res.set(REPLAYED_HEADER, 'true').status(claim.status).json(claim.body);
          return;
        case 'claimed':
          answerThroughKey(res, (status, body) =>
            status >= 200 && status < 300 ? storeIdempotentResponse(db, secret, { userId, key, status, body }) : releaseIdempotencyKey(db, { userId, key }),
          );
          next();
      }
    })().catch(next);
  };
}

/**
 * The response is recorded before it is sent: a client that retries after losing the answer
 * finds it. A 2xx is kept; anything else (4xx refused, 5xx failed) frees the key.
 */
function answerThroughKey(res: Response, record: (status: number, body: unknown) => Promise<void>): void {
  const send = res.json.bind(res);
  res.json = (body: unknown) => {
    res.json = send;
    record(res.statusCode, body)
      .catch(() => undefined)
      .finally(() => send(body));
    return res;
  };
}
