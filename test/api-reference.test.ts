// docs/api.md, the API reference in the repository, held to the OpenAPI document the API serves:
// a route, request field, parameter, response field or error code added to the contract and not
// to the page (or a section left for a route that is gone) fails here.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { anchorOf } from './markdown-anchors';
import { buildOpenApiDocument, ERROR_CODES } from '@ap/contract';

type Schema = { $ref?: string; type?: string | string[]; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[] };
type Operation = { parameters?: { in: string; name: string }[]; requestBody?: { content: Record<string, { schema: Schema }> } };

const page = readFileSync(path.resolve(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8');
const document = buildOpenApiDocument({ serverUrl: 'http://127.0.0.1' }) as unknown as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};


/** The page's sections by anchor: each heading's text up to the next heading of any level. */
const sections = new Map<string, { heading: string; text: string }>();
{
  let current: { heading: string; text: string } | null = null;
  for (const line of page.split('\n')) {
    const heading = /^#{1,4} (.*)$/.exec(line);
    if (heading) {
      current = { heading: heading[1]!, text: '' };
      sections.set(anchorOf(heading[1]!), current);
    } else if (current) current.text += `${line}\n`;
  }
}

/** A section's text with that of every section of this page it links to, followed to the end. */
function reachableText(anchor: string, seen = new Set<string>()): string {
  if (seen.has(anchor)) return '';
  seen.add(anchor);
  const text = sections.get(anchor)?.text ?? '';
  const links = [...text.matchAll(/\]\(#([\w-]+)\)/g)].map((m) => m[1]!);
  return text + links.map((link) => reachableText(link, seen)).join('');
}

const resolve = (schema: Schema): Schema => (schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()!]! : schema);

/** Property paths of an object schema: `files`, `files[].url`, `destination.bucket`, ... */
function fieldNames(schema: Schema, prefix = ''): string[] {
  const object = resolve(schema);
  const names: string[] = [];
  for (const [name, raw] of Object.entries(object.properties ?? {})) {
    names.push(prefix + name);
    for (const inner of [raw, ...(raw.anyOf ?? []), ...(raw.oneOf ?? [])].map(resolve)) {
      if (inner.properties) names.push(...fieldNames(inner, `${prefix}${name}.`));
      if (inner.items && resolve(inner.items).properties) names.push(...fieldNames(inner.items, `${prefix}${name}[].`));
    }
  }
  return [...new Set(names)];
}

const operations = Object.entries(document.paths).flatMap(([route, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ title: `${method.toUpperCase()} ${route.replace(/\{(\w+)\}/g, ':$1')}`, operation })),
);

describe('docs/api.md, the API reference', () => {
  it('has a section for every route of the OpenAPI document, and none for a route it lacks', () => {
    const endpoints = [...sections.values()].filter((s) => /^(GET|POST|PUT|PATCH|DELETE) \//.test(s.heading)).map((s) => s.heading);
    expect(endpoints.sort()).toEqual(operations.map((o) => o.title).sort());
  });

  it("names every request field, parameter and header in its route's section (or a section it links to)", () => {
    const missing: string[] = [];
    for (const { title, operation } of operations) {
      const text = reachableText(anchorOf(title));
      const body = operation.requestBody?.content['application/json']?.schema;
      const names = [...(body ? fieldNames(body) : []), ...(operation.parameters ?? []).filter((p) => p.in !== 'path').map((p) => p.name)];
      // A nested field is named by its own last part (`url` of `files[].url`).
      for (const name of names) if (!text.includes(`\`${name.split(/[.[\]]+/).filter(Boolean).pop()}\``)) missing.push(`${title}: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('names every field of the resources the API answers with', () => {
    const resources = page.slice(page.indexOf('\n## Resources'), page.indexOf('\n## States and transitions'));
    const missing = ['Job', 'JobListItem', 'Zip', 'ApiKey', 'CreatedApiKey', 'Source', 'FileEntry', 'ErrorEntry', 'PaginationMeta']
      .flatMap((name) => Object.keys(document.components.schemas[name]?.properties ?? {}).map((field) => ({ name, field })))
      .filter(({ field }) => !resources.includes(`\`${field}\``) && !resources.includes(`"${field}"`));
    expect(missing).toEqual([]);
  });

  it('lists every error code with its status', () => {
    const errors = sections.get('errors')!.text;
    const missing = Object.entries(ERROR_CODES).filter(([code, status]) => !new RegExp(`^\\| \`${code}\` \\| ${status} \\|`, 'm').test(errors));
    expect(missing).toEqual([]);
  });
});
