// Login throttling: a password guesser is slowed per account and per client address,
// counted in Redis so every API replica sees the same counts.
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '@ap/contract';
import type { Redis } from '@ap/queue';

export interface LoginThrottleLimits {
  /** Login attempts per email per window; a successful login clears its email's count. */
  perEmail: number;
  /** Login attempts per client address per window; a successful login gives its attempt back. */
  perAddress: number;
  windowSeconds: number;
}

/**
 * 10 a minute for one account lets its owner mistype many times and holds a guesser to 14,400
 * guesses a day; 30 a minute for one address leaves room for an office behind one NAT while a
 * sprayer from one address gets no further than three accounts' worth.
 */
export const LOGIN_THROTTLE_DEFAULTS: LoginThrottleLimits = { perEmail: 10, perAddress: 30, windowSeconds: 60 };

export interface LoginAttempt {
  /** The credentials were right: the email's failures are forgotten, the address's attempt refunded. */
  succeeded(): Promise<void>;
}

export interface LoginThrottle {
  /** Counts an attempt before the password is checked; throws 429 RATE_LIMITED when over a limit. */
  attempt(req: Request, email: string): Promise<LoginAttempt>;
}

/** Emails are kept in Redis as a digest: no addresses of users in key names. */
const emailKey = (email: string) => createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');

/** Express's `req.ip` honours X-Forwarded-For only from the proxies `trust proxy` names. */
const addressOf = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';

export function createLoginThrottle(redis: Redis, prefix: string, limits: LoginThrottleLimits = LOGIN_THROTTLE_DEFAULTS): LoginThrottle {
  const byEmail = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:login:email`, points: limits.perEmail, duration: limits.windowSeconds });
  const byAddress = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:login:addr`, points: limits.perAddress, duration: limits.windowSeconds });

  async function consume(limiter: RateLimiterRedis, key: string, what: string): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (rejection) {
      // rate-limiter-flexible rejects with a RateLimiterRes when over the limit, an Error when Redis fails.
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new ApiError('RATE_LIMITED', `too many login attempts ${what}; retry in ${retryAfter} s`).withHeaders({ 'Retry-After': String(retryAfter) });
    }
  }

  return {
    async attempt(req, email) {
      const address = addressOf(req);
      const account = emailKey(email);
      await consume(byAddress, address, 'from this address');
      await consume(byEmail, account, 'for this account');
      return {
        async succeeded() {
          await Promise.all([byEmail.delete(account), byAddress.reward(address)]);
        },
      };
    },
  };
}
