// GET /download/:token limited per ZIP (docs/fair-share.md#download-rate-limit): every
// request of one ZIP's link counts, across replicas, whoever sends it; a link holder repeating
// a download cannot keep an API process busy.
import type { Request, RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { errorEnvelope } from '@ap/contract';
import type { Redis } from '@ap/queue';
import { verifyDownloadToken } from '@ap/tokens';
import { SharedLimiterStore } from '../http/rate-limit';
import { sharedLimiter } from '../http/shared-limiter';

const WINDOW_SECONDS = 60;

export function perZipDownloadLimit(redis: Redis, prefix: string, perMinute: number, tokenSecret: string): RequestHandler {
  /** The ZIP a request's token names; null (not counted) for a token the route refuses anyway. */
  const zipOf = (req: Request): string | null => {
    const verdict = verifyDownloadToken(String(req.params.token), tokenSecret, new Date());
    return verdict.ok ? verdict.zipId : null;
  };
  return rateLimit({
    windowMs: WINDOW_SECONDS * 1000,
    limit: perMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    skip: (req) => zipOf(req) === null,
    keyGenerator: (req) => `zip:${zipOf(req)}`,
    store: new SharedLimiterStore(sharedLimiter(redis, `${prefix}:download-limit`, perMinute, WINDOW_SECONDS)),
    handler: (req, res, _next, options) => {
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(options.windowMs / 1000);
      res.setHeader('Retry-After', String(retryAfter));
      res.status(429).json(errorEnvelope('RATE_LIMITED', `too many downloads of this ZIP: at most ${perMinute} requests per minute; retry in ${retryAfter} s`));
    },
  });
}
