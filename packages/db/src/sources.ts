// The owner of the sources table (docs/private-sources.md#the-rules): a user's stored credentials
// for an S3-compatible bucket. The secret access key arrives sealed (@ap/secrets, place
// `sources.secret_access_key:<id>`) and only sourceSecrets hands it out, still sealed; no row
// type for responses carries it.
import type { Db, DbTx } from './client';

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

/** A source with its sealed secret: for the fetch path only. */
export type SourceWithSecret = SourceRow & { secretAccessKey: string };

export type NewSource = Omit<SourceRow, 'createdAt'> & {
  /** Sealed for `sources.secret_access_key:<id>`. */
  sealedSecretAccessKey: string;
};

const select = { id: true, name: true, type: true, region: true, endpoint: true, forcePathStyle: true, accessKeyId: true, createdAt: true } as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Creates a source unless the user has `maxPerUser` or one of that name; the count and the
 * insert run under a lock on the user's row, so concurrent requests cannot pass the limit.
 */
export async function createSource(db: Db, userId: string, source: NewSource, maxPerUser: number): Promise<{ ok: true; source: SourceRow } | { ok: false; reason: 'limit' | 'duplicate' }> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    if ((await tx.source.count({ where: { userId } })) >= maxPerUser) return { ok: false as const, reason: 'limit' as const };
    if (await tx.source.findFirst({ where: { userId, name: source.name }, select: { id: true } })) return { ok: false as const, reason: 'duplicate' as const };
    const { sealedSecretAccessKey, ...rest } = source;
    const row = await tx.source.create({ data: { ...rest, userId, secretAccessKey: sealedSecretAccessKey }, select });
    return { ok: true as const, source: row };
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

/** Sources by id with their sealed secrets; a deleted source is absent. */
export function sourcesWithSecrets(db: DbTx, ids: readonly string[]): Promise<SourceWithSecret[]> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return Promise.resolve([]);
  return db.source.findMany({ where: { id: { in: wanted } }, select: { ...select, secretAccessKey: true } });
}
