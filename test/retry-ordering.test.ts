// Retry from scratch against a concurrent retry (docs/api-hardening.md#retry-from-scratch): the
// job's state changes before any object is deleted, so no completed bin is left without its object.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Readable } from 'node:stream';
import { objectKeyFor, retryJob } from '@ap/jobs';
import type { ObjectStore } from '@ap/storage';
import { call, createUser } from './helpers';
import { startStack, type Stack } from './stack';

let stack: Stack;
beforeAll(async () => {
  // No workers: the retried job is not run, only its rows and objects are looked at.
  stack = await startStack({}, { workers: false });
});
afterAll(async () => {
  await stack.close();
});

/** A failed stored job whose single bin completed: its object is in the store. */
async function failedJobWithCompletedBin() {
  const user = await createUser(stack.ctx);
  const created = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files: [{ url: 'http://127.0.0.1:9/a.bin' }] } });
  expect(created.status).toBe(201);
  const jobId: string = created.body.job_id;
  const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
  const objectKey = objectKeyFor(jobId, zip.id);
  await stack.ctx.store.upload(objectKey, Readable.from([Buffer.from('PK archive bytes')]));
  await stack.ctx.db.zip.update({ where: { id: zip.id }, data: { status: 'completed', objectKey, size: 16n, completedAt: new Date() } });
  await stack.ctx.db.job.update({ where: { id: jobId }, data: { status: 'failed', error: 'one file failed', completedAt: new Date() } });
  return { userId: user.userId, jobId };
}

async function completedBinsWithoutObject(jobId: string): Promise<string[]> {
  const completed = await stack.ctx.db.zip.findMany({ where: { jobId, status: 'completed' } });
  const missing: string[] = [];
  for (const z of completed) if (!z.objectKey || !(await stack.ctx.store.head(z.objectKey))) missing.push(z.id);
  return missing;
}

describe('retry from scratch', () => {
  it('a retry from a checkpoint that runs while a retry from scratch deletes objects never keeps a completed bin whose object is gone', async () => {
    const { userId, jobId } = await failedJobWithCompletedBin();
    const deps = { db: stack.ctx.db, queues: stack.ctx.queues };
    let checkpoint: Promise<string> | undefined;
    // The real store, with the other retry run at the moment the first object deletion starts.
    const interleaved: ObjectStore = Object.assign(Object.create(stack.ctx.store) as ObjectStore, {
      async deleteMany(keys: string[]) {
        checkpoint ??= retryJob({ ...deps, store: stack.ctx.store }, jobId, userId, true);
        await checkpoint;
        return stack.ctx.store.deleteMany(keys);
      },
    });
    const scratch = await retryJob({ ...deps, store: interleaved }, jobId, userId, false);
    const outcomes = [scratch, await checkpoint];
    expect(outcomes.filter((o) => o === 'retried')).toHaveLength(1);
    expect(await completedBinsWithoutObject(jobId)).toEqual([]);
  });

  it('two concurrent retries, one from scratch: exactly one runs, and every completed bin keeps its object', async () => {
    for (let round = 0; round < 5; round++) {
      const { userId, jobId } = await failedJobWithCompletedBin();
      const deps = { db: stack.ctx.db, queues: stack.ctx.queues, store: stack.ctx.store };
      const outcomes = await Promise.all([retryJob(deps, jobId, userId, false), retryJob(deps, jobId, userId, true)]);
      expect(outcomes.filter((o) => o === 'retried')).toHaveLength(1);
      expect(await completedBinsWithoutObject(jobId)).toEqual([]);
    }
  });
});
