// Progress (docs/fair-share.md#progress): bytes_done and expected_size per ZIP, progress on the job, written
// about once a second per bin while packing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { call, createUser } from './helpers';
import { bytesOf } from './origin';
import { startStack, type Stack } from './stack';

const MB = 1_000_000;
let stack: Stack;
let origin: http.Server;
let originUrl: string;

beforeAll(async () => {
  stack = await startStack();
  // Bodies at about 0.65 MB/s each, so that a 3 MB bin takes over two seconds to pack even with
  // both bodies fetched at once (fetching ahead).
  const body = bytesOf(7, 1.5 * MB);
  origin = http.createServer((req, res) => {
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
    if (req.method === 'HEAD') return void res.end();
    let at = 0;
    const tick = setInterval(() => {
      if (res.destroyed) return clearInterval(tick);
      res.write(body.subarray(at, (at += 64 * 1024)));
      if (at >= body.length) {
        clearInterval(tick);
        res.end();
      }
    }, 100);
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', () => resolve()));
  originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
});
afterAll(async () => {
  origin.closeAllConnections();
  await new Promise((resolve) => origin.close(resolve));
  await stack.close();
});

describe('progress of a stored job', () => {
  it('bytes_done only grows, 0 < progress < 1 while processing, 1 at the end, and about one write a second', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    // Every progress write of this job's bin, counted by the database itself.
    const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    const log = `progress_writes_${process.pid}`;
    await db.query(`CREATE TABLE ${log} (zip_id text, bytes bigint)`);
    await db.query(`CREATE FUNCTION ${log}_fn() RETURNS trigger AS $$ BEGIN INSERT INTO ${log} VALUES (NEW.id, NEW.bytes_done); RETURN NEW; END $$ LANGUAGE plpgsql`);
    await db.query(`CREATE TRIGGER ${log}_trg AFTER UPDATE OF bytes_done ON zips FOR EACH ROW WHEN (OLD.bytes_done IS DISTINCT FROM NEW.bytes_done) EXECUTE FUNCTION ${log}_fn()`);
    try {
      const files = [{ url: `${originUrl}/a.bin` }, { url: `${originUrl}/b.bin` }];
      // Split, so that preparing predicts the ZIP's size.
      const created = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files, max_zip_size_bytes: 104857600 } });
      expect(created.status).toBe(201);
      const jobId = created.body.job_id as string;

      const seen: { status: string; progress: number | null; bytesDone: number; expected: number | null }[] = [];
      const started = Date.now();
      let job: any;
      let packingStarted = 0;
      for (;;) {
        job = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key: user.apiKey })).body.job;
        const zip = job.zips[0];
        if (zip) seen.push({ status: job.status, progress: job.progress, bytesDone: zip.bytes_done, expected: zip.expected_size });
        if (job.status === 'processing' && !packingStarted) packingStarted = Date.now();
        if (job.status === 'completed' || job.status === 'failed' || Date.now() - started > 30_000) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const packingSeconds = (Date.now() - packingStarted) / 1000;
      expect(job.status).toBe('completed');
      expect(job.progress).toBe(1);
      expect(job.zips[0].bytes_done).toBe(job.zips[0].size);
      expect(job.zips[0].expected_size).toBe(job.zips[0].size);

      const bytes = seen.map((s) => s.bytesDone);
      expect(bytes).toEqual([...bytes].sort((a, b) => a - b));
      const midway = seen.filter((s) => s.status === 'processing' && s.progress !== null && s.progress > 0 && s.progress < 1);
      expect(midway.length).toBeGreaterThan(0);
      expect(seen.filter((s) => s.status === 'processing').every((s) => s.expected === job.zips[0].size)).toBe(true);

      // About one write a second while packing (plus one for a tick at either end); not one per chunk (~45 here).
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${log} WHERE zip_id = $1`, [job.zips[0].id]);
      expect(rows[0].n).toBeGreaterThanOrEqual(1);
      expect(rows[0].n).toBeLessThanOrEqual(Math.ceil(packingSeconds) + 2);
    } finally {
      await db.query(`DROP TRIGGER IF EXISTS ${log}_trg ON zips`);
      await db.query(`DROP FUNCTION IF EXISTS ${log}_fn`);
      await db.query(`DROP TABLE IF EXISTS ${log}`);
      await db.end();
    }
  }, 60_000);

  it('a single-ZIP job shows expected_size (its probed sizes) and 0 < progress < 1 while its bin packs', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    const files = [{ url: `${originUrl}/c.bin` }, { url: `${originUrl}/d.bin` }];
    const created = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files } });
    expect(created.status).toBe(201);
    const jobId = created.body.job_id as string;
    const seen: { status: string; progress: number | null; expected: number | null }[] = [];
    const started = Date.now();
    let job: any;
    for (;;) {
      job = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key: user.apiKey })).body.job;
      const zip = job.zips[0];
      if (zip) seen.push({ status: job.status, progress: job.progress, expected: zip.expected_size });
      if (job.status === 'completed' || job.status === 'failed' || Date.now() - started > 30_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job.status).toBe('completed');
    const midway = seen.filter((s) => s.status === 'processing' && s.expected !== null && s.progress !== null && s.progress > 0 && s.progress < 1);
    expect(midway.length).toBeGreaterThan(0);
    expect(midway.every((s) => s.expected === job.zips[0].size)).toBe(true);
    expect(job.zips[0].expected_size).toBe(job.zips[0].size);
  }, 60_000);
});
