// The owner of the api_keys table's user-facing operations: create (capped per user), list and
// revoke. Only the key's hash is stored; the plain key never reaches this module.
import type { Db, DbTx } from './client';

export interface ApiKeyRow {
  id: string;
  name: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface NewApiKey {
  name: string;
  keyHash: Uint8Array<ArrayBuffer>;
  expiresAt: Date | null;
}

const select = { id: true, name: true, createdAt: true, expiresAt: true, lastUsedAt: true } as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Active: neither revoked nor expired at `now`. */
const activeWhere = (userId: string, now: Date) => ({ userId, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] });

/**
 * Creates a key unless the user already has `maxActivePerUser` active ones; the count and the
 * insert run under a lock on the user's row, so concurrent requests cannot pass the limit. A
 * burst of one user's requests queues on that lock, so waits are allowed longer than Prisma's
 * defaults (2 s for a connection, 5 s in the transaction) rather than answering 500.
 */
export async function createApiKey(db: Db, userId: string, key: NewApiKey, maxActivePerUser: number): Promise<ApiKeyRow | 'limit'> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    if ((await tx.apiKey.count({ where: activeWhere(userId, new Date()) })) >= maxActivePerUser) return 'limit' as const;
    return tx.apiKey.create({ data: { userId, name: key.name, keyHash: key.keyHash, expiresAt: key.expiresAt }, select });
  }, { maxWait: 30_000, timeout: 30_000 });
}

/** The user's keys that are not revoked (expired ones included: they show expires_at), oldest first. */
export function listApiKeys(db: DbTx, userId: string): Promise<ApiKeyRow[]> {
  return db.apiKey.findMany({ where: { userId, revokedAt: null }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select });
}

/** False when the user has no such key that is not already revoked. */
export async function revokeApiKey(db: DbTx, userId: string, id: string): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const { count } = await db.apiKey.updateMany({ where: { id, userId, revokedAt: null }, data: { revokedAt: new Date() } });
  return count > 0;
}
