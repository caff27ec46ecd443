import type { Request, RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { errorEnvelope } from '@ap/contract';
import type { Redis } from '@ap/queue';
import { authOf } from './auth';

/**
 * Per-key request limit shared by every API replica through Redis (decisions.md: 600/min by
 * default). Session logins are limited per user. Runs after authentication.
 */
export function perKeyRateLimit(redis: Redis, prefix: string, perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req: Request) => {
      const auth = authOf(req);
      return auth.apiKeyId ? `key:${auth.apiKeyId}` : `user:${auth.user.id}`;
    },
    store: new RedisStore({
      prefix: `${prefix}:ratelimit:`,
      sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
    }),
    handler: (_req, res, _next, options) => {
      const resetTime = (_req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(options.windowMs / 1000);
      res.setHeader('Retry-After', String(retryAfter));
      res.status(429).json(errorEnvelope('RATE_LIMITED', `too many requests: at most ${perMinute} per minute per API key; retry in ${retryAfter} s`));
    },
  });
}
