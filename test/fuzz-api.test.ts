// Property-based fuzzing of the running API: generated bodies, paths, ids, cursors,
// tokens and headers for every route (test/fuzz/routes.ts), with a fixed seed and a bounded
// count. Properties: never a 5xx; every error in the envelope with a known code; 405 with
// Allow, 429 with Retry-After; no stack trace and no secret (API key, session secret,
// download-token secret, S3 secret) in any body.
// Another seed: FUZZ_SEED=<n> (and FUZZ_RUNS=<n>) on the command line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { ERROR_CODES } from '@ap/contract';
import { createUser } from './helpers';
import { startStack, type Stack } from './stack';
import { ANY_METHODS, FUZZ_ROUTES, type FuzzRoute, type FuzzSecrets } from './fuzz/routes';
import { auth as authArb, extraHeaders, type Auth, type Body } from './fuzz/arbitraries';

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);

let stack: Stack;
let apiKey: string;
let userId: string;
let secrets: FuzzSecrets & { sessionSecret: string; s3Secret: string };

beforeAll(async () => {
  // The API alone: jobs the fuzzer creates are not run. A small per-address login limit keeps
  // generated logins from spending the suite's time on password hashing.
  stack = await startStack({}, { workers: false, app: { loginThrottle: { perAddress: 5 } } });
  ({ apiKey, userId } = await createUser(stack.ctx, { plan: 'pro', password: 'fuzz password' }));
  secrets = {
    downloadTokenSecret: stack.ctx.config.DOWNLOAD_TOKEN_SECRET,
    sessionSecret: stack.ctx.config.SESSION_SECRET,
    s3Secret: stack.ctx.config.S3_SECRET_ACCESS_KEY,
  };
});
afterAll(async () => {
  // The jobs it created are never run (no workers here): closed, so that no other suite's
  // reconciler (the run shares one database) counts them as lost work.
  await stack?.ctx.db.job.updateMany({ where: { userId, status: { in: ['preparing', 'pending', 'processing'] } }, data: { status: 'failed', completedAt: new Date() } });
  await stack?.close();
});

interface FuzzRequest {
  route: FuzzRoute;
  method: string;
  path: string | ((secrets: FuzzSecrets) => string);
  body: Body;
  auth: Auth;
  headers: Record<string, string>;
}

const requestArb: fc.Arbitrary<FuzzRequest> = fc.oneof(
  ...FUZZ_ROUTES.map((route) => ({
    weight: route.weight ?? 1,
    arbitrary: fc
      .record({
        method: route.method === '*' ? fc.constantFrom(...ANY_METHODS) : fc.constant(route.method),
        path: route.path,
        body: route.body,
        auth: authArb,
        headers: extraHeaders,
      })
      .map((r) => ({ route, ...r })),
  })),
);

async function authHeaders(auth: Auth): Promise<Record<string, string>> {
  switch (auth.kind) {
    case 'key':
      return { 'x-api-key': apiKey };
    case 'none':
      return {};
    case 'api-key-header':
      return { 'x-api-key': auth.value };
    case 'authorization':
      return { authorization: auth.value };
    case 'forged-session': {
      const token = await new SignJWT(auth.claims).setProtectedHeader({ alg: auth.alg, typ: 'JWT' }).sign(new TextEncoder().encode(secrets.sessionSecret));
      return { authorization: `Bearer ${token}` };
    }
  }
}

const STACK_TRACE = /\n\s+at |\bat .*\.(ts|js):\d+|node_modules|PrismaClient|Invalid `prisma/;

/** What is wrong with one answer, or null. */
function problemsOf(req: FuzzRequest, status: number, headers: Headers, text: string): string[] {
  const problems: string[] = [];
  if (status >= 500) problems.push(`status ${status}`);
  for (const [name, secret] of Object.entries({ 'API key': apiKey, 'session secret': secrets.sessionSecret, 'download token secret': secrets.downloadTokenSecret, 'S3 secret': secrets.s3Secret })) {
    if (secret && text.includes(secret)) problems.push(`body holds the ${name}`);
  }
  if (STACK_TRACE.test(text)) problems.push('body holds a stack trace');
  if (status >= 400 && req.method !== 'HEAD') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      problems.push(`error body is not JSON: ${text.slice(0, 100)}`);
    }
    const shape = body as { success?: unknown; error?: { code?: unknown; message?: unknown } } | undefined;
    const envelope =
      shape !== undefined &&
      Object.keys(shape).sort().join() === 'error,success' &&
      shape.success === false &&
      typeof shape.error === 'object' &&
      shape.error !== null &&
      Object.keys(shape.error).sort().join() === 'code,message' &&
      typeof shape.error.code === 'string' &&
      Object.hasOwn(ERROR_CODES, shape.error.code) &&
      typeof shape.error.message === 'string' &&
      shape.error.message.length > 0;
    if (body !== undefined && !envelope) problems.push(`error body is not the envelope: ${text.slice(0, 200)}`);
  }
  if (status === 405 && !headers.get('allow')) problems.push('405 without Allow');
  if (status === 429 && !headers.get('retry-after')) problems.push('429 without Retry-After');
  return problems;
}

describe('API fuzz', () => {
  it('never answers 5xx, always the envelope on errors, never a stack trace or secret', async () => {
    const perRoute = new Map<string, number>();
    const statuses = new Map<number, number>();
    let sent = 0;
    console.log(`API fuzz: seed ${SEED}, ${RUNS} requests (FUZZ_SEED / FUZZ_RUNS to change)`);
    const started = Date.now();
    // fast-check's report quotes the whole counterexample (strings of 300,000 characters): cut it.
    // Its head says which property and run failed, its tail what the request got: keep both.
    const short = (m: string) => (m.length <= 6000 ? m : `${m.slice(0, 1500)}\n[...]\n${m.slice(-4500)}`);
    const assertShort = (run: Promise<void>) => run.catch((err: Error) => Promise.reject(new Error(short(err.message))));
    await assertShort(fc.assert(
      fc.asyncProperty(requestArb, async (req) => {
        const path = typeof req.path === 'function' ? req.path(secrets) : req.path;
        const headers: Record<string, string> = { ...req.headers, ...(await authHeaders(req.auth)) };
        let body: string | undefined;
        if (req.body.kind === 'json') body = JSON.stringify(req.body.value) ?? 'null';
        else if (req.body.kind === 'raw') body = req.body.text;
        if (req.method === 'GET' || req.method === 'HEAD') body = undefined; // fetch cannot send one
        if (body === undefined) delete headers['content-encoding'];
        else headers['content-type'] ??= 'application/json';
        let res: Response;
        try {
          res = await fetch(stack.url + path, { method: req.method, headers, body, redirect: 'manual' });
        } catch (err) {
          // fetch refused to send it (an invalid URL or header): not the API's answer.
          if (err instanceof TypeError && !(err.cause instanceof Error && /ECONNRESET|socket|closed/i.test(err.cause.message))) return;
          throw err;
        }
        const text = await res.text();
        sent++;
        perRoute.set(req.route.name, (perRoute.get(req.route.name) ?? 0) + 1);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const problems = problemsOf(req, res.status, res.headers, text);
        if (problems.length) {
          throw new Error(`${req.method} ${path.slice(0, 300)} -> ${res.status}: ${problems.join('; ')}\nbody sent: ${(body ?? '').slice(0, 300)}\nanswer: ${text.slice(0, 500)}`);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    ));
    console.log(
      `API fuzz: seed ${SEED}, ${RUNS} runs, ${sent} requests answered in ${((Date.now() - started) / 1000).toFixed(1)} s\n` +
        `  by route: ${[...perRoute].map(([r, n]) => `${r} ${n}`).join(', ')}\n` +
        `  by status: ${[...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ')}`,
    );
    // The run reached every route and both sides of the API.
    expect([...perRoute.keys()].sort()).toEqual(FUZZ_ROUTES.map((r) => r.name).sort());
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
    expect([...statuses.keys()].some((s) => s >= 400)).toBe(true);
  }, 120_000);
});
