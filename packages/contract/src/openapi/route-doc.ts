// How a route is documented (RouteDoc), and what every route's documentation derives from it:
// an Idempotency-Key create route's header and codes, the OpenAPI path, the error codes per
// status with the common ones. The routes themselves: routes.ts and source-routes.ts.
import type { z } from 'zod';
import type { ErrorCode } from '../errors';

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
  /** A body that is not JSON: its media type (and others it may have instead, e.g. per archive format). */
  raw?: { mediaType: string; alsoMediaTypes?: string[]; format?: 'binary' };
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
 * A create route that takes an `Idempotency-Key` (docs/fair-share.md#idempotent-requests): the
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
