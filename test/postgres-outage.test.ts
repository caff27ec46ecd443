// Postgres goes away during stream downloads (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse: usage
// is never lost): a private Postgres (private-postgres.ts) this file starts, stops for 20 s and starts again
// on the same port, never the shared one. Downloads begun before the stop end during it; once
// Postgres is back, GET /usage equals the bytes the clients received, and each download's
// download.completed event reaches the user's webhook.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres';
import { startStack, type Stack } from './stack';
import { startReceiver, type Receiver } from './webhook-receiver';

const OUTAGE_MS = 20_000;
const MiB = 1024 * 1024;
let pg: PrivatePostgres;
let stack: Stack;
let origin: Origin;
let receiver: Receiver;

beforeAll(async () => {
  pg = await startPrivatePostgres('ap_outage');
  stack = await startStack({ DATABASE_URL: pg.url });
  origin = await startOrigin();
  receiver = await startReceiver();
}, 60_000);
afterAll(async () => {
  await pg.start(); // nothing unless the test failed mid-outage
  await stack?.close();
  await origin?.close();
  await receiver?.close();
  await pg.remove();
}, 60_000);

/** Reads the first chunk of a download, then the rest once `go` resolves; the byte count. */
async function slowRead(url: string, go: Promise<void>, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers });
  const reader = res.body!.getReader();
  let bytes = 0;
  const first = await reader.read();
  bytes += first.value?.length ?? 0;
  await go;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) bytes += chunk.value.length;
  return bytes;
}

describe('while Postgres is down', () => {
  it('stream downloads that end during a 20 s outage are in GET /usage and sent as download.completed once it is back', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const hook = await call(stack.url, 'POST', '/webhooks', { key, body: { url: receiver.set('/downloads', [200]), events: ['download.completed'] } });
    expect(hook.status).toBe(201);
    const files = [0, 1].map((i) => ({ url: origin.set(`/pg/${i}.bin`, { body: bytesOf(700 + i, 16 * MiB) }) }));
    const created = await call(stack.url, 'POST', '/jobs', { key, body: { files, mode: 'stream' } });
    const job = await waitForJob(stack.url, key, created.body.job_id);
    expect(job.status).toBe('completed');
    const url = job.zips[0].download_url as string;

    let stopped!: () => void;
    const go = new Promise<void>((resolve) => (stopped = resolve));
    const reads = [slowRead(url, go), slowRead(url, go), slowRead(url, go, { range: `bytes=0-${4 * MiB - 1}` })];
    await new Promise((r) => setTimeout(r, 500)); // every download past its lookups
    const down = Date.now();
    await pg.stop();
    stopped();
    const each = await Promise.all(reads);
    const sent = each.reduce((a, b) => a + b, 0);
    expect(sent).toBeGreaterThan(2 * 32 * MiB);
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - down))));
    await pg.start();

    let usage = -1;
    await until(async () => {
      const res = await call(stack.url, 'GET', '/usage', { key });
      usage = res.status === 200 ? (res.body.usage.stream_bytes as number) : -1;
      return usage === sent;
    }, 'GET /usage counts every byte sent', 15_000).catch(() => undefined);
    expect(usage).toBe(sent);
    // Found by the soak (SOAK_SEED=105): an event whose outbox write met the outage was logged and lost.
    const events = await receiver.waitFor('/downloads', 3, 15_000).catch(() => receiver.received('/downloads'));
    expect(events.map((e) => e.body.download.bytes_sent).sort((a, b) => a - b)).toEqual(each.sort((a, b) => a - b));
  }, 90_000);
});
