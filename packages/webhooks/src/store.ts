// The webhooks table: the one owner of its rows. Webhooks are deleted softly (deleted_at) so
// their delivery history stays consistent; a deleted webhook is gone for its user and gets
// nothing more.
import { randomUUID } from 'node:crypto';
import { MAX_WEBHOOKS_PER_USER, WEBHOOK_SECRET_PREFIX, type WebhookEvent } from '@ap/contract';
import type { Db } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import { eventsOf } from './outbox';
import { newWebhookSecret } from './signature';

/** docs/webhooks.md#verifying-the-signature: for 24 hours after a rotation deliveries carry the old secret's signature too. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

export interface WebhookRow {
  id: string;
  url: string;
  events: WebhookEvent[];
  description: string | null;
  createdAt: Date;
}

/** The places (@ap/secrets associated data) a webhook's current and replaced signing secrets are sealed for. */
export const webhookSecretPlace = (id: string) => `webhooks.secret:${id}`;
export const webhookPreviousSecretPlace = (id: string) => `webhooks.previous_secret:${id}`;

/**
 * A stored signing secret in plain text: a row written before secrets were sealed, until
 * `pnpm admin secrets rotate` seals it (docs/api-hardening.md#sealed-webhook-secrets).
 */
export const isPlainWebhookSecret = (stored: string) => stored.startsWith(WEBHOOK_SECRET_PREFIX);

function openWebhookSecret(secrets: Pick<SecretBox, 'open'>, stored: string, place: string): string {
  return isPlainWebhookSecret(stored) ? stored : secrets.open(stored, place);
}

const select = { id: true, url: true, events: true, description: true, createdAt: true } as const;
const toRow = (r: { id: string; url: string; events: unknown; description: string | null; createdAt: Date }): WebhookRow => ({ ...r, events: eventsOf(r.events) });

/**
 * Creates a webhook unless the user already has the most allowed; the count and the insert run
 * under a lock on the user's row, so concurrent requests cannot pass the limit together.
 */
export async function createWebhook(
  db: Db,
  secrets: Pick<SecretBox, 'seal'>,
  input: { userId: string; url: string; events: WebhookEvent[]; description: string | null },
): Promise<{ ok: true; webhook: WebhookRow; secret: string } | { ok: false; reason: 'limit' }> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${input.userId}::uuid FOR UPDATE`;
    const live = await tx.webhook.count({ where: { userId: input.userId, deletedAt: null } });
    if (live >= MAX_WEBHOOKS_PER_USER) return { ok: false as const, reason: 'limit' as const };
    const id = randomUUID();
    const secret = newWebhookSecret();
    const row = await tx.webhook.create({
      data: { id, userId: input.userId, url: input.url, events: input.events, description: input.description, secret: secrets.seal(secret, webhookSecretPlace(id)) },
      select,
    });
    return { ok: true as const, webhook: toRow(row), secret };
  });
}

/** The user's live webhooks, oldest first. */
export async function listWebhooks(db: Db, userId: string): Promise<WebhookRow[]> {
  const rows = await db.webhook.findMany({ where: { userId, deletedAt: null }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select });
  return rows.map(toRow);
}

export async function findWebhook(db: Db, userId: string, id: string): Promise<WebhookRow | null> {
  const row = await db.webhook.findFirst({ where: { id, userId, deletedAt: null }, select });
  return row ? toRow(row) : null;
}

/** Deletes a webhook; its deliveries still pending end as failed, so nothing more is sent. */
export async function deleteWebhook(db: Db, userId: string, id: string, now = new Date()): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const { count } = await tx.webhook.updateMany({ where: { id, userId, deletedAt: null }, data: { deletedAt: now } });
    if (count === 0) return false;
    await tx.webhookDelivery.updateMany({
      where: { webhookId: id, status: 'pending' },
      data: { status: 'failed', lastError: 'webhook deleted', nextAttemptAt: null },
    });
    return true;
  });
}

/**
 * A new secret; the one it replaces keeps signing beside it for ROTATION_OVERLAP_MS, so a
 * receiver can switch over without rejecting deliveries in between.
 */
export async function rotateWebhookSecret(db: Db, secrets: Pick<SecretBox, 'seal' | 'open'>, userId: string, id: string, now = new Date()): Promise<{ webhook: WebhookRow; secret: string } | null> {
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ secret: string }[]>`SELECT secret FROM webhooks WHERE id = ${id}::uuid AND user_id = ${userId}::uuid AND deleted_at IS NULL FOR UPDATE`;
    const current = rows[0];
    if (!current) return null;
    const secret = newWebhookSecret();
    const row = await tx.webhook.update({
      where: { id },
      data: {
        secret: secrets.seal(secret, webhookSecretPlace(id)),
        previousSecret: secrets.seal(openWebhookSecret(secrets, current.secret, webhookSecretPlace(id)), webhookPreviousSecretPlace(id)),
        previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      },
      select,
    });
    return { webhook: toRow(row), secret };
  });
}

/** The secrets a delivery is signed with at `now`: the current one first, then the replaced one while its overlap lasts. */
export function signingSecrets(
  secrets: Pick<SecretBox, 'open'>,
  hook: { id: string; secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null },
  now: Date,
): string[] {
  const current = openWebhookSecret(secrets, hook.secret, webhookSecretPlace(hook.id));
  return hook.previousSecret && hook.previousSecretExpiresAt && hook.previousSecretExpiresAt > now
    ? [current, openWebhookSecret(secrets, hook.previousSecret, webhookPreviousSecretPlace(hook.id))]
    : [current];
}

export interface DeliveryRow {
  id: string;
  event: string;
  jobId: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

/** A page of a webhook's deliveries, newest first, keyset-paginated on (created_at, id). */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  page: { limit: number; after: { createdAt: Date; id: string } | null },
): Promise<{ rows: DeliveryRow[]; total: number; hasMore: boolean }> {
  const where = { webhookId };
  const rows = await db.webhookDelivery.findMany({
    where: page.after
      ? { ...where, OR: [{ createdAt: { lt: page.after.createdAt } }, { createdAt: page.after.createdAt, id: { lt: page.after.id } }] }
      : where,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: page.limit + 1,
    select: { id: true, event: true, jobId: true, status: true, attempts: true, lastStatusCode: true, lastError: true, nextAttemptAt: true, deliveredAt: true, createdAt: true },
  });
  const total = await db.webhookDelivery.count({ where });
  return { rows: rows.slice(0, page.limit), total, hasMore: rows.length > page.limit };
}
