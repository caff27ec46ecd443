// The idempotency_keys table (docs/idempotency.md): one row per user and key, holding the first
// request's fingerprint and, once it answered, its response. Keys and bodies are stored so that
// the table alone gives nothing away: the key as a SHA-256, the body encrypted under a key
// derived from the server secret and the Idempotency-Key itself.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Db } from '@ap/db';

/** How long a key is kept (docs/fair-share.md#idempotent-requests). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A first request that never answered (its process died) stops blocking its key after this. */
export const ABANDONED_AFTER_MS = 60_000;

export type KeyClaim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'reused' }
  | { kind: 'in-use' };

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

function cipherKey(secret: string, key: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, key, 'idempotency-response', 32));
}

function seal(secret: string, key: string, body: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', cipherKey(secret, key), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(body), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

function open(secret: string, key: string, sealed: string): unknown {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', cipherKey(secret, key), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
}

/**
 * Claims `key` for a request with this fingerprint, or says what to answer instead. One insert
 * decides between concurrent first requests; an expired row, or a running one abandoned by a
 * dead process, is taken over.
 */
export async function claimIdempotencyKey(db: Db, secret: string, claim: { userId: string; key: string; fingerprint: string; now: Date }): Promise<KeyClaim> {
  const { userId, key, fingerprint, now } = claim;
  const keyHash = hashKey(key);
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS);
  const abandoned = new Date(now.getTime() - ABANDONED_AFTER_MS);
  // Inserted, or taken over when the row it meets has expired or was abandoned mid-request.
  const taken = await db.$executeRaw`
    INSERT INTO idempotency_keys (user_id, key_hash, fingerprint, status, response_body, created_at, expires_at)
    VALUES (${userId}::uuid, ${keyHash}, ${fingerprint}, NULL, NULL, ${now}, ${expiresAt})
    ON CONFLICT (user_id, key_hash) DO UPDATE
      SET fingerprint = EXCLUDED.fingerprint, status = NULL, response_body = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
      WHERE idempotency_keys.expires_at <= ${now}
         OR (idempotency_keys.status IS NULL AND idempotency_keys.created_at < ${abandoned} AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)`;
  if (taken > 0) return { kind: 'claimed' };
  const row = await db.idempotencyKey.findUnique({ where: { userId_keyHash: { userId, keyHash } } });
  if (!row) return { kind: 'in-use' }; // released between the two statements: the client retries
  if (row.fingerprint !== fingerprint) return { kind: 'reused' };
  if (row.status === null || row.responseBody === null) return { kind: 'in-use' };
  return { kind: 'replay', status: row.status, body: open(secret, key, row.responseBody) };
}

/** Keeps the first response for replays. */
export async function storeIdempotentResponse(db: Db, secret: string, row: { userId: string; key: string; status: number; body: unknown }): Promise<void> {
  await db.idempotencyKey.updateMany({
    where: { userId: row.userId, keyHash: hashKey(row.key), status: null },
    data: { status: row.status, responseBody: seal(secret, row.key, row.body) },
  });
}

/** Frees the key after a refused or failed request, so a corrected one may use it. */
export async function releaseIdempotencyKey(db: Db, row: { userId: string; key: string }): Promise<void> {
  await db.idempotencyKey.deleteMany({ where: { userId: row.userId, keyHash: hashKey(row.key), status: null } });
}

/** Expired keys go (upkeep of the table, run on the user's own requests: bounded by the primary key). */
export async function deleteExpiredIdempotencyKeys(db: Db, userId: string, now: Date): Promise<void> {
  await db.idempotencyKey.deleteMany({ where: { userId, expiresAt: { lte: now } } });
}
