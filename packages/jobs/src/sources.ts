// The sources table: the one owner of its rows (decisions.md "Private sources"). The secret
// access key is sealed under SECRETS_KEY at the place `sources.secret_access_key:<id>`; only
// the fetch path opens it, and no row type handed to a response carries it.
import { randomUUID } from 'node:crypto';
import { MAX_SOURCES_PER_USER, type SourceCreateRequest } from '@ap/contract';
import type { Db } from '@ap/db';
import type { S3Credentials } from '@ap/fetch';
import type { SecretBox } from '@ap/secrets';
import type { DbTx } from './files';

export interface SourceRow {
  id: string;
  name: string;
  type: string;
  region: string;
  endpoint: string | null;
  forcePathStyle: boolean;
  accessKeyId: string;
  createdAt: Date;
}

const select = { id: true, name: true, type: true, region: true, endpoint: true, forcePathStyle: true, accessKeyId: true, createdAt: true } as const;

export const sourceSecretPlace = (id: string) => `sources.secret_access_key:${id}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Creates a source unless the user has the most allowed or one of that name; the count and the
 * insert run under a lock on the user's row, so concurrent requests cannot pass the limit.
 */
export async function createSource(
  db: Db,
  secrets: Pick<SecretBox, 'seal'>,
  userId: string,
  input: SourceCreateRequest,
): Promise<{ ok: true; source: SourceRow } | { ok: false; reason: 'limit' | 'duplicate' }> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    if ((await tx.source.count({ where: { userId } })) >= MAX_SOURCES_PER_USER) return { ok: false as const, reason: 'limit' as const };
    if (await tx.source.findFirst({ where: { userId, name: input.name }, select: { id: true } })) return { ok: false as const, reason: 'duplicate' as const };
    const id = randomUUID();
    const source = await tx.source.create({
      data: {
        id,
        userId,
        name: input.name,
        type: input.type,
        region: input.region,
        endpoint: input.endpoint ?? null,
        forcePathStyle: input.force_path_style,
        accessKeyId: input.access_key_id,
        secretAccessKey: secrets.seal(input.secret_access_key, sourceSecretPlace(id)),
      },
      select,
    });
    return { ok: true as const, source };
  });
}

/** The user's sources, oldest first. */
export function listSources(db: DbTx, userId: string): Promise<SourceRow[]> {
  return db.source.findMany({ where: { userId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select });
}

/** False when the user has no such source. */
export async function deleteSource(db: DbTx, userId: string, id: string): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const { count } = await db.source.deleteMany({ where: { id, userId } });
  return count > 0;
}

/** The user's sources named (by name or id) in a job's files: name or id -> source id. */
export async function resolveSourceRefs(db: DbTx, userId: string, refs: readonly string[]): Promise<Map<string, string>> {
  const wanted = [...new Set(refs)];
  if (wanted.length === 0) return new Map();
  const rows = await db.source.findMany({
    where: { userId, OR: [{ name: { in: wanted } }, { id: { in: wanted.filter((r) => UUID.test(r)) } }] },
    select: { id: true, name: true },
  });
  const out = new Map<string, string>();
  for (const row of rows) {
    out.set(row.name, row.id);
    out.set(row.id, row.id);
  }
  return out;
}

/** The credentials of sources by id, their secrets opened; a deleted source is absent. */
export async function sourceCredentials(db: DbTx, secrets: Pick<SecretBox, 'open'>, ids: readonly string[]): Promise<Map<string, S3Credentials>> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return new Map();
  const rows = await db.source.findMany({ where: { id: { in: wanted } } });
  return new Map(
    rows.map((r) => [
      r.id,
      {
        sourceId: r.id,
        region: r.region,
        endpoint: r.endpoint,
        forcePathStyle: r.forcePathStyle,
        accessKeyId: r.accessKeyId,
        secretAccessKey: secrets.open(r.secretAccessKey, sourceSecretPlace(r.id)),
      },
    ]),
  );
}
