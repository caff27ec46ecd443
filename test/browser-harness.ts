// What the dashboard's browser tests share: the real stack with a local origin and a pro user,
// Debian's Chromium (driven by playwright-core) on one page whose API requests and console
// errors are recorded, and the checks made on them at the end (every API call carries the
// session bearer and never an API key; no console error but the HTTP errors a test provoked).
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from '@jest/globals';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createUser } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const SHOTS = path.resolve('test-output/dashboard');
export const PASSWORD = 'a long enough password';
const WAIT = 60_000;

/**
 * The page's document, inside functions that run in the browser (serialised, so the cast is
 * inline; this file is type-checked without the DOM library). The page's CSP forbids eval, so
 * those are functions, not strings.
 */
export type InBrowser = { document: { querySelector(s: string): { textContent: string | null } | null; querySelectorAll(s: string): { length: number } } };

export interface Dashboard {
  stack: Stack;
  origin: Origin;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  user: { userId: string; apiKey: string; email: string };
  /** HTTP error statuses of API responses the test provoked on purpose, in order. */
  provoked: number[];
  shot(name: string): Promise<void>;
  /** Waits until `selector`'s text is `text` (the page polls; no test-side sleeps). */
  waitForText(selector: string, text: string, timeout?: number): Promise<void>;
  login(): Promise<void>;
  sessionToken(): Promise<string | null>;
  /** The end-of-run checks on the recorded requests (at least `minRequests`) and console. */
  checkRequestsAndConsole(minRequests: number): void;
  close(): Promise<void>;
}

export async function startDashboard(): Promise<Dashboard> {
  mkdirSync(SHOTS, { recursive: true });
  const stack = await startStack();
  const origin = await startOrigin();
  const user = await createUser(stack.ctx, { plan: 'pro', password: PASSWORD });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  /** Console messages of type error, and uncaught page errors. */
  const consoleErrors: string[] = [];
  /** Every request the page made to the API (not the dashboard's own files, not downloads). */
  const apiRequests: { method: string; path: string; authorization?: string; apiKey?: string }[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push(msg.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(`uncaught: ${err.message}`));
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.origin !== stack.url || url.pathname.startsWith('/dashboard') || url.pathname.startsWith('/download/')) return;
    const headers = req.headers();
    apiRequests.push({ method: req.method(), path: url.pathname, authorization: headers.authorization, apiKey: headers['x-api-key'] });
  });
  const provoked: number[] = [];
  return {
    stack,
    origin,
    browser,
    context,
    page,
    user,
    provoked,
    shot: async (name) => void (await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })),
    waitForText: async (selector, text, timeout = WAIT) => {
      await page.waitForFunction(([s, t]) => (globalThis as unknown as InBrowser).document.querySelector(s)?.textContent?.trim() === t, [selector, text] as const, { timeout });
    },
    login: async () => {
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    },
    sessionToken: () => page.evaluate<string | null>("sessionStorage.getItem('archive-packager.session')"),
    checkRequestsAndConsole: (minRequests) => {
      expect(apiRequests.length).toBeGreaterThanOrEqual(minRequests);
      for (const req of apiRequests) {
        expect({ ...req, apiKey: req.apiKey ?? null }).toEqual({ ...req, apiKey: null });
        if (req.path === '/auth/login') expect(req.authorization).toBeUndefined();
        else expect(req.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
      }
      // Chromium logs every HTTP error response as a console error; only the provoked ones occur.
      expect(consoleErrors).toEqual(provoked.map((status) => expect.stringContaining(`status of ${status}`)));
    },
    close: async () => {
      await browser.close();
      await stack.close();
      await origin.close();
    },
  };
}

/** An HS256 session JWT as the API signs them, already expired. */
export function expiredSession(userId: string): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: userId, iss: 'archive-packager', iat: now - 7200, exp: now - 60 })}`;
  return `${unsigned}.${createHmac('sha256', process.env.SESSION_SECRET!).update(unsigned).digest('base64url')}`;
}
