// Hardening 3, item 6 (docs/guarantees.md#hardening-third-round-items-1-6): what users read of
// a failure is worded ("connection refused"), never an exception's text naming internal
// addresses; the raw error goes to the log, and URLs in log lines lose their query strings.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import type { Job } from 'bullmq';
import type { PackPayload } from '@ap/queue';
import { createPackerProcessor } from '@ap/packer';
import { prepareJob } from '@ap/preparer';
import { call, createUser, waitForJob } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

let stack: Stack;
let origin: Origin;
let deadPort: number;
const logLines: string[] = [];

beforeAll(async () => {
  // A port nothing listens on: the store refuses every connection.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  deadPort = (probe.address() as net.AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  stack = await startStack({ S3_ENDPOINT: `http://127.0.0.1:${deadPort}`, LOG_LEVEL: 'info' }, { workers: false });
  const log = stack.ctx.log as unknown as Record<symbol, unknown>;
  const streamSym = Object.getOwnPropertySymbols(log).find((s) => s.description === 'pino.stream')!;
  const inner = log[streamSym] as { write(line: string): void };
  // The logger's own hooks run before its stream: this sees each line as it would be written.
  log[streamSym] = { write: (line: string) => (logLines.push(line), inner.write(line)) };
  origin = await startOrigin();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

describe('hardening 3, item 6: nothing internal in users\' eyes or logs', () => {
  it('a bin that fails on an internal store is shown "connection refused", not the exception with its address; the log has the raw error', async () => {
    const { apiKey } = await createUser(stack.ctx, { plan: 'pro' });
    const created = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: origin.set('/a.bin', { body: Buffer.alloc(1000, 7) }) }], max_zip_size_bytes: 104_857_600 } });
    expect(created.status).toBe(201);
    // Preparing needs no store; the bin is packed here, on its last attempt, by the packer's own processor.
    const { attempt } = await stack.ctx.db.job.findUniqueOrThrow({ where: { id: created.body.job_id }, select: { attempt: true } });
    await prepareJob(stack.ctx, stack.ctx.queues, { jobId: created.body.job_id, attempt });
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId: created.body.job_id } });
    const message = { data: { jobId: zip.jobId, zipId: zip.id, attempt: zip.attempt }, opts: { attempts: 1 }, attemptsMade: 0, moveToWait: async () => undefined } as unknown as Job<PackPayload>;
    await expect(createPackerProcessor(stack.ctx)(message, 'token')).rejects.toBeDefined();
    const job = await waitForJob(stack.url, apiKey, created.body.job_id);
    expect(job.status).toBe('failed');
    expect(job.errors).toEqual([{ url: '', error: 'connection refused' }]);
    expect(JSON.stringify(job)).not.toContain(String(deadPort));
    expect(logLines.some((l) => l.includes('"bin failed"') && l.includes('ECONNREFUSED'))).toBe(true);
  });

  it('a URL in a log line keeps its path and loses its query string (a presigned URL\'s signature)', () => {
    stack.ctx.log.warn({ url: 'https://bucket.example/key.bin?X-Amz-Signature=5ec12e7&X-Amz-Credential=AKIA', err: new Error('fetching https://o.example/f?token=abc failed') }, 'seen https://o.example/g?sig=zzz');
    const line = logLines.find((l) => l.includes('bucket.example'))!;
    expect(line).toContain('https://bucket.example/key.bin');
    expect(line).toContain('https://o.example/f');
    expect(line).toContain('https://o.example/g');
    for (const secret of ['5ec12e7', 'AKIA', 'token=abc', 'sig=zzz']) expect(line).not.toContain(secret);
  });
});
