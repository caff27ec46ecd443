// The contract check every API test goes through: each response a test receives from the API
// (through `call` and `download` in helpers.ts) must have a status the OpenAPI document lists
// for that route, and a body that matches the schema the document was generated from.
import { API_ROUTES, buildOpenApiDocument, errorResponseSchema, errorsOf, openApiPath, type RouteDoc } from '@ap/contract';

interface Matcher {
  route: RouteDoc;
  pattern: RegExp;
}

const paramCount = (path: string) => (path.match(/:/g) ?? []).length;

// Literal paths before parameterised ones, as Express needs them registered (`/jobs/stats`
// before `/jobs/:id`).
const matchers: Matcher[] = [...API_ROUTES]
  .sort((a, b) => paramCount(a.path) - paramCount(b.path))
  .map((route) => ({
    route,
    pattern: new RegExp(`^${route.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_][A-Za-z0-9_]*/g, '[^/]+')}/?$`),
  }));

let documentPaths: Record<string, Record<string, { responses: Record<string, unknown> }>> | null = null;
const paths = () => (documentPaths ??= buildOpenApiDocument().paths as NonNullable<typeof documentPaths>);

/** Every (method path status) seen in this test file, e.g. `get /jobs/{id} 404`. */
export const seenResponses = new Set<string>();

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

/** The documented route a request goes to (HEAD is answered by the GET route), or null. */
export function routeOf(method: string, pathname: string): RouteDoc | null {
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  return matchers.find((x) => x.route.method === m && x.pattern.test(pathname))?.route ?? null;
}

/**
 * Throws a ContractViolation when the response is not what the document says. `body` is the
 * parsed JSON body, or undefined when it was not read (binary bodies).
 */
export function checkResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
  const pathname = new URL(url).pathname;
  const route = routeOf(method, pathname);
  const where = `${method.toUpperCase()} ${pathname} -> ${status}`;
  if (!route) {
    // A documented path asked with a method it does not take: 204 with Allow for OPTIONS, else
    // 405 METHOD_NOT_ALLOWED in the envelope (docs/service.md#hardening).
    if (matchers.some((x) => x.pattern.test(pathname))) {
      if (method.toUpperCase() === 'OPTIONS' && status === 204) return;
      const parsed = errorResponseSchema(['METHOD_NOT_ALLOWED']).safeParse(body);
      if (status !== 405 || !parsed.success) throw new ContractViolation(`${where}: a documented path with an undocumented method, and not a 405 METHOD_NOT_ALLOWED envelope: ${JSON.stringify(body)?.slice(0, 300)}`);
      return;
    }
    // No route: the catch-all answers 404 NOT_FOUND in the envelope (docs/product-rules.md#not-in-the-contract-decided-here).
    const parsed = errorResponseSchema(['NOT_FOUND']).safeParse(body);
    if (status !== 404 || !parsed.success) throw new ContractViolation(`${where}: no documented route, and not a 404 NOT_FOUND envelope: ${JSON.stringify(body)?.slice(0, 300)}`);
    return;
  }
  const docPath = openApiPath(route.path);
  const operation = paths()[docPath]?.[route.method];
  if (!operation) throw new ContractViolation(`${where}: ${route.method} ${docPath} is missing from the document`);
  if (!Object.hasOwn(operation.responses, String(status))) {
    throw new ContractViolation(`${where}: status ${status} is not documented for ${route.method.toUpperCase()} ${docPath} (documented: ${Object.keys(operation.responses).join(', ')}); body ${JSON.stringify(body)?.slice(0, 300)}`);
  }
  seenResponses.add(`${route.method} ${docPath} ${status}`);
  const isHead = method.toLowerCase() === 'head';
  const codes = errorsOf(route).get(status);
  const schema = codes ? errorResponseSchema(codes) : route.responses[status]?.schema;
  if (!schema || isHead || status === 304) {
    const raw = route.responses[status]?.raw;
    if (raw && contentType && !isHead && ![raw.mediaType, ...(raw.alsoMediaTypes ?? [])].some((type) => contentType.startsWith(type)) && raw.mediaType !== 'application/octet-stream') {
      throw new ContractViolation(`${where}: content type ${contentType}, documented ${raw.mediaType}`);
    }
    return;
  }
  if (!contentType?.startsWith('application/json')) throw new ContractViolation(`${where}: content type ${contentType}, documented application/json`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new ContractViolation(`${where}: body does not match the documented schema: ${parsed.error.message.slice(0, 1500)}\nbody: ${JSON.stringify(body).slice(0, 1000)}`);
  }
}
