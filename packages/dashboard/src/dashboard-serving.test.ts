// How the dashboard is served, checked against the real stack: its files and the fallback for
// client routes at /dashboard, and the page in Chromium over plain http under a LAN host name.
// The walkthrough of its pages is dashboard.test.ts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call } from '../../../test/helpers';
import { startStack, type Stack } from '../../../test/stack';
import { launchChromium } from './dashboard-browser';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({}, { workers: false });
});
afterAll(() => stack?.close());

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
    const lan = await launchChromium(['--host-resolver-rules=MAP dashboard.lan.test 127.0.0.1']);
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
});
