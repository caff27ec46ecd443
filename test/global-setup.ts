// One database, one S3 directory and one Redis key prefix per test run, removed at the end,
// so runs (and CI next to a developer) never see each other's data.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDatabase, migrate } from '@ap/db';
import { startEmbeddedS3, EMBEDDED_S3_CREDENTIALS } from '../scripts/embedded';
import { buildServices } from '../scripts/services';
import { buildDashboard } from '@ap/dashboard';

const TEST_BUCKET = 'test-archives';

export default async function globalSetup(): Promise<void> {
  // Tests that run a service as a process run its bundle; the browser tests load the dashboard.
  await Promise.all([buildServices(undefined, { ifStale: true }), buildDashboard({ ifStale: true })]);
  const runId = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const base = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const url = new URL(base);
  url.pathname = `/ap_test_${runId}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl);

  const s3Dir = mkdtempSync(path.join(os.tmpdir(), 'ap-s3-'));
  const s3 = await startEmbeddedS3(s3Dir, TEST_BUCKET);
  (globalThis as Record<string, unknown>).__AP_TEST__ = { s3, s3Dir, databaseUrl };

  Object.assign(process.env, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `ap_test_${runId}`,
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: TEST_BUCKET,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
    DOWNLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
    SESSION_SECRET: randomBytes(32).toString('hex'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    // Tests that exercise the limit set their own.
    RATE_LIMIT_PER_MINUTE: '100000',
    UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '100000',
    DOWNLOAD_RATE_LIMIT: '100000',
    // Tests stand in for clients behind a proxy on loopback.
    TRUSTED_PROXIES: '127.0.0.1,::1',
  });
}
