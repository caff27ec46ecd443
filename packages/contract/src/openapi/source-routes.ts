// The routes of docs/private-sources.md#the-rules, spread into API_ROUTES.
import { z } from 'zod';
import { sourceCreateSchema } from '../private-sources';
import { idempotentCreate, type RouteDoc } from './route-doc';

const sourceSchema = z
  .strictObject({
    id: z.uuid(),
    name: z.string(),
    type: z.literal('s3'),
    region: z.string(),
    endpoint: z.string().nullable().describe('null: AWS S3 of `region`'),
    force_path_style: z.boolean(),
    access_key_id: z.string(),
    created_at: z.string(),
  })
  .describe('a source; its secret access key is never returned')
  .meta({ id: 'Source' });

export const sourceResponseSchema = z.object({ success: z.literal(true), source: sourceSchema });
export const sourceListResponseSchema = z.object({ success: z.literal(true), sources: z.array(sourceSchema) });
const deletedSchema = z.object({ success: z.literal(true), message: z.string() });

export const SOURCE_ROUTES: readonly RouteDoc[] = [
  idempotentCreate({
    method: 'post', path: '/sources', operationId: 'createSource', summary: 'Store an S3 bucket\'s credentials (the secret is never shown again)', tag: 'Sources', auth: 'key', parsesJson: true,
    body: { schema: sourceCreateSchema, required: true },
    responses: { 201: { description: 'the source, without its secret', schema: sourceResponseSchema } },
    errors: { 403: ['PLAN_LIMIT_EXCEEDED'] },
  }),
  {
    method: 'get', path: '/sources', operationId: 'listSources', summary: 'List sources (without secrets)', tag: 'Sources', auth: 'key', parsesJson: true,
    responses: { 200: { description: 'the user\'s sources', schema: sourceListResponseSchema } },
  },
  {
    method: 'delete', path: '/sources/:id', operationId: 'deleteSource', summary: 'Delete a source; later reads of its objects fail with "source deleted"', tag: 'Sources', auth: 'key', parsesJson: true,
    params: { id: { description: 'source id (UUID)', schema: z.string() } },
    responses: { 200: { description: 'deleted', schema: deletedSchema } },
    errors: { 404: ['NOT_FOUND'] },
  },
];
