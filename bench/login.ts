// Login bench: another user's GET /jobs latency while 20 wrong logins run at once,
// beside the same GET /jobs with no logins. Password hashing runs in libuv's thread pool
// (native bcrypt), so the API's event loop keeps answering (target: p99 < 100 ms).
//   pnpm bench:login            (ROUNDS=3 by default)
// The API runs as deployed (its bundle, in its own process), with the default login throttle:
// each round's logins come from their own client address (X-Forwarded-For from loopback is
// trusted, as from a proxy) and use 20 distinct accounts, so none of them is throttled.
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { ms, pct, startApiAndServices, startBenchEnv } from './lib/env';
import { writeResults } from './lib/report';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENT_LOGINS = 20;

const bench = await startBenchEnv();
const db = createDb(loadConfig().DATABASE_URL);
const children: { kill(signal: NodeJS.Signals): boolean }[] = [];

try {
  const { apiUrl, api } = await startApiAndServices(bench, []);
  children.push(api);

  const stamp = Date.now();
  const { apiKey } = await createUserWithKey(db, { email: `bench-lister-${stamp}@example.test`, plan: 'pro', overage: false });
  const victims = await Promise.all(
    Array.from({ length: CONCURRENT_LOGINS }, (_, i) => createUserWithKey(db, { email: `bench-login-${stamp}-${i}@example.test`, password: `right password ${i}`, plan: 'free', overage: false })),
  );
  const emails = victims.map((_, i) => `bench-login-${stamp}-${i}@example.test`);
  // A few jobs to list.
  for (let i = 0; i < 5; i++) {
    await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ mode: 'stream', files: [{ url: `https://example.com/${i}.bin` }] }) });
  }

  async function listJobs(): Promise<number> {
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${apiUrl}/jobs?limit=20`, { headers: { 'x-api-key': apiKey } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /jobs answered ${res.status}`);
    return ms(t0);
  }

  /** GET /jobs one after another until `until` settles (at least `min` samples). */
  async function sampleWhile(until: Promise<unknown> | null, min: number): Promise<number[]> {
    let done = until === null;
    void until?.finally(() => (done = true));
    const times: number[] = [];
    while (!done || times.length < min) {
      times.push(await listJobs());
      if (until === null && times.length >= min) break;
    }
    return times;
  }

  for (let i = 0; i < 10; i++) await listJobs(); // warm-up
  const alone: number[] = [];
  const during: number[] = [];
  const loginRounds: number[] = [];
  const statuses = new Map<number, number>();
  for (let round = 0; round < ROUNDS; round++) {
    alone.push(...(await sampleWhile(null, 40)));
    const t0 = process.hrtime.bigint();
    const logins = Promise.all(
      emails.map(async (email) => {
        const res = await fetch(`${apiUrl}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${round + 1}` },
          body: JSON.stringify({ email, password: 'a wrong password' }),
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }),
    ).then(() => loginRounds.push(ms(t0)));
    // Let the logins reach the API first.
    await new Promise((r) => setTimeout(r, 20));
    during.push(...(await sampleWhile(logins, 10)));
    await logins;
  }

  const line = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length} requests)`;
  console.log(`GET /jobs with no logins:                         ${line(alone)}`);
  console.log(`GET /jobs during ${CONCURRENT_LOGINS} concurrent wrong logins:     ${line(during)} (target p99 < 100 ms)`);
  const figure = (xs: number[]) => ({ p50Ms: pct(xs, 50), p99Ms: pct(xs, 99), maxMs: Math.max(...xs), requests: xs.length });
  writeResults({ bench: 'login', params: { ROUNDS, CONCURRENT_LOGINS }, figures: { alone: figure(alone), duringLogins: figure(during), targetP99Ms: 100 } });
  console.log(`${CONCURRENT_LOGINS} concurrent wrong logins took ${loginRounds.map((t) => `${(t / 1000).toFixed(1)} s`).join(', ')} per round; answers: ${[...statuses].map(([s, n]) => `${s} x${n}`).join(', ')}`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
