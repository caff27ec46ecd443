// The routes the API fuzz suite (test/fuzz-api.test.ts) drives. A branch adding a route adds
// an entry here: its method, a generator of its path (with query), and of its body.
import fc from 'fast-check';
import { signDownloadToken } from '@ap/tokens';
import * as gen from './arbitraries';

/** What the suite knows that a client would not: for requests that must be signed. */
export interface FuzzSecrets {
  downloadTokenSecret: string;
}

export interface FuzzRoute {
  /** Label in the run's summary. */
  name: string;
  method: string;
  /** Path and query, generated (a function when it needs the stack's secrets). */
  path: fc.Arbitrary<string | ((secrets: FuzzSecrets) => string)>;
  /** Body, generated (routes without one still get stray bodies now and then). */
  body: fc.Arbitrary<gen.Body>;
  /** Share of the runs (default 1). */
  weight?: number;
}

const seg = (value: fc.Arbitrary<string>) => value.map(gen.encode);
const noBody = gen.bodyOf(gen.anyJson).map((b) => (b.kind === 'json' ? { kind: 'none' as const } : b));

export const FUZZ_ROUTES: FuzzRoute[] = [
  { name: 'POST /jobs', method: 'POST', path: fc.constant('/jobs'), body: gen.bodyOf(gen.jobCreateBody), weight: 4 },
  { name: 'GET /jobs', method: 'GET', path: gen.listQuery.map((q) => `/jobs?${q}`), body: noBody, weight: 3 },
  { name: 'GET /jobs/:id', method: 'GET', path: seg(gen.id).map((id) => `/jobs/${id}`), body: noBody },
  { name: 'POST /jobs/:id/retry', method: 'POST', path: seg(gen.id).map((id) => `/jobs/${id}/retry`), body: gen.bodyOf(gen.retryBody) },
  { name: 'GET /api-keys', method: 'GET', path: fc.constant('/api-keys'), body: noBody },
  { name: 'POST /api-keys', method: 'POST', path: fc.constant('/api-keys'), body: gen.bodyOf(gen.apiKeyCreateBody), weight: 2 },
  { name: 'DELETE /api-keys/:id', method: 'DELETE', path: seg(gen.id).map((id) => `/api-keys/${id}`), body: noBody },
  { name: 'POST /auth/login', method: 'POST', path: fc.constant('/auth/login'), body: gen.bodyOf(gen.loginBody), weight: 2 },
  { name: 'GET /jobs/stats', method: 'GET', path: fc.constant('/jobs/stats'), body: noBody },
  { name: 'GET /usage', method: 'GET', path: fc.constant('/usage'), body: noBody },
  { name: 'POST /webhooks', method: 'POST', path: fc.constant('/webhooks'), body: gen.bodyOf(gen.webhookCreateBody), weight: 2 },
  { name: 'GET /webhooks', method: 'GET', path: fc.constant('/webhooks'), body: noBody },
  { name: 'DELETE /webhooks/:id', method: 'DELETE', path: seg(gen.id).map((id) => `/webhooks/${id}`), body: noBody },
  { name: 'POST /webhooks/:id/rotate-secret', method: 'POST', path: seg(gen.id).map((id) => `/webhooks/${id}/rotate-secret`), body: gen.bodyOf(gen.anyJson) },
  { name: 'GET /webhooks/:id/deliveries', method: 'GET', path: fc.tuple(seg(gen.id), gen.listQuery).map(([id, q]) => `/webhooks/${id}/deliveries?${q}`), body: noBody },
  // Download tokens: garbage, and well-signed tokens for ids that do not exist or have expired
  // (the suite signs those with the real secret: see `signedDownload` in the test).
  { name: 'GET /download/:token', method: 'GET', path: seg(fc.oneof(gen.nastyString, fc.base64String(), fc.string({ maxLength: 300 }))).map((t) => `/download/${t}`), body: noBody },
  {
    name: 'GET /download/:token (signed)',
    method: 'GET',
    path: fc
      .record({ zipId: fc.oneof(fc.uuid(), fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/)), expiresAt: fc.integer({ min: 0, max: 8_640_000_000_000_000 }) })
      .map(({ zipId, expiresAt }) => (secrets: FuzzSecrets) => `/download/${signDownloadToken({ zipId, expiresAt: new Date(expiresAt) }, secrets.downloadTokenSecret)}`),
    body: noBody,
  },
  {
    name: 'any method, any path',
    method: '*',
    path: fc.oneof(
      fc.constantFrom('/', '/jobs', '/jobs/', '/JOBS', '/api-keys/', '/auth/login', '/healthz', '/readyz', '/metrics', '/openapi.json', '/docs', '/docs/x', '/dashboard', '/dashboard/jobs', '/usage', '/webhooks', '/jobs/stats', '/download', '/download/', '//jobs', '/jobs/%2e%2e/api-keys', '/%00', '/jobs/x/retry/y', '/jobs/%ED%A0%80', '/download/%FF%FE', '/api-keys/%'),
      fc.webPath(),
      seg(gen.nastyString).map((s) => `/${s}`),
    ),
    body: gen.bodyOf(gen.anyJson),
    weight: 3,
  },
];

/** Methods tried on "any method, any path". */
export const ANY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
