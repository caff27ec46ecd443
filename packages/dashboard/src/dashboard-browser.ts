// What the dashboard's browser suites share: Debian's Chromium driven by playwright-core, and
// the walkthrough's world (the real stack with the built dashboard, a local origin, a webhook
// receiver, one user, and a page whose console errors and API requests are recorded).
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createUser } from '../../../test/helpers';
import { startOrigin, type Origin } from '../../../test/origin';
import { startStack, type Stack } from '../../../test/stack';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
export const SHOTS = path.resolve('test-output/dashboard');
export const PASSWORD = 'a long enough password';
export const WAIT = 60_000;

/** Debian's Chromium, with `extraArgs` after the suites' usual flags. */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * The page's document, inside functions that run in the browser (serialised, so the cast is
 * inline; this file is type-checked without the DOM library). The page's CSP forbids eval, so
 * those are functions, not strings.
 */
export type InBrowser = { document: { querySelector(s: string): { textContent: string | null } | null; querySelectorAll(s: string): { length: number } } };

/** An HS256 session JWT as the API signs them, already expired. */
export function expiredSession(userId: string): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: userId, iss: 'archive-packager', iat: now - 7200, exp: now - 60 })}`;
  return `${unsigned}.${createHmac('sha256', process.env.SESSION_SECRET!).update(unsigned).digest('base64url')}`;
}

export interface Walkthrough {
  stack: Stack;
  origin: Origin;
  receiverUrl: string;
  context: BrowserContext;
  page: Page;
  user: { userId: string; apiKey: string; email: string };
  /** Console messages of type error, and uncaught page errors. */
  consoleErrors: string[];
  /** Every request the page made to the API (not the dashboard's own files, not downloads). */
  apiRequests: { method: string; path: string; authorization?: string; apiKey?: string }[];
  close(): Promise<void>;
}

/** Everything the walkthrough needs, started; `close` stops what was started. */
export async function startWalkthrough(): Promise<Walkthrough> {
  let stack: Stack | undefined;
  let origin: Origin | undefined;
  let receiver: http.Server | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await stack?.close();
    await origin?.close();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  };
  try {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startStack();
    origin = await startOrigin();
    // A webhook receiver that accepts every delivery.
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', () => resolve()));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const user = await createUser(stack.ctx, { plan: 'pro', password: PASSWORD });

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const consoleErrors: string[] = [];
    const apiRequests: Walkthrough['apiRequests'] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(`uncaught: ${err.message}`));
    const stackUrl = stack.url;
    page.on('request', (req) => {
      const url = new URL(req.url());
      if (url.origin !== stackUrl || url.pathname.startsWith('/dashboard') || url.pathname.startsWith('/download/')) return;
      const headers = req.headers();
      apiRequests.push({ method: req.method(), path: url.pathname, authorization: headers.authorization, apiKey: headers['x-api-key'] });
    });
    return { stack, origin, receiverUrl, context, page, user, consoleErrors, apiRequests, close };
  } catch (err) {
    await close();
    throw err;
  }
}
