// docs/webhooks.md#webhooks: POST/GET/DELETE /webhooks, POST /webhooks/:id/rotate-secret,
// GET /webhooks/:id/deliveries. Secrets appear only in the create and rotate responses.
import { Router, type RequestHandler } from 'express';
import { ApiError, listDeliveriesQuerySchema, MAX_WEBHOOKS_PER_USER, webhookCreateSchema, type WebhookDeliveryView, type WebhookView } from '@ap/contract';
import type { Db } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import { checkDestination } from '@ap/fetch';
import { createWebhook, deleteWebhook, findWebhook, listDeliveries, listWebhooks, rotateWebhookSecret, type DeliveryRow, type WebhookRow } from '@ap/webhooks';
import { authOf } from '../http/auth';
import { isUuid, iso } from '../http/serialize';
import { parseOrThrow } from '../http/validate';

export interface WebhooksDeps {
  db: Db;
  /** Seals signing secrets at rest. */
  secrets: SecretBox;
  /** ALLOW_PRIVATE_URLS: webhook URLs follow the same address rules as fetched URLs. */
  allowPrivate: boolean;
  /** The Idempotency-Key middleware of create routes. */
  idempotent: RequestHandler;
}

const webhookView = (w: WebhookRow): WebhookView => ({ id: w.id, url: w.url, events: w.events, description: w.description, created_at: iso(w.createdAt) });

const deliveryView = (d: DeliveryRow): WebhookDeliveryView => ({
  id: d.id,
  event: d.event as WebhookDeliveryView['event'],
  job_id: d.jobId,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  next_attempt_at: d.nextAttemptAt ? iso(d.nextAttemptAt) : null,
  delivered_at: d.deliveredAt ? iso(d.deliveredAt) : null,
  created_at: iso(d.createdAt),
});

const encodeCursor = (c: { createdAt: Date; id: string }) => Buffer.from(JSON.stringify([c.createdAt.toISOString(), c.id])).toString('base64url');

function decodeCursor(value: string): { createdAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof t === 'string' && !Number.isNaN(Date.parse(t)) && typeof id === 'string' && isUuid(id)) return { createdAt: new Date(t), id };
  } catch {
    // fall through
  }
  throw new ApiError('INVALID_REQUEST', 'cursor is not a value returned in meta.next_cursor');
}

/**
 * The URL rules of docs/webhooks.md#delivery-rules: https, or http to a loopback/private host only when
 * ALLOW_PRIVATE_URLS=true; and the fetch guard's address rules on every address the host
 * resolves to. Checked again at every delivery, at connect time.
 */
async function checkWebhookUrl(value: string, allowPrivate: boolean): Promise<void> {
  const url = new URL(value);
  const verdict = await checkDestination(url, { allowPrivate });
  if (!verdict.ok) throw new ApiError('INVALID_REQUEST', `url: ${verdict.error}`);
  if (url.protocol === 'http:' && !(allowPrivate && verdict.private)) {
    throw new ApiError('INVALID_REQUEST', 'url: must be an https URL (http only to a loopback or private host, and only when the operator sets ALLOW_PRIVATE_URLS=true)');
  }
}

export function webhooksRouter(deps: WebhooksDeps): Router {
  const { db } = deps;
  const router = Router();
  const owned = async (userId: string, id: string | undefined) => {
    const hook = isUuid(id) ? await findWebhook(db, userId, id) : null;
    if (!hook) throw new ApiError('NOT_FOUND', 'webhook not found');
    return hook;
  };

  router.post('/', deps.idempotent, async (req, res) => {
    const { user } = authOf(req);
    const body = parseOrThrow(webhookCreateSchema, req.body ?? {});
    await checkWebhookUrl(body.url, deps.allowPrivate);
    const created = await createWebhook(db, deps.secrets, { userId: user.id, url: body.url, events: body.events, description: body.description ?? null });
    if (!created.ok) throw new ApiError('PLAN_LIMIT_EXCEEDED', `at most ${MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first`);
    res.status(201).json({ success: true, webhook: { ...webhookView(created.webhook), secret: created.secret } });
  });

  router.get('/', async (req, res) => {
    const hooks = await listWebhooks(db, authOf(req).user.id);
    res.json({ success: true, webhooks: hooks.map(webhookView) });
  });

  router.delete('/:id', async (req, res) => {
    const id = req.params.id;
    const deleted = isUuid(id) && (await deleteWebhook(db, authOf(req).user.id, id));
    if (!deleted) throw new ApiError('NOT_FOUND', 'webhook not found');
    res.json({ success: true, message: 'webhook deleted' });
  });

  router.post('/:id/rotate-secret', async (req, res) => {
    const id = req.params.id;
    const rotated = isUuid(id) ? await rotateWebhookSecret(db, deps.secrets, authOf(req).user.id, id) : null;
    if (!rotated) throw new ApiError('NOT_FOUND', 'webhook not found');
    res.json({ success: true, webhook: { ...webhookView(rotated.webhook), secret: rotated.secret } });
  });

  router.get('/:id/deliveries', async (req, res) => {
    const hook = await owned(authOf(req).user.id, req.params.id);
    const query = parseOrThrow(listDeliveriesQuerySchema, req.query);
    const page = await listDeliveries(db, hook.id, { limit: query.limit, after: query.cursor ? decodeCursor(query.cursor) : null });
    const last = page.rows[page.rows.length - 1];
    res.json({
      success: true,
      deliveries: page.rows.map(deliveryView),
      meta: { limit: query.limit, total: page.total, next_cursor: page.hasMore && last ? encodeCursor(last) : null, has_more: page.hasMore },
    });
  });

  return router;
}
