// The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against the real
// stack: API with the built dashboard, preparer and packer workers, Postgres, Redis, S3, and a
// local origin. One user walks through every page in order (webhooks and sources: in
// dashboard-settings.test.ts); the page's requests are recorded to check that each API call
// carries the session bearer and never an API key, and the browser's console must stay free of
// errors other than the HTTP errors the test provokes (test/browser-harness.ts).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { call } from '../../../test/helpers';
import { bytesOf, sha256, type Origin } from '../../../test/origin';
import type { Stack } from '../../../test/stack';
import { readZip } from '../../../test/zip-readers';
import { CHROMIUM, CHROMIUM_ARGS, expiredSession, PASSWORD, startDashboard, type Dashboard, type InBrowser } from '../../../test/browser-harness';

let h: Dashboard;
let stack: Stack;
let origin: Origin;
let context: BrowserContext;
let page: Page;
let user: Dashboard['user'];
let provoked: number[];
const shot = (name: string) => h.shot(name);
const waitForText = (selector: string, text: string) => h.waitForText(selector, text);
const sessionToken = () => h.sessionToken();

beforeAll(async () => {
  h = await startDashboard();
  ({ stack, origin, context, page, user, provoked } = h);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('dashboard in Chromium', () => {
  it('serves the app at /dashboard with a fallback for client routes, and 404s for missing files', async () => {
    const index = await fetch(`${stack.url}/dashboard/jobs/some-client-route`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    const html = await index.text();
    const asset = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    // Nothing from another origin: every script and stylesheet is served by the API itself.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const js = await fetch(stack.url + asset!);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');
    const missing = await call(stack.url, 'GET', '/dashboard/assets/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
    const bare = await fetch(`${stack.url}/dashboard`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([301, '/dashboard/']);
  });

  it('works over plain http under a host name that is not localhost (an operator trying it on a LAN address)', async () => {
    // Such a page is not a secure context: a CSP asking to upgrade insecure requests would send
    // its scripts to https://, where nothing answers, and leave the page blank.
    const lan = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP dashboard.lan.test 127.0.0.1'] });
    try {
      const lanPage = await lan.newPage();
      const failed: string[] = [];
      lanPage.on('requestfailed', (req) => failed.push(req.url()));
      await lanPage.goto(`http://dashboard.lan.test:${new URL(stack.url).port}/dashboard/`);
      await lanPage.getByRole('heading', { name: 'Log in', level: 1 }).waitFor({ timeout: 10_000 });
      expect(await lanPage.evaluate('window.isSecureContext')).toBe(false);
      expect(failed).toEqual([]);
    } finally {
      await lan.close();
    }
  });

  it('sends a visitor to the login page, refuses a wrong password with the API message, and logs in', async () => {
    await page.goto(`${stack.url}/dashboard/`);
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await shot('login');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill('not the password');
    provoked.push(401);
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('wrong email or password');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    // The token is in sessionStorage, not in a cookie, not in the URL.
    const token = await sessionToken();
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await context.cookies()).toEqual([]);
    expect(page.url()).not.toContain(token!);
    for (const name of ['Jobs', 'New job', 'API keys', 'Webhooks', 'Sources', 'Usage']) await page.getByRole('link', { name, exact: true }).waitFor();
    await page.getByText('No jobs yet.').waitFor();
  });

  let createdKey = '';

  it('creates an API key shown once with a copy button, then masked', async () => {
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('build server');
    await page.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByRole('textbox', { name: 'New API key' });
    await field.waitFor();
    createdKey = await field.inputValue();
    expect(createdKey).toMatch(/^azk_[\w-]{43}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    await shot('api-key-created');
    // The key works against the API (checked from the test, not the page).
    expect((await call(stack.url, 'GET', '/jobs', { key: createdKey })).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    const row = page.locator('tr', { hasText: 'build server' });
    await row.waitFor();
    expect(await row.textContent()).toContain('azk_••••');
    expect(await page.content()).not.toContain(createdKey);
    await shot('api-keys');
  });

  it('shows the API validation message for a bad name template at its field', async () => {
    await page.getByRole('link', { name: 'New job', exact: true }).click();
    await page.getByRole('heading', { name: 'New job', level: 1 }).waitFor();
    await page.getByLabel('URLs', { exact: true }).fill(origin.set('/one.bin', { body: bytesOf(1, 1000) }));
    await page.getByLabel('Name template').fill('photos-{nope}.zip');
    provoked.push(400);
    await page.getByRole('button', { name: 'Create job' }).click();
    const error = page.locator('#template-error');
    await error.waitFor();
    // The API's whole message for that field, and nothing above the form.
    expect(await error.textContent()).toMatch(/^unknown placeholder "\{nope\}"; the placeholders are /);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.getByLabel('Name template').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Name template').getAttribute('aria-describedby')).toContain('template-error');
    await shot('new-job-invalid-template');
  });

  let jobId = '';
  const bodies = { 'one.bin': bytesOf(1, 1000), 'two.bin': bytesOf(2, 250_000), 'three.txt': bytesOf(3, 17) };

  it('creates a stored job from pasted and uploaded URLs, watches it complete and downloads its ZIP through the link', async () => {
    const urls = Object.entries(bodies).map(([name, body]) => origin.set(`/files/${name}`, { body }));
    // One URL pasted, the others from a text file.
    await page.getByLabel('URLs', { exact: true }).fill(`${urls[0]}\n\n`);
    await page.getByLabel('Text file of URLs').setInputFiles({ name: 'urls.txt', mimeType: 'text/plain', buffer: Buffer.from(`${urls.slice(1).join('\n')}\n`) });
    await page.getByText('3 URLs.').waitFor();
    expect(await page.getByLabel('URLs', { exact: true }).inputValue()).toBe(`${urls[0]}\n${urls.slice(1).join('\n')}\n`);
    await page.getByLabel('Name template').fill('dashboard-{date}.zip');
    await page.getByLabel(/^Stored/).check();
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/dashboard\/jobs\/[0-9a-f-]{36}$/);
    jobId = page.url().split('/').pop()!;
    // Live status: the page polls until the job is completed, with no reload.
    await waitForText('.facts .badge', 'completed');
    const date = new Date().toISOString().slice(0, 10);
    const filename = `dashboard-${date}.zip`;
    await page.getByRole('heading', { name: filename, level: 1 }).waitFor();
    await shot('job-detail');

    const link = page.getByRole('link', { name: `Download ${filename}` });
    const href = (await link.getAttribute('href'))!;
    expect(href).toMatch(new RegExp(`^${stack.url}/download/`));
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe(filename);
    const bytes = readFileSync((await download.path())!);
    const entries = await readZip(bytes);
    expect(entries).toEqual(Object.entries(bodies).map(([name, body]) => ({ name, size: body.length, sha256: sha256(body) })));
    // The size the page shows is the ZIP's real size.
    const job = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key: user.apiKey })).body.job;
    expect(job.zips[0].size).toBe(bytes.length);
    const row = page.locator('table.zips tbody tr').first();
    expect(await row.textContent()).toContain(`${(bytes.length / 1000).toFixed(1).replace(/\.0$/, '')} kB`);
  });

  it('creates an encrypted, deflated stored job from the form; the password is sent once and shown nowhere', async () => {
    const archivePassword = 'dashboard zip secret 9';
    await page.getByRole('link', { name: 'New job', exact: true }).click();
    await page.getByRole('heading', { name: 'New job', level: 1 }).waitFor();
    await page.getByLabel('URLs', { exact: true }).fill(origin.set('/files/notes.csv', { body: Buffer.from('id,note\n'.repeat(5000)) }));
    await page.getByLabel(/^Stored/).check();
    await page.getByLabel(/^Deflate:/).check();
    await page.getByLabel('Deflate level').selectOption('9');
    // Too short: refused at the field before any request.
    await page.getByLabel('Archive password').fill('short');
    await page.getByRole('button', { name: 'Create job' }).click();
    expect(await page.locator('#password-error').textContent()).toMatch(/^must be 8 to 128 characters \(got 5\)/);
    await page.getByLabel('Archive password').fill(archivePassword);
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/dashboard\/jobs\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;
    await waitForText('.facts .badge', 'completed');
    const facts = (await page.locator('.facts').textContent())!;
    expect(facts).toContain('deflate (level 9)');
    expect(facts).toContain('aes-256');
    expect(await page.content()).not.toContain(archivePassword);
    const res = await call(stack.url, 'GET', `/jobs/${id}`, { key: user.apiKey });
    expect(res.status).toBe(200);
    const { job } = res.body;
    expect({ compression: job.compression, level: job.compression_level, encryption: job.encryption }).toEqual({ compression: 'deflate', level: 9, encryption: { method: 'aes-256' } });
    expect((await stack.ctx.db.job.findUniqueOrThrow({ where: { id }, select: { mode: true } })).mode).toBe('stored');
    expect(JSON.stringify(res.body)).not.toContain(archivePassword);
    await shot('job-encrypted');
  });

  it('shows a failed job with its errors and retries it', async () => {
    const missing = `${origin.url}/later.bin`;
    const created = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files: [{ url: missing }], zip_filename: 'retry-me.zip' } });
    expect(created.status).toBe(201);
    const failedId = created.body.job_id as string;
    await page.goto(`${stack.url}/dashboard/jobs/${failedId}`);
    await waitForText('.facts .badge', 'failed');
    await page.getByText(missing).first().waitFor();
    await shot('job-failed');
    // The file exists now: a retry completes.
    origin.set('/later.bin', { body: bytesOf(9, 4321) });
    await page.getByRole('button', { name: 'Retry job' }).click();
    await waitForText('.facts .badge', 'completed');
    await page.getByRole('link', { name: 'Download retry-me.zip' }).waitFor();
  });

  it('lists jobs with a status filter, cursor pages and live status', async () => {
    // 21 more jobs (stream jobs: no packing), so the list has two pages of 20.
    for (let i = 0; i < 21; i++) {
      const url = origin.set(`/stream/${i}.bin`, { body: bytesOf(100 + i, 100) });
      const res = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { mode: 'stream', files: [{ url }], zip_filename: `stream-${String(i).padStart(2, '0')}.zip` } });
      expect(res.status).toBe(201);
    }
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    const rows = page.locator('table.jobs tbody tr');
    await page.getByText('24 jobs').waitFor();
    expect(await rows.count()).toBe(20);
    // Newest first; the stream jobs end up completed while the page is open (live status).
    await waitForText('table.jobs tbody tr:first-child .badge', 'completed');
    expect(await rows.first().textContent()).toContain('stream-20.zip');
    await shot('jobs');
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.waitForFunction(() => (globalThis as unknown as InBrowser).document.querySelectorAll('table.jobs tbody tr').length === 4);
    expect(await rows.allTextContents()).toEqual([expect.stringContaining('stream-00.zip'), expect.stringContaining('retry-me.zip'), expect.stringContaining('archive-'), expect.stringContaining('dashboard-')]);
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.waitForFunction(() => (globalThis as unknown as InBrowser).document.querySelectorAll('table.jobs tbody tr').length === 20);

    await page.getByLabel('Status').selectOption('failed');
    await page.getByText('No failed jobs.').waitFor();
    expect(new URL(page.url()).search).toBe('?status=failed');
    await page.getByLabel('Status').selectOption('completed');
    // 24 jobs of one user, prepared two at a time by the test stack's preparer.
    await page.getByText('24 jobs completed').waitFor({ timeout: 120_000 });
    const statuses = await page.locator('table.jobs tbody .badge').allTextContents();
    expect(new Set(statuses)).toEqual(new Set(['completed']));
    await page.getByLabel('Status').selectOption('');
    await page.getByText('24 jobs').waitFor();
  }, 180_000);

  it('revokes a key after a confirmation', async () => {
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    const row = page.locator('tr', { hasText: 'build server' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' });
    await dialog.waitFor();
    await shot('api-key-revoke-confirm');
    // Cancel first: nothing happens.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await call(stack.url, 'GET', '/jobs', { key: createdKey })).status).toBe(200);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('Key “build server” revoked.').waitFor();
    await row.waitFor({ state: 'detached' });
    expect((await call(stack.url, 'GET', '/jobs', { key: createdKey })).status).toBe(401);
  });

  it('shows usage against the plan and jobs by status', async () => {
    const bearer = (await sessionToken())!;
    const usage = await call(stack.url, 'GET', '/usage', { bearer });
    const stats = await call(stack.url, 'GET', '/jobs/stats', { bearer });
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    for (const res of [usage, stats]) {
      if (res.status !== 200) {
        // From another branch (see the webhooks test): the API's message is shown meanwhile.
        expect(res.status).toBe(404);
        provoked.push(404);
        await page.getByText(res.body.error.message).waitFor();
      }
    }
    if (usage.status === 200) {
      await page.getByText('Stream downloads').waitFor();
      expect(await page.locator('.plan').textContent()).toBe('pro');
      expect(await page.getByRole('meter').count()).toBe(2);
    }
    if (stats.status === 200) {
      await page.getByText(`${stats.body.stats.total} jobs in total`).waitFor();
    }
    await shot('usage');
  });

  it('deletes a job after a confirmation: back to the list, and the job and its link are gone', async () => {
    const created = await call(stack.url, 'POST', '/jobs', { key: user.apiKey, body: { files: [{ url: origin.set('/delete-me.bin', { body: bytesOf(5, 700) }) }], zip_filename: 'delete-me.zip' } });
    const id = created.body.job_id as string;
    await page.goto(`${stack.url}/dashboard/jobs/${id}`);
    await waitForText('.facts .badge', 'completed');
    const link = await page.getByRole('link', { name: 'Download delete-me.zip' }).getAttribute('href');
    await page.getByRole('button', { name: 'Delete job' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this job?' });
    await dialog.waitFor();
    await shot('job-delete-confirm');
    // Cancel first: nothing happens.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await call(stack.url, 'GET', `/jobs/${id}`, { key: user.apiKey })).status).toBe(200);
    await page.getByRole('button', { name: 'Delete job' }).click();
    await dialog.getByRole('button', { name: 'Delete job' }).click();
    await page.waitForURL(/\/dashboard\/jobs$/);
    expect((await call(stack.url, 'GET', `/jobs/${id}`, { key: user.apiKey })).status).toBe(404);
    expect((await fetch(link!)).status).not.toBe(200);
  });

  it('reads well at phone width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await page.getByText('24 jobs').waitFor();
    // Nothing wider than the screen: no sideways scrolling.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot('jobs-phone');
    await page.goto(`${stack.url}/dashboard/jobs/${jobId}`);
    await waitForText('.facts .badge', 'completed');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot('job-detail-phone');
    await page.getByRole('link', { name: 'New job', exact: true }).click();
    await page.getByLabel('URLs', { exact: true }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot('new-job-phone');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('returns to the login page with a message when the session has expired', async () => {
    await page.evaluate(`sessionStorage.setItem('archive-packager.session', ${JSON.stringify(expiredSession(user.userId))})`);
    provoked.push(401);
    await page.goto(`${stack.url}/dashboard/jobs`);
    await page.getByText('Your session has expired. Log in again.').waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(await sessionToken()).toBeNull();
    await h.login();
  });

  it('logs out: the token is gone and pages ask to log in again', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You have logged out.').waitFor();
    expect(await sessionToken()).toBeNull();
    await page.goto(`${stack.url}/dashboard/keys`);
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
  });

  it('sent the session bearer and never an API key on every API call, with no console errors', () => {
    h.checkRequestsAndConsole(21);
  });
});
