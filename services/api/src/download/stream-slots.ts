// Stream downloads in flight per user (docs/fair-share.md#fair-share-under-load), counted across API
// replicas in Redis: one sorted set per user of the downloads running, each scored by when its
// claim lapses, so a replica that dies mid-download frees its slots within one lease.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A running download renews its claim this often; an unrenewed claim lapses after LEASE_MS. */
const LEASE_MS = 60_000;
const RENEW_MS = 20_000;

// Drop lapsed claims, then take one if fewer than the cap are running. Atomic in Redis.
const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

export interface StreamSlot {
  release(): void;
}

export interface StreamSlots {
  /** A slot for one more download of `userId`, or null when the user is at the cap. */
  take(userId: string): Promise<StreamSlot | null>;
}

export function streamSlots(redis: Redis, prefix: string, perUser: number, onError: (err: unknown) => void): StreamSlots {
  const keyOf = (userId: string) => `${prefix}:stream-downloads:${userId}`;
  return {
    async take(userId) {
      const key = keyOf(userId);
      const id = randomUUID();
      const now = Date.now();
      let taken: unknown;
      try {
        taken = await redis.eval(TAKE, 1, key, now, perUser, now + LEASE_MS, id, LEASE_MS);
      } catch (err) {
        // Redis is not on the path of reads: without it the cap is not enforced rather than every download refused.
        onError(err);
        return { release: () => undefined };
      }
      if (taken !== 1) return null;
      const renew = setInterval(() => {
        redis.zadd(key, 'XX', Date.now() + LEASE_MS, id).catch(onError);
      }, RENEW_MS);
      renew.unref();
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          clearInterval(renew);
          redis.zrem(key, id).catch(onError);
        },
      };
    },
  };
}
