// Jobs API bench: time of POST /jobs with 20,000 files, and p50/p99 of GET /jobs pages at
// depth 0 and at depth 10,000 jobs (the real API in this process, a scratch database); then
// the many-files case (bench/jobs-many-files.ts: the services as processes, their peak RSS).
//   pnpm bench:jobs   (ONLY=create or ONLY=many to run one part)
import { ms, pct, startBenchEnv } from './lib/env';
import { writeResults } from './lib/report';
import { manyFilesCase } from './jobs-many-files';

const ONLY = process.env.ONLY;
const bench = await startBenchEnv();
const figures: Record<string, unknown> = {};

if (ONLY !== 'many') await createAndList();
if (ONLY !== 'create') {
  try {
    figures.manyFiles = await manyFilesCase(bench);
  } catch (err) {
    await bench.close();
    throw err;
  }
}
writeResults({ bench: 'jobs', params: { files: 20_000, depth: 10_000, ONLY: ONLY ?? 'all', manyFiles: process.env.MANY_FILES ?? '1000,5000,20000' }, figures });
await bench.close();
process.exit(0);

async function createAndList(): Promise<void> {
  const { startApi, createUser, call } = await import('../test/helpers');
  const api = await startApi();
  try {
    const { apiKey, userId } = await createUser(api.ctx, { plan: 'scale' });
    const files = Array.from({ length: 20_000 }, (_, i) => ({ url: `https://files.example.com/data/${i}.bin`, filename: `dir/${i}.bin` }));
    const createTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      const res = await call(api.url, 'POST', '/jobs', { key: apiKey, body: { files } });
      createTimes.push(ms(t0));
      if (res.status !== 201) throw new Error(`POST /jobs answered ${res.status}`);
    }
    console.log(`POST /jobs with 20,000 files: best ${Math.min(...createTimes).toFixed(0)} ms, median ${pct(createTimes, 50).toFixed(0)} ms (target < 1000 ms)`);

    // 10,000 more jobs of the same user for the depth test, inserted directly (the API path is measured above).
    const now = Date.now();
    await api.ctx.db.$executeRaw`
      INSERT INTO jobs (id, user_id, status, mode, expires_in, url_count, created_at, updated_at, expires_at)
      SELECT gen_random_uuid(), ${userId}::uuid, 'completed', 'stored', 86400, 1,
             to_timestamp(${now / 1000}::float8 - g), now(), now() + interval '1 day'
        FROM generate_series(1, 10000) AS g`;

    const pageTimes = async (cursor: string | null) => {
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = process.hrtime.bigint();
        const res = await call(api.url, 'GET', `/jobs?limit=20${cursor ? `&cursor=${cursor}` : ''}`, { key: apiKey });
        times.push(ms(t0));
        if (res.status !== 200) throw new Error(`GET /jobs answered ${res.status}`);
      }
      return times;
    };
    const depth0 = await pageTimes(null);
    // Walk to depth 10,000 with limit=100 pages.
    let cursor: string | null = null;
    for (let seen = 0; seen < 10_000; seen += 100) {
      const res: { body: { meta: { next_cursor: string } } } = await call(api.url, 'GET', `/jobs?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key: apiKey });
      cursor = res.body.meta.next_cursor;
    }
    const deep = await pageTimes(cursor);
    console.log(`GET /jobs (limit 20) at depth 0:      p50 ${pct(depth0, 50).toFixed(2)} ms, p99 ${pct(depth0, 99).toFixed(2)} ms`);
    console.log(`GET /jobs (limit 20) at depth 10,000: p50 ${pct(deep, 50).toFixed(2)} ms, p99 ${pct(deep, 99).toFixed(2)} ms`);
    console.log(`depth ratio (p50 deep / p50 top): ${(pct(deep, 50) / pct(depth0, 50)).toFixed(2)}`);
    figures.createMs = { best: Math.min(...createTimes), median: pct(createTimes, 50), target: 1000 };
    figures.page = { depth0: { p50Ms: pct(depth0, 50), p99Ms: pct(depth0, 99) }, depth10000: { p50Ms: pct(deep, 50), p99Ms: pct(deep, 99) } };
  } finally {
    await api.close();
  }
}
