import { RateLimiterMemory, RateLimiterRedis, RLWrapperTimeouts, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '@ap/queue';

/** How long a count may wait for Redis before this process counts on its own (a request must answer within 1 s). */
const REDIS_WAIT_MS = 500;

export interface SharedLimiter {
  /** Rejects with a RateLimiterRes when over the limit. */
  consume(key: string): Promise<RateLimiterRes>;
  penalty(key: string, points: number): Promise<RateLimiterRes>;
  reward(key: string, points?: number): Promise<RateLimiterRes>;
  delete(key: string): Promise<boolean>;
}

/**
 * A limit counted in Redis, so every API replica sees the same counts; while Redis is
 * reconnecting (or does not answer within 500 ms) each process counts on its own instead, so a
 * Redis outage neither holds requests nor lifts the limit (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse).
 */
export function sharedLimiter(redis: Redis, keyPrefix: string, points: number, durationSeconds: number): SharedLimiter {
  const perProcess = new RateLimiterMemory({ keyPrefix, points, duration: durationSeconds });
  const shared = new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: durationSeconds, insuranceLimiter: perProcess });
  const viaRedis = new RLWrapperTimeouts({ limiter: shared, insuranceLimiter: perProcess, timeoutMs: REDIS_WAIT_MS });
  // A lost connection is known at once: no command is queued for a Redis that is away.
  const limiter = () => (redis.status === 'reconnecting' || redis.status === 'close' || redis.status === 'end' ? perProcess : viaRedis);
  return {
    consume: (key) => limiter().consume(key),
    penalty: (key, n) => limiter().penalty(key, n),
    reward: (key, n = 1) => limiter().reward(key, n),
    delete: (key) => limiter().delete(key),
  };
}
