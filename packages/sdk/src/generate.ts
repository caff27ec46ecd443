// Writes src/openapi.ts: the TypeScript types of the API's OpenAPI document (openapi-typescript).
// `pnpm --filter @ap/sdk generate` after a route or a schema changes; sdk.test.ts fails while
// the committed file differs from what the document generates.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { buildOpenApiDocument } from '@ap/contract';

export const GENERATED_TYPES_PATH = fileURLToPath(new URL('./openapi.ts', import.meta.url));

const HEADER = '// Generated from the API\'s OpenAPI document by src/generate.ts (openapi-typescript). Do not edit.\n/* eslint-disable */\n\n';

export async function generateTypes(): Promise<string> {
  const ast = await openapiTS(buildOpenApiDocument() as never, { exportType: false });
  return HEADER + astToString(ast);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(GENERATED_TYPES_PATH, await generateTypes());
  process.stdout.write(`wrote ${GENERATED_TYPES_PATH}\n`);
}
