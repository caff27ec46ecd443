import type { Request, RequestHandler } from 'express';
import { rateLimit, type ClientRateLimitInfo, type Store } from 'express-rate-limit';
import { errorEnvelope } from '@ap/contract';
import type { Redis } from '@ap/queue';
import { authOf } from './auth';
import { sharedLimiter, type SharedLimiter } from './shared-limiter';

const WINDOW_SECONDS = 60;

/** express-rate-limit's counting done by a shared limiter (Redis, or per process while Redis is away). */
export class SharedLimiterStore implements Store {
  constructor(private readonly limiter: SharedLimiter) {}

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const counted = await this.limiter.penalty(key, 1);
    return { totalHits: counted.consumedPoints, resetTime: new Date(Date.now() + counted.msBeforeNext) };
  }

  async decrement(key: string): Promise<void> {
    await this.limiter.reward(key, 1);
  }

  async resetKey(key: string): Promise<void> {
    await this.limiter.delete(key);
  }
}

/**
 * Per-user request limit, across all of the user's API keys and sessions (100 keys must not
 * make it 100 times higher), shared by every API replica through Redis
 * (docs/product-rules.md#not-in-the-contract-decided-here: 600/min by default). Runs after
 * authentication.
 */
export function perUserRateLimit(redis: Redis, prefix: string, perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: WINDOW_SECONDS * 1000,
    limit: perMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req: Request) => `user:${authOf(req).user.id}`,
    store: new SharedLimiterStore(sharedLimiter(redis, `${prefix}:ratelimit`, perMinute, WINDOW_SECONDS)),
    handler: (_req, res, _next, options) => {
      const resetTime = (_req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(options.windowMs / 1000);
      res.setHeader('Retry-After', String(retryAfter));
      res.status(429).json(errorEnvelope('RATE_LIMITED', `too many requests: at most ${perMinute} per minute per account; retry in ${retryAfter} s`));
    },
  });
}
