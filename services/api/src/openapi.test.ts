// GET /openapi.json and /docs, and the contract between the document and the running API:
// the document is valid OpenAPI 3.1, names exactly the routes Express has, and every route
// answers what it says (each response here goes through test/contract.ts via `call`/`download`).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { validate, compileErrors } from '@readme/openapi-parser';
import { API_ROUTES, buildOpenApiDocument, openApiPath } from '@ap/contract';
import { createApp } from './app';
import { call, createUser, download, waitForJob } from '../../../test/helpers';
import { checkResponse, ContractViolation, seenResponses } from '../../../test/contract';
import { bytesOf, startOrigin, type Origin } from '../../../test/origin';
import { startStack, type Stack } from '../../../test/stack';
import { readZip } from '../../../test/zip-readers';

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  origin = await startOrigin();
  stack = await startStack();
  key = (await createUser(stack.ctx, { plan: 'pro', password: 'a long password' })).apiKey;
});
afterAll(async () => {
  await stack?.close();
  await origin?.close();
});

interface RouterLayer {
  rawPath?: string;
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: RouterLayer[] };
}

/** Every `METHOD /path` Express answers, mounted routers walked. */
function expressRoutes(layers: RouterLayer[], prefix = ''): string[] {
  const out: string[] = [];
  for (const layer of layers) {
    if (layer.route) {
      const path = layer.route.path === '/' && prefix ? prefix : prefix + layer.route.path;
      for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') out.push(`${method} ${path}`);
    } else if (layer.handle.stack) {
      out.push(...expressRoutes(layer.handle.stack, prefix + (layer.rawPath === '/' ? '' : (layer.rawPath ?? ''))));
    }
  }
  return out;
}

describe('the OpenAPI document', () => {
  it('is served at /openapi.json and passes an OpenAPI 3.1 validator', async () => {
    const res = await call(stack.url, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(buildOpenApiDocument({ serverUrl: stack.url }));
    expect(res.body.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(res.body));
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);
    expect(result.specification).toBe('OpenAPI');
  });

  it('lists what a user comes for first: Jobs, then downloads; operations last', () => {
    const doc = buildOpenApiDocument();
    const tags = (doc.tags as { name: string }[]).map((t) => t.name);
    expect(tags).toEqual(['Jobs', 'Download', 'Webhooks', 'Sources', 'API keys', 'Usage', 'Authentication', 'Reference', 'Operations']);
    const firstTags = Object.values(doc.paths as Record<string, Record<string, { tags: string[] }>>).map((ops) => Object.values(ops)[0]!.tags[0]);
    expect(firstTags[0]).toBe('Jobs');
    expect(firstTags.at(-1)).toBe('Operations');
  });

  it('names every Express route and nothing else', () => {
    const app = createApp(stack.ctx) as unknown as { router: { stack: RouterLayer[] } };
    const fromExpress = expressRoutes(app.router.stack).map((r) => {
      const [method, path] = r.split(' ');
      return `${method} ${openApiPath(path!)}`;
    });
    const doc = buildOpenApiDocument();
    const fromDocument = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(new Set(fromExpress).size).toBe(fromExpress.length);
    expect([...fromExpress].sort()).toEqual([...fromDocument].sort());
  });

  it('describes both authentication schemes, every error code per route, and the download ranges', () => {
    const doc = buildOpenApiDocument() as any;
    expect(doc.components.securitySchemes).toEqual({
      ApiKeyAuth: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
      SessionBearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    const createJob = doc.paths['/jobs'].post;
    expect(createJob.security).toEqual([{ ApiKeyAuth: [] }, { SessionBearer: [] }]);
    const codesOf = (op: any, status: number) => op.responses[status].content['application/json'].schema.properties.error.properties.code.enum;
    expect(codesOf(createJob, 403)).toEqual(['PLAN_LIMIT_EXCEEDED', 'QUOTA_EXCEEDED']);
    expect(codesOf(createJob, 400)).toEqual(['INVALID_REQUEST']);
    expect(codesOf(createJob, 401)).toEqual(['UNAUTHORIZED']);
    expect(codesOf(createJob, 429)).toEqual(['RATE_LIMITED']);
    const dl = doc.paths['/download/{token}'].get;
    expect(dl.security).toEqual([]);
    expect(Object.keys(dl.responses).sort()).toEqual(['200', '206', '304', '403', '404', '416', '429', '431', '500', '502']);
    expect(codesOf(dl, 429)).toEqual(['RATE_LIMITED']);
    expect(codesOf(dl, 404)).toEqual(['NOT_FOUND']);
    expect(codesOf(dl, 403)).toEqual(['INVALID_TOKEN', 'EXPIRED_TOKEN', 'QUOTA_EXCEEDED']);
    expect(dl.responses['206'].headers['Content-Range']).toBeDefined();
    expect(dl.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual(expect.arrayContaining(['header Range', 'header If-Range', 'path token']));
    // Request bodies come from the validating schemas.
    const body = createJob.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['files']);
    expect(body.additionalProperties).toBe(false);
    expect(body.properties.max_zip_size_bytes.anyOf[0]).toMatchObject({ minimum: 104857600, maximum: 536870912000 });
    expect(doc.components.schemas.Job.properties.zips.items).toEqual({ $ref: '#/components/schemas/Zip' });
  });

  it('the contract check refuses what the document does not say', () => {
    const u = 'http://127.0.0.1:1';
    expect(() => checkResponse('GET', `${u}/jobs`, 201, 'application/json', {})).toThrow(ContractViolation);
    expect(() => checkResponse('GET', `${u}/jobs/x`, 404, 'application/json', { success: false, error: { code: 'INVALID_TOKEN', message: 'x' } })).toThrow(ContractViolation);
    expect(() => checkResponse('POST', `${u}/jobs`, 201, 'application/json', { success: true, job_id: 'x' })).toThrow(ContractViolation);
    expect(() => checkResponse('GET', `${u}/api-keys`, 200, 'application/json', { success: true, api_keys: [], extra: 1 })).toThrow(ContractViolation);
    expect(() => checkResponse('GET', `${u}/nowhere`, 200, 'application/json', {})).toThrow(ContractViolation);
    expect(() => checkResponse('GET', `${u}/api-keys`, 200, 'application/json', { success: true, api_keys: [] })).not.toThrow();
  });
});

describe('GET /docs', () => {
  // Hosts that occur in the Swagger UI bundle only as text (specification links, XML and SVG
  // namespaces, example values in its own docs): nothing is loaded from them.
  const REFERENCE_TEXT_HOSTS = new Set([
    'datatracker.ietf.org', 'www.w3.org', 'www.rfc-editor.org', 'spec.openapis.org', 'github.com', 'json-schema.org',
    'www.tiktok.com', 'twitter.com', 'instagram.com', 'example.com', 'www.facebook.com', 'vladimirgorej.com', 'swagger.io',
    'spdx.org', 'soundcloud.com', 'redux.js.org', 'reactjs.org', 'base', 'fb.me',
    // The validator badge's default; the page turns it off (`validatorUrl: null`, checked below).
    'validator.swagger.io',
  ]);

  it('returns the page and its assets from this server, with no external URL', async () => {
    const page = await fetch(`${stack.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    checkResponse('GET', `${stack.url}/docs`, page.status, page.headers.get('content-type'), undefined);
    // No absolute or protocol-relative URL anywhere in the page.
    expect(html).not.toMatch(/https?:\/\/|\/\/[a-z0-9]/i);
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.sort()).toEqual(['docs/favicon-32x32.png', 'docs/init.js', 'docs/swagger-ui-bundle.js', 'docs/swagger-ui.css']);
    for (const ref of refs) {
      const asset = await fetch(new URL(ref, `${stack.url}/docs`));
      expect({ ref, status: asset.status }).toEqual({ ref, status: 200 });
      checkResponse('GET', asset.url, asset.status, asset.headers.get('content-type'), undefined);
      const text = Buffer.from(await asset.arrayBuffer()).toString('latin1');
      if (ref.endsWith('.css')) {
        // Style sheets: only data: URLs (images inlined), no @import.
        expect(text).not.toMatch(/@import/);
        for (const m of text.matchAll(/url\(\s*["']?([^"')]+)/g)) expect(m[1]).toMatch(/^data:/);
      }
      if (ref.endsWith('.js')) {
        const hosts = new Set([...text.matchAll(/\b(?:https?:)?\/\/([a-z0-9][a-z0-9.-]*\.[a-z]{2,}|base)\b/gi)].map((m) => m[1]!.toLowerCase()));
        expect([...hosts].filter((h) => !REFERENCE_TEXT_HOSTS.has(h))).toEqual([]);
      }
      if (ref === 'docs/init.js') {
        expect(text).toContain('validatorUrl: null');
        expect(text).not.toMatch(/https?:/);
      }
    }
    // At `/docs/` the same page loads the same assets and document, as a browser resolves them.
    const below = await fetch(`${stack.url}/docs/`);
    expect(below.status).toBe(200);
    const belowHtml = await below.text();
    const base = new URL(belowHtml.match(/<base href="([^"]+)">/)?.[1] ?? '', `${stack.url}/docs/`);
    expect(base.href).toBe(`${stack.url}/docs`);
    expect([...belowHtml.matchAll(/(?:src|href)="(docs\/[^"]+)"/g)].map((m) => m[1]!).sort()).toEqual(refs);
    for (const ref of [...refs, 'openapi.json']) expect({ ref, status: (await fetch(new URL(ref, base))).status }).toEqual({ ref, status: 200 });
    // The page asks for no asset it does not serve, and serves no file but its own.
    expect((await call(stack.url, 'GET', '/docs/package.json')).status).toBe(404);
    expect((await call(stack.url, 'GET', '/docs/..%2Fpackage.json')).status).toBe(404);
  });
});

describe('every route answers as documented', () => {
  it('covers each route of the document', async () => {
    const u = stack.url;
    const unique = (i: number) => origin.set(`/contract/${i}.bin`, { body: bytesOf(i, 50_000 + i) });
    expect((await call(u, 'GET', '/healthz')).status).toBe(200);
    expect([200, 503]).toContain((await call(u, 'GET', '/readyz')).status);
    const user = await createUser(stack.ctx, { password: 'correct horse battery' });
    const login = await call(u, 'POST', '/auth/login', { body: { email: user.email, password: 'correct horse battery' } });
    expect(login.status).toBe(200);
    expect((await call(u, 'POST', '/auth/login', { body: { email: user.email, password: 'wrong one' } })).status).toBe(401);
    expect((await call(u, 'POST', '/auth/login', { body: {} })).status).toBe(400);

    const created = await call(u, 'POST', '/api-keys', { bearer: login.body.token, body: { name: 'contract' } });
    expect(created.status).toBe(201);
    expect((await call(u, 'GET', '/api-keys', { key })).status).toBe(200);
    expect((await call(u, 'GET', '/api-keys')).status).toBe(401);
    expect((await call(u, 'DELETE', `/api-keys/${created.body.api_key.id}`, { key: user.apiKey })).status).toBe(200);
    expect((await call(u, 'DELETE', `/api-keys/${created.body.api_key.id}`, { key: user.apiKey })).status).toBe(404);

    expect((await call(u, 'POST', '/jobs', { key, rawBody: '{"files": [' })).status).toBe(400);
    expect((await call(u, 'POST', '/jobs', { key: user.apiKey, body: { files: [{ url: unique(0) }], expires_in: 10 ** 7 } })).status).toBe(403);
    const job = await call(u, 'POST', '/jobs', { key, body: { files: [{ url: unique(1) }, { url: unique(2), filename: 'b/two.bin' }] } });
    expect(job.status).toBe(201);
    const failing = await call(u, 'POST', '/jobs', { key, body: { files: [{ url: `${origin.url}/missing` }] } });
    expect(failing.status).toBe(201);
    expect((await call(u, 'GET', '/jobs?limit=2', { key })).status).toBe(200);
    expect((await call(u, 'GET', '/jobs?limit=0', { key })).status).toBe(400);
    expect((await call(u, 'GET', `/jobs/${job.body.job_id}`, { key })).status).toBe(200);
    expect((await call(u, 'GET', '/jobs/00000000-0000-4000-8000-000000000000', { key })).status).toBe(404);
    expect((await call(u, 'POST', `/jobs/${job.body.job_id}/retry`, { key, body: {} })).status).toBe(400);
    expect((await call(u, 'POST', '/jobs/00000000-0000-4000-8000-000000000000/retry', { key })).status).toBe(404);

    const done = await waitForJob(u, key, job.body.job_id);
    expect(done.status).toBe('completed');
    expect((await waitForJob(u, key, failing.body.job_id)).status).toBe('failed');
    expect((await call(u, 'POST', `/jobs/${failing.body.job_id}/retry`, { key, body: { from_checkpoint: false } })).status).toBe(200);
    const full = await download(done.download_url);
    expect(full.status).toBe(200);
    expect((await readZip(full.body)).length).toBe(2);
    const etag = full.headers.get('etag')!;
    const part = await download(done.download_url, { range: 'bytes=100-', 'if-range': etag });
    expect(part.status).toBe(206);
    expect(part.body.equals(full.body.subarray(100))).toBe(true);
    expect((await download(done.download_url, { range: 'bytes=100-', 'if-range': '"other"' })).status).toBe(200);
    expect((await download(done.download_url, { range: `bytes=${full.body.length}-` })).status).toBe(416);
    expect((await download(`${u}/download/not-a-token`)).status).toBe(403);
    expect((await call(u, 'DELETE', `/jobs/${done.id}`, { key })).status).toBe(200);
    expect((await call(u, 'DELETE', `/jobs/${done.id}`, { key })).status).toBe(404);
    expect((await call(u, 'GET', '/jobs/stats', { key })).status).toBe(200);
    expect((await call(u, 'GET', '/usage', { key })).status).toBe(200);
    const hook = await call(u, 'POST', '/webhooks', { key, body: { url: `${origin.url}/hook` } });
    expect(hook.status).toBe(201);
    expect((await call(u, 'POST', '/webhooks', { key, body: { url: 'ftp://example.com/' } })).status).toBe(400);
    expect((await call(u, 'GET', '/webhooks', { key })).status).toBe(200);
    expect((await call(u, 'POST', `/webhooks/${hook.body.webhook.id}/rotate-secret`, { key })).status).toBe(200);
    expect((await call(u, 'GET', `/webhooks/${hook.body.webhook.id}/deliveries?limit=5`, { key })).status).toBe(200);
    expect((await call(u, 'GET', '/webhooks/00000000-0000-4000-8000-000000000000/deliveries', { key })).status).toBe(404);
    expect((await call(u, 'DELETE', `/webhooks/${hook.body.webhook.id}`, { key })).status).toBe(200);
    expect((await call(u, 'DELETE', `/webhooks/${hook.body.webhook.id}`, { key })).status).toBe(404);
    const source = await call(u, 'POST', '/sources', { key, body: { name: 'contract', type: 's3', region: 'us-east-1', access_key_id: 'AKIA', secret_access_key: 'not-shown' } });
    expect(source.status).toBe(201);
    expect((await call(u, 'POST', '/sources', { key, body: { name: 'contract', type: 'gcs' } })).status).toBe(400);
    expect((await call(u, 'GET', '/sources', { key })).status).toBe(200);
    expect((await call(u, 'DELETE', `/sources/${source.body.source.id}`, { key })).status).toBe(200);
    expect((await call(u, 'DELETE', `/sources/${source.body.source.id}`, { key })).status).toBe(404);
    expect((await call(u, 'PUT', '/jobs', { key })).status).toBe(405);
    expect((await call(u, 'GET', '/openapi.json')).status).toBe(200);
    await fetch(`${u}/docs`).then((r) => checkResponse('GET', r.url, r.status, r.headers.get('content-type'), undefined));
    await fetch(`${u}/docs/swagger-ui.css`).then((r) => checkResponse('GET', r.url, r.status, r.headers.get('content-type'), undefined));

    // Each route was answered at least once with a success and, where it has one, an error.
    for (const route of API_ROUTES) {
      const path = openApiPath(route.path);
      const seen = [...seenResponses].filter((s) => s.startsWith(`${route.method} ${path} `)).map((s) => Number(s.split(' ')[2]));
      expect({ route: `${route.method} ${path}`, success: seen.some((s) => s < 300) }).toEqual({ route: `${route.method} ${path}`, success: true });
    }
  });
});
