// Every route the API answers, as data: what it takes, what it answers (status -> body schema)
// and which error codes travel with which status. GET /openapi.json is generated from this
// list, and the contract test checks that it names exactly the routes Express has.
//
// Adding a route: one `defineRoute({...})` entry in API_ROUTES below (or in another module's
// list spread into it). Errors every route shares (500, and for authenticated routes 401 and
// 429, for routes behind the JSON body parser 400/413/415) are added by `commonErrors`.

import { z } from 'zod';
import type { ErrorCode } from '../errors';
import { SOURCE_ROUTES } from './source-routes';
import {
  apiKeyCreateSchema,
  jobCreateSchema,
  listJobsQuerySchema,
  loginSchema,
  retrySchema,
} from '../schemas';
import {
  createApiKeyResponseSchema,
  getJobResponseSchema,
  healthResponseSchema,
  jobIdResponseSchema,
  listApiKeysResponseSchema,
  listJobsResponseSchema,
  loginResponseSchema,
  messageResponseSchema,
  readinessResponseSchema,
} from '../responses';
import {
  jobStatsResponseSchema,
  listDeliveriesQuerySchema,
  usageResponseSchema,
  webhookCreateSchema,
  webhookDeleteResponseSchema,
  webhookDeliveriesResponseSchema,
  webhookListResponseSchema,
  webhookSecretResponseSchema,
} from '../webhooks';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A response header, as documented. */
export interface HeaderDoc {
  description: string;
  schema?: { type: 'string' | 'integer' };
}

/** One documented answer of a route. */
export interface ResponseDoc {
  description: string;
  /** JSON body schema (zod). */
  schema?: z.ZodType;
  /** A non-JSON body: its media type and a JSON schema of it (e.g. binary). */
  raw?: { mediaType: string; format?: 'binary' };
  headers?: Record<string, HeaderDoc>;
}

export interface RouteDoc {
  method: HttpMethod;
  /** Express form: `/jobs/:id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** `key`: X-API-Key or the session bearer; `none`: public (download, login, health, docs). */
  auth: 'key' | 'none';
  /** Whether the JSON body parser runs for it (it answers 400/413/415 on a bad body). */
  parsesJson: boolean;
  /** Path parameters, by name. */
  params?: Record<string, { description: string; schema?: z.ZodType }>;
  /** Query parameters: an object schema whose fields are the parameters. */
  query?: z.ZodObject;
  /** Request headers the route reads (besides authentication). */
  headers?: Record<string, { description: string }>;
  body?: { schema: z.ZodType; required: boolean };
  responses: Record<number, ResponseDoc>;
  /** Error codes per HTTP status, besides the common ones. */
  errors?: Partial<Record<number, readonly ErrorCode[]>>;
}

export function defineRoute(route: RouteDoc): RouteDoc {
  return route;
}

/**
 * A create route that takes an `Idempotency-Key` (decisions.md "Idempotent requests"): the
 * header, the replay marker on its success answers, and the two codes of a reused key.
 */
export function idempotentCreate(route: RouteDoc): RouteDoc {
  const replayed: Record<string, HeaderDoc> = {
    'Idempotent-Replayed': { description: '`true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again)' },
  };
  const responses = Object.fromEntries(
    Object.entries(route.responses).map(([status, r]) => [status, Number(status) < 300 ? { ...r, headers: { ...r.headers, ...replayed } } : r]),
  );
  return {
    ...route,
    headers: {
      ...route.headers,
      'Idempotency-Key': {
        description: '1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept.',
      },
    },
    responses,
    errors: { ...route.errors, 409: ['IDEMPOTENCY_KEY_IN_USE'], 422: ['IDEMPOTENCY_KEY_REUSED'] },
  };
}

/** Express `/jobs/:id` -> OpenAPI `/jobs/{id}`. */
export const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

/** The error codes a route can answer with, per status, common ones included. */
export function errorsOf(route: RouteDoc): Map<number, ErrorCode[]> {
  const out = new Map<number, ErrorCode[]>();
  const add = (status: number, codes: readonly ErrorCode[]) => out.set(status, [...new Set([...(out.get(status) ?? []), ...codes])]);
  for (const [status, codes] of Object.entries(route.errors ?? {})) add(Number(status), codes ?? []);
  if (route.parsesJson) {
    add(400, ['INVALID_REQUEST']); // malformed JSON
    add(413, ['INVALID_REQUEST']); // body over 10 MB
    add(415, ['INVALID_REQUEST']); // unsupported body encoding
  }
  if (route.auth === 'key') {
    add(401, ['UNAUTHORIZED']);
    add(429, ['RATE_LIMITED']);
  }
  // Request line and headers over 16 KB: refused by the HTTP parser, in the envelope.
  add(431, ['INVALID_REQUEST']);
  add(500, ['INTERNAL_ERROR']);
  return new Map([...out].sort(([a], [b]) => a - b));
}

const uuidParam = (what: string) => ({ description: `${what} id (UUID)`, schema: z.string() });

const ZIP_HEADERS: Record<string, HeaderDoc> = {
  'Content-Length': { description: 'bytes in this response body', schema: { type: 'integer' } },
  'Content-Disposition': { description: 'attachment; the ZIP\'s filename (ASCII fallback and UTF-8 `filename*`)' },
  ETag: { description: 'strong validator of the ZIP\'s bytes; send it back in `If-Range` to resume' },
  'Last-Modified': { description: 'when the ZIP was completed' },
  'Accept-Ranges': { description: '`bytes`' },
};

export const API_ROUTES: readonly RouteDoc[] = [
  defineRoute({
    method: 'get', path: '/healthz', operationId: 'health', summary: 'Liveness', tag: 'Operations', auth: 'none', parsesJson: false,
    responses: { 200: { description: 'the API process is alive', schema: healthResponseSchema } },
  }),
  defineRoute({
    method: 'get', path: '/readyz', operationId: 'readiness', summary: 'Readiness (Postgres, Redis, S3 reachable)', tag: 'Operations', auth: 'none', parsesJson: false,
    responses: {
      200: { description: 'every dependency answers', schema: readinessResponseSchema },
      503: { description: 'a dependency does not answer (named in `failing`)', schema: readinessResponseSchema },
    },
  }),
  defineRoute({
    method: 'get', path: '/openapi.json', operationId: 'openApiDocument', summary: 'This OpenAPI 3.1 document', tag: 'Reference', auth: 'none', parsesJson: false,
    responses: { 200: { description: 'the OpenAPI document', raw: { mediaType: 'application/json' } } },
  }),
  defineRoute({
    method: 'get', path: '/docs', operationId: 'referencePage', summary: 'The reference page of this document (HTML)', tag: 'Reference', auth: 'none', parsesJson: false,
    responses: { 200: { description: 'an HTML page rendering /openapi.json', raw: { mediaType: 'text/html' } } },
  }),
  defineRoute({
    method: 'get', path: '/docs/:asset', operationId: 'referencePageAsset', summary: 'A script or style sheet of the reference page', tag: 'Reference', auth: 'none', parsesJson: false,
    params: { asset: { description: 'file name of the asset' } },
    responses: { 200: { description: 'the asset', raw: { mediaType: 'application/octet-stream', format: 'binary' } } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute({
    method: 'get', path: '/download/:token', operationId: 'downloadZip', tag: 'Download', auth: 'none', parsesJson: false,
    summary: 'Download a ZIP (signed link; Range and If-Range supported)',
    description:
      'Needs no API key: the signed token in `download_url` authorises it. A single byte range (`Range: bytes=start-end`, ' +
      '`bytes=start-`, `bytes=-suffix`) is answered with 206 and `Content-Range`; with `If-Range` (the ETag, or the ' +
      'Last-Modified date) the range applies only while the ZIP is unchanged, otherwise the whole ZIP comes with 200. ' +
      'Multiple ranges and malformed ones are answered with the whole ZIP; a range starting past the end with 416. ' +
      'HEAD answers the same headers without a body.',
    params: { token: { description: 'signed download token (from `download_url`)' } },
    headers: {
      Range: { description: 'one byte range, e.g. `bytes=1048576-`' },
      'If-Range': { description: 'the ETag (or Last-Modified date) of the bytes already held' },
      'If-None-Match': { description: 'an ETag; 304 when it matches and no range is asked for' },
    },
    responses: {
      200: { description: 'the whole ZIP', raw: { mediaType: 'application/zip', format: 'binary' }, headers: ZIP_HEADERS },
      206: {
        description: 'the requested byte range of the ZIP',
        raw: { mediaType: 'application/zip', format: 'binary' },
        headers: { ...ZIP_HEADERS, 'Content-Range': { description: '`bytes start-end/size`' } },
      },
      304: { description: 'not modified (If-None-Match matched)' },
    },
    errors: {
      403: ['INVALID_TOKEN', 'EXPIRED_TOKEN', 'QUOTA_EXCEEDED'],
      416: ['INVALID_REQUEST'],
      // A stream ZIP while the account already has STREAM_DOWNLOADS_PER_USER downloads running.
      429: ['RATE_LIMITED'],
      502: ['INTERNAL_ERROR'],
    },
  }),
  defineRoute({
    method: 'post', path: '/auth/login', operationId: 'login', summary: 'Log in (dashboard session)', tag: 'Authentication', auth: 'none', parsesJson: true,
    body: { schema: loginSchema, required: true },
    responses: { 200: { description: 'a session JWT for `Authorization: Bearer`', schema: loginResponseSchema } },
    // Throttled per email and per client address (docs/decisions.md "Hardening"), with Retry-After.
    errors: { 401: ['UNAUTHORIZED'], 429: ['RATE_LIMITED'] },
  }),
  defineRoute({
    method: 'get', path: '/api-keys', operationId: 'listApiKeys', summary: 'List API keys (without the secret)', tag: 'API keys', auth: 'key', parsesJson: true,
    responses: { 200: { description: 'the user\'s keys, oldest first', schema: listApiKeysResponseSchema } },
  }),
  defineRoute(idempotentCreate({
    method: 'post', path: '/api-keys', operationId: 'createApiKey', summary: 'Create an API key (the secret is shown once)', tag: 'API keys', auth: 'key', parsesJson: true,
    body: { schema: apiKeyCreateSchema(new Date(0)), required: false },
    responses: { 201: { description: 'the key, with `key` (shown only here)', schema: createApiKeyResponseSchema } },
    errors: { 403: ['PLAN_LIMIT_EXCEEDED'] },
  })),
  defineRoute({
    method: 'delete', path: '/api-keys/:id', operationId: 'revokeApiKey', summary: 'Revoke an API key', tag: 'API keys', auth: 'key', parsesJson: true,
    params: { id: uuidParam('API key') },
    responses: { 200: { description: 'revoked', schema: messageResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute(idempotentCreate({
    method: 'post', path: '/jobs', operationId: 'createJob', summary: 'Create a job', tag: 'Jobs', auth: 'key', parsesJson: true,
    body: { schema: jobCreateSchema, required: true },
    responses: { 201: { description: 'created; poll GET /jobs/{id}', schema: jobIdResponseSchema } },
    errors: { 403: ['PLAN_LIMIT_EXCEEDED', 'QUOTA_EXCEEDED'] },
  })),
  defineRoute({
    method: 'get', path: '/jobs', operationId: 'listJobs', summary: 'List jobs, newest first (cursor pagination)', tag: 'Jobs', auth: 'key', parsesJson: true,
    query: listJobsQuerySchema,
    responses: { 200: { description: 'a page of jobs', schema: listJobsResponseSchema } },
  }),
  defineRoute({
    method: 'get', path: '/jobs/:id', operationId: 'getJob', summary: 'Read a job', tag: 'Jobs', auth: 'key', parsesJson: true,
    params: { id: uuidParam('job') },
    responses: { 200: { description: 'the job, with its ZIPs', schema: getJobResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute({
    method: 'delete', path: '/jobs/:id', operationId: 'deleteJob', summary: 'Delete a job: its ZIPs, and every download link of it at once', tag: 'Jobs', auth: 'key', parsesJson: true,
    params: { id: uuidParam('job') },
    responses: { 200: { description: 'deleted; the job and its download links answer 404 from now on', schema: messageResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute(idempotentCreate({
    method: 'post', path: '/jobs/:id/retry', operationId: 'retryJob', summary: 'Retry a failed job', tag: 'Jobs', auth: 'key', parsesJson: true,
    params: { id: uuidParam('job') },
    body: { schema: retrySchema, required: false },
    responses: { 200: { description: 'queued again', schema: jobIdResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  })),
  defineRoute({
    method: 'get', path: '/jobs/stats', operationId: 'jobStats', summary: 'Count the user\'s jobs by status', tag: 'Jobs', auth: 'key', parsesJson: true,
    responses: { 200: { description: 'jobs by status', schema: jobStatsResponseSchema } },
  }),
  defineRoute({
    method: 'get', path: '/usage', operationId: 'getUsage', summary: 'This month\'s usage against the plan', tag: 'Usage', auth: 'key', parsesJson: true,
    responses: { 200: { description: 'usage for the current UTC month (1 GB = 10^9 bytes)', schema: usageResponseSchema } },
  }),
  defineRoute(idempotentCreate({
    method: 'post', path: '/webhooks', operationId: 'createWebhook', summary: 'Create a webhook (the secret is shown once)', tag: 'Webhooks', auth: 'key', parsesJson: true,
    body: { schema: webhookCreateSchema, required: true },
    responses: { 201: { description: 'the webhook, with `secret` (shown only here and on rotation)', schema: webhookSecretResponseSchema } },
    errors: { 403: ['PLAN_LIMIT_EXCEEDED'] },
  })),
  defineRoute({
    method: 'get', path: '/webhooks', operationId: 'listWebhooks', summary: 'List webhooks (without secrets)', tag: 'Webhooks', auth: 'key', parsesJson: true,
    responses: { 200: { description: 'the user\'s webhooks', schema: webhookListResponseSchema } },
  }),
  defineRoute({
    method: 'delete', path: '/webhooks/:id', operationId: 'deleteWebhook', summary: 'Delete a webhook', tag: 'Webhooks', auth: 'key', parsesJson: true,
    params: { id: uuidParam('webhook') },
    responses: { 200: { description: 'deleted; nothing more is sent to it', schema: webhookDeleteResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute({
    method: 'post', path: '/webhooks/:id/rotate-secret', operationId: 'rotateWebhookSecret', summary: 'Rotate a webhook\'s secret (both sign for 24 h)', tag: 'Webhooks', auth: 'key', parsesJson: true,
    params: { id: uuidParam('webhook') },
    responses: { 200: { description: 'the webhook with its new `secret` (shown only here)', schema: webhookSecretResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  defineRoute({
    method: 'get', path: '/webhooks/:id/deliveries', operationId: 'listWebhookDeliveries', summary: 'A webhook\'s deliveries, newest first', tag: 'Webhooks', auth: 'key', parsesJson: true,
    params: { id: uuidParam('webhook') },
    query: listDeliveriesQuerySchema,
    responses: { 200: { description: 'a page of deliveries', schema: webhookDeliveriesResponseSchema } },
    errors: { 404: ['NOT_FOUND'] },
  }),
  ...SOURCE_ROUTES,
];
