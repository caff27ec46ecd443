// The OpenAPI 3.1 document of API_ROUTES, generated with zod 4's own JSON Schema output
// (draft 2020-12, which OpenAPI 3.1 uses as is). Request schemas are described as they are
// accepted (`io: 'input'`: defaults optional), response schemas as they are sent.

import { z } from 'zod';
import { errorResponseSchema } from '../responses';
import { errorsOf, openApiPath, type RouteDoc } from './route-doc';
import { API_ROUTES } from './routes';

type JsonSchema = Record<string, unknown>;

const COMPONENT_REF = '#/components/schemas/';

export interface OpenApiDocumentOptions {
  /** `servers[0].url`; omitted when not given. */
  serverUrl?: string;
  version?: string;
  routes?: readonly RouteDoc[];
}

/** Rewrites `#/$defs/X` into component refs, collecting the definitions. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(node)) {
        if (k === '$schema' || k === '$defs') continue;
        if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) out[k] = COMPONENT_REF + v.slice('#/$defs/'.length);
        else out[k] = rewrite(v);
      }
      return out;
    }
    return node;
  };
  for (const [name, def] of Object.entries(defs)) components[name] = rewrite(def) as JsonSchema;
  return rewrite(schema) as JsonSchema;
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output', components: Record<string, JsonSchema>): JsonSchema {
  const generated = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    reused: 'inline',
    // `.meta({ jsonSchema })` replaces what zod would generate (for inputs parsed by hand).
    override: (ctx) => {
      const node = ctx.jsonSchema as JsonSchema;
      const replacement = node.jsonSchema as JsonSchema | undefined;
      if (!replacement) return;
      const keep = node.default;
      for (const key of Object.keys(node)) delete node[key];
      Object.assign(node, replacement, keep === undefined ? {} : { default: keep });
    },
  }) as JsonSchema;
  // A schema that has an id itself comes back as a $ref to its own $defs entry.
  return hoist(generated, components);
}

const errorDescription = (status: number) =>
  ({
    400: 'invalid request (the message names each field and its problem)',
    401: 'missing, invalid, revoked or expired API key or session token',
    403: 'refused',
    404: 'not found (or another user\'s)',
    413: 'request body larger than 10 MB',
    415: 'unsupported request body encoding',
    416: 'range not satisfiable (`Content-Range: bytes */size`)',
    429: 'rate limited (`Retry-After` says when to retry)',
    500: 'internal error',
    502: 'a source file could not be fetched while streaming',
  })[status] ?? 'error';

function operationOf(route: RouteDoc, components: Record<string, JsonSchema>): JsonSchema {
  const parameters: JsonSchema[] = [];
  for (const [name, p] of Object.entries(route.params ?? {})) {
    parameters.push({ name, in: 'path', required: true, description: p.description, schema: p.schema ? jsonSchemaOf(p.schema, 'input', components) : { type: 'string' } });
  }
  if (route.query) {
    const query = jsonSchemaOf(route.query, 'input', components);
    const props = (query.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((query.required ?? []) as string[]);
    for (const [name, schema] of Object.entries(props)) parameters.push({ name, in: 'query', required: required.has(name), schema });
  }
  for (const [name, h] of Object.entries(route.headers ?? {})) parameters.push({ name, in: 'header', required: false, description: h.description, schema: { type: 'string' } });

  const responses: Record<string, JsonSchema> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const response: JsonSchema = { description: r.description };
    if (r.schema) response.content = { 'application/json': { schema: jsonSchemaOf(r.schema, 'output', components) } };
    else if (r.raw) {
      const raw = r.raw;
      response.content = Object.fromEntries([raw.mediaType, ...(raw.alsoMediaTypes ?? [])].map((type) => [type, { schema: raw.format ? { type: 'string', format: raw.format } : {} }]));
    }
    if (r.headers) response.headers = Object.fromEntries(Object.entries(r.headers).map(([n, h]) => [n, { description: h.description, schema: h.schema ?? { type: 'string' } }]));
    responses[status] = response;
  }
  for (const [status, codes] of errorsOf(route)) {
    const schema = jsonSchemaOf(errorResponseSchema(codes), 'output', components);
    const response: JsonSchema = {
      description: `${errorDescription(status)}: ${codes.join(', ')}`,
      content: { 'application/json': { schema } },
    };
    if (status === 429) response.headers = { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } };
    if (status === 416) response.headers = { 'Content-Range': { description: '`bytes */size`', schema: { type: 'string' } } };
    responses[String(status)] = response;
  }

  const operation: JsonSchema = {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security: route.auth === 'key' ? [{ ApiKeyAuth: [] }, { SessionBearer: [] }] : [],
    ...(parameters.length ? { parameters } : {}),
    responses,
  };
  if (route.body) {
    operation.requestBody = { required: route.body.required, content: { 'application/json': { schema: jsonSchemaOf(route.body.schema, 'input', components) } } };
  }
  return operation;
}

/** The reference page's order: what a user comes for first (a tag not listed goes last). */
export const TAG_ORDER = ['Jobs', 'Download', 'Webhooks', 'Sources', 'API keys', 'Usage', 'Authentication', 'Reference', 'Operations'];

/** The OpenAPI 3.1 document of the API. */
export function buildOpenApiDocument(options: OpenApiDocumentOptions = {}): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const rank = (tag: string) => (TAG_ORDER.includes(tag) ? TAG_ORDER.indexOf(tag) : TAG_ORDER.length);
  const routes = [...(options.routes ?? API_ROUTES)].sort((a, b) => rank(a.tag) - rank(b.tag));
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] ??= {};
    if (paths[path][route.method]) throw new Error(`route ${route.method.toUpperCase()} ${route.path} is described twice`);
    paths[path][route.method] = operationOf(route, components);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Archive Packaging Service',
      version: options.version ?? '1.0.0',
      description:
        'Send remote file URLs, get back ZIP archives through signed links. Every non-download response carries a boolean `success`; ' +
        'errors are `{success: false, error: {code, message}}`.',
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'an API key (`azk_...`)' },
        SessionBearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'a dashboard session token from POST /auth/login' },
      },
    },
  };
}
