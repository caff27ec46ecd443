// docs/private-sources.md#the-rules: POST/GET/DELETE /sources, and the s3:// file entries of a new
// job resolved to the user's sources. The secret access key is sealed at once and never returned.
import { Router, type RequestHandler } from 'express';
import { ApiError, MAX_SOURCES_PER_USER, sourceCreateSchema, type SourceView } from '@ap/contract';
import { randomUUID } from 'node:crypto';
import { createSource, deleteSource, listSources, resolveSourceRefs, type Db, type SourceRow } from '@ap/db';
import { checkDestination, isOwnStoreEndpoint, SOURCE_NOT_ALLOWED, type OwnStore } from '@ap/fetch';
import { sourceSecretPlace } from '@ap/jobs';
import type { SecretBox } from '@ap/secrets';
import { authOf } from '../http/auth';
import { iso } from '../http/serialize';
import { parseOrThrow } from '../http/validate';

export interface SourcesDeps {
  db: Db;
  secrets: Pick<SecretBox, 'seal'>;
  /** ALLOW_PRIVATE_URLS: an endpoint follows the same address rules as fetched URLs. */
  allowPrivate: boolean;
  /** The service's own store (S3_ENDPOINT, S3_BUCKET): its endpoint is refused always. */
  ownStore?: OwnStore | undefined;
  /** The Idempotency-Key middleware of create routes. */
  idempotent: RequestHandler;
}

const sourceView = (s: SourceRow): SourceView => ({
  id: s.id,
  name: s.name,
  type: 's3',
  region: s.region,
  endpoint: s.endpoint,
  force_path_style: s.forcePathStyle,
  access_key_id: s.accessKeyId,
  created_at: iso(s.createdAt),
});

/**
 * A job's file entries with their source ids: an s3:// entry naming no source of the user's is
 * a 400 naming the field (the schema already refused s3:// without `source`).
 */
export async function filesWithSources<F extends { url: string; source?: string | undefined }>(db: Db, userId: string, files: readonly F[]): Promise<(Omit<F, 'source'> & { sourceId: string | null })[]> {
  const refs = files.flatMap((f) => (f.source === undefined ? [] : [f.source]));
  const known = await resolveSourceRefs(db, userId, refs);
  return files.map(({ source, ...rest }, i) => {
    if (source === undefined) return { ...rest, sourceId: null };
    const id = known.get(source);
    if (!id) throw new ApiError('INVALID_REQUEST', `files[${i}].source: no source named ${JSON.stringify(source)} (create one with POST /sources)`);
    return { ...rest, sourceId: id };
  });
}

/** A job's `destination` with its source's id: a source not of the user's is a 400 naming the field. */
export async function destinationWithSource(db: Db, userId: string, destination: { source: string; bucket: string; prefix?: string | undefined } | undefined) {
  if (!destination) return null;
  const id = (await resolveSourceRefs(db, userId, [destination.source])).get(destination.source);
  if (!id) throw new ApiError('INVALID_REQUEST', `destination.source: no source named ${JSON.stringify(destination.source)} (create one with POST /sources)`);
  return { sourceId: id, bucket: destination.bucket, prefix: destination.prefix ?? '' };
}

export function sourcesRouter(deps: SourcesDeps): Router {
  const { db } = deps;
  const router = Router();

  router.post('/', deps.idempotent, async (req, res) => {
    const { user } = authOf(req);
    const body = parseOrThrow(sourceCreateSchema, req.body ?? {});
    if (body.endpoint) {
      if (isOwnStoreEndpoint(body.endpoint, deps.ownStore)) throw new ApiError('INVALID_REQUEST', `endpoint: ${SOURCE_NOT_ALLOWED} (it is the service's own store, refused always)`);
      const verdict = await checkDestination(new URL(body.endpoint), { allowPrivate: deps.allowPrivate });
      if (!verdict.ok) throw new ApiError('INVALID_REQUEST', `endpoint: ${verdict.error}`);
    }
    const id = randomUUID();
    const created = await createSource(
      db,
      user.id,
      {
        id,
        name: body.name,
        type: body.type,
        region: body.region,
        endpoint: body.endpoint ?? null,
        forcePathStyle: body.force_path_style,
        accessKeyId: body.access_key_id,
        sealedSecretAccessKey: deps.secrets.seal(body.secret_access_key, sourceSecretPlace(id)),
      },
      MAX_SOURCES_PER_USER,
    );
    if (!created.ok && created.reason === 'limit') throw new ApiError('PLAN_LIMIT_EXCEEDED', `at most ${MAX_SOURCES_PER_USER} sources per user; delete one first`);
    if (!created.ok) throw new ApiError('INVALID_REQUEST', `name: you already have a source named ${JSON.stringify(body.name)}`);
    res.status(201).json({ success: true, source: sourceView(created.source) });
  });

  router.get('/', async (req, res) => {
    const sources = await listSources(db, authOf(req).user.id);
    res.json({ success: true, sources: sources.map(sourceView) });
  });

  router.delete('/:id', async (req, res) => {
    const deleted = await deleteSource(db, authOf(req).user.id, String(req.params.id));
    if (!deleted) throw new ApiError('NOT_FOUND', 'source not found');
    res.json({ success: true, message: 'source deleted' });
  });

  return router;
}
