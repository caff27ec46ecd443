// Every route the API answers, as data: what it takes, what it answers (status -> body schema)
// and which error codes travel with which status. GET /openapi.json is generated from this
// list, and the contract test checks that it names exactly the routes Express has.
//
// Adding a route: one `defineRoute({...})` entry in API_ROUTES below (or in another module's
// list spread into it). Errors every route shares (500, and for authenticated routes 401 and
// 429, for routes behind the JSON body parser 400/413/415) are added by `errorsOf` (route-doc.ts).

import { z } from 'zod';
import { defineRoute, idempotentCreate, type HeaderDoc, type RouteDoc } from './route-doc';
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
      200: { description: 'the whole archive (application/zip, application/x-tar or application/gzip by the job\'s format)', raw: { mediaType: 'application/zip', alsoMediaTypes: ['application/x-tar', 'application/gzip'], format: 'binary' }, headers: ZIP_HEADERS },
      206: {
        description: 'the requested byte range of the archive',
        raw: { mediaType: 'application/zip', alsoMediaTypes: ['application/x-tar', 'application/gzip'], format: 'binary' },
        headers: { ...ZIP_HEADERS, 'Content-Range': { description: '`bytes start-end/size`' } },
      },
      304: { description: 'not modified (If-None-Match matched)' },
    },
    errors: {
      403: ['INVALID_TOKEN', 'EXPIRED_TOKEN', 'QUOTA_EXCEEDED'],
      // The ZIP's job was deleted.
      404: ['NOT_FOUND'],
      416: ['INVALID_REQUEST'],
      // A stream ZIP while the account already has STREAM_DOWNLOADS_PER_USER downloads running.
      429: ['RATE_LIMITED'],
      // A source URL of a stream ZIP failed before the first byte (docs/engine.md#stream-mode).
      502: ['SOURCE_UNAVAILABLE'],
    },
  }),
  defineRoute({
    method: 'post', path: '/auth/login', operationId: 'login', summary: 'Log in (dashboard session)', tag: 'Authentication', auth: 'none', parsesJson: true,
    body: { schema: loginSchema, required: true },
    responses: { 200: { description: 'a session JWT for `Authorization: Bearer`', schema: loginResponseSchema } },
    // Throttled per email and per client address (docs/service.md#hardening), with Retry-After.
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
