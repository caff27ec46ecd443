import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { dropDatabase } from '@ap/db';
import type { EmbeddedS3 } from '../scripts/embedded';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__AP_TEST__ as { s3: EmbeddedS3; s3Dir: string; databaseUrl: string };
  await state.s3.close();
  rmSync(state.s3Dir, { recursive: true, force: true });
  await dropDatabase(state.databaseUrl);
  // Remove this run's Redis keys (queues, rate limits).
  const redis = new Redis(process.env.REDIS_URL!);
  const stream = redis.scanStream({ match: `${process.env.REDIS_PREFIX}*`, count: 1000 });
  for await (const keys of stream as AsyncIterable<string[]>) if (keys.length) await redis.unlink(...keys);
  await redis.quit();
}
