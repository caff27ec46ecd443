import { createHash } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '@ap/contract';
import type { Redis } from '@ap/queue';
import { clientAddress } from './client-address';
import { sharedLimiter } from './shared-limiter';

const WINDOW_SECONDS = 60;
/** A credential that authenticated skips the address limit this long (a revoked one is dropped at its first failure). */
const KNOWN_FOR_MS = 10 * 60_000;
const KNOWN_MAX = 100_000;

type Authenticate = (req: Request, res: Response, next: NextFunction) => Promise<void>;

/**
 * Requests with a missing or unknown credential are limited per client address before the
 * credential is looked up (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): each request not made
 * with a credential that recently authenticated counts one against its address first, and gives
 * it back once it authenticates, so only failures use the address's allowance, and a flood of
 * made-up keys costs at most `perMinute` database lookups a minute per address.
 */
export function limitUnauthenticated(redis: Redis, prefix: string, perMinute: number, authenticate: Authenticate): RequestHandler {
  const limiter = sharedLimiter(redis, `${prefix}:unauth`, perMinute, WINDOW_SECONDS);
  /** Digests of credentials that authenticated, with when that stops counting. Memory only. */
  const known = new Map<string, number>();

  return async (req, res, next) => {
    const credential = req.get('x-api-key') ?? req.get('authorization');
    const digest = credential === undefined ? null : createHash('sha256').update(credential).digest('base64url');
    if (digest !== null && (known.get(digest) ?? 0) > Date.now()) {
      try {
        await authenticate(req, res, () => undefined);
      } catch (err) {
        known.delete(digest);
        throw err;
      }
      return next();
    }
    const address = clientAddress(req);
    try {
      await limiter.consume(address);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new ApiError('RATE_LIMITED', `too many requests without a valid API key from this address; retry in ${retryAfter} s`).withHeaders({ 'Retry-After': String(retryAfter) });
    }
    await authenticate(req, res, () => undefined);
    if (digest !== null) {
      if (known.size >= KNOWN_MAX) known.clear();
      known.set(digest, Date.now() + KNOWN_FOR_MS);
    }
    // The attempt succeeded: it does not count against the address.
    await limiter.reward(address).catch(() => undefined);
    next();
  };
}
