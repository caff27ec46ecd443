// Sending deliveries: one queue message per attempt ("attempt N of delivery D"), the row in
// Postgres is the truth. Every attempt is recorded (webhook_delivery_attempts); the same
// delivery_id goes out on every attempt; the URL passes the fetch guard's address rules again
// (at connect time, through the guarded agents: DNS may have changed since creation); a 2xx
// within 10 s is success; redirects are not followed; failures are retried on the schedule.
import http from 'node:http';
import https from 'node:https';
import { DelayedError, type Processor } from 'bullmq';
import { jobExpiresAt, type Db } from '@ap/db';
import { checkUrl, createGuardedAgents, INTERNAL_FAILURE, wordedError, type GuardedAgents, type GuardOptions } from '@ap/fetch';
import type { WebhookEventBody } from '@ap/contract';
import type { Logger } from '@ap/log';
import type { SecretBox } from '@ap/secrets';
import { jobIds, type Queue, type WebhookDeliveryPayload } from '@ap/queue';
import { withDownloadUrls } from './body';
import { BUSY_WEBHOOK_DELAY_MS, discardResponseBody, InFlightPerWebhook } from './limits';
import { DELIVERY_TIMEOUT_MS, nextRetryDelayMs } from './schedule';
import { signatureHeader } from './signature';
import { signingSecrets } from './store';

export const WEBHOOK_USER_AGENT = 'archive-packager-webhooks/1.0';
/** How long a worker holds a delivery it is sending (more than the 10 s an attempt may take). */
const CLAIM_MS = 60_000;

export interface DeliveryDeps {
  db: Db;
  log: Logger;
  /** Opens the sealed signing secrets. */
  secrets: Pick<SecretBox, 'open'>;
  /** Where the next attempt goes (delayed by the schedule). */
  queue: Queue<WebhookDeliveryPayload>;
  allowPrivate: boolean;
  /** The schedule's unit (WEBHOOK_RETRY_BASE_MS; one minute in production). */
  retryBaseMs: number;
  downloadUrl(zipId: string, expiresAt: Date): string;
  /** Told the outcome of every attempt made (the integrator counts archive_webhook_deliveries_total{result} here). */
  onAttempt?: (outcome: Exclude<AttemptOutcome, 'skipped' | 'busy'>) => void;
}

/** `busy`: the webhook has its most deliveries in flight; nothing was sent, the message waits. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'skipped' | 'busy';

export interface DeliverySender {
  send(payload: WebhookDeliveryPayload): Promise<AttemptOutcome>;
  /** Cuts the requests in flight and resolves once their attempts are recorded (before the database closes). */
  close(): Promise<void>;
}

export function createDeliverySender(deps: DeliveryDeps): DeliverySender {
  const guard: GuardOptions = { allowPrivate: deps.allowPrivate, allowList: [] };
  const agents = createGuardedAgents({ guard, freeSocketTimeoutMs: 5_000 });
  const inFlight = new InFlightPerWebhook();
  const sending = new Set<Promise<unknown>>();
  const send = async (payload: WebhookDeliveryPayload): Promise<AttemptOutcome> => {
    const target = await deps.db.webhookDelivery.findUnique({ where: { id: payload.deliveryId }, select: { webhookId: true } });
    if (!target) return 'skipped';
    if (!inFlight.tryTake(target.webhookId)) return 'busy';
    try {
      return await attempt(deps, agents, guard, payload);
    } finally {
      inFlight.release(target.webhookId);
    }
  };
  return {
    send(payload) {
      const sent = send(payload);
      const settled: Promise<void> = sent.then(
        () => void sending.delete(settled),
        () => void sending.delete(settled),
      );
      sending.add(settled);
      return sent;
    },
    async close() {
      agents.http.destroy();
      agents.https.destroy();
      while (sending.size) await Promise.allSettled([...sending]);
    },
  };
}

export function createDeliveryProcessor(sender: DeliverySender): Processor<WebhookDeliveryPayload> {
  return async (message, token) => {
    const outcome = await sender.send(message.data);
    if (outcome === 'busy') {
      // Not a failure: the message waits without holding a worker slot (BullMQ's documented way).
      await message.moveToDelayed(Date.now() + BUSY_WEBHOOK_DELAY_MS * (1 + Math.random()), token);
      throw new DelayedError();
    }
  };
}

async function attempt(deps: DeliveryDeps, agents: GuardedAgents, guard: GuardOptions, payload: WebhookDeliveryPayload): Promise<AttemptOutcome> {
  const { db, log } = deps;
  const claimedAt = new Date();
  // Only the attempt that is next, only while no other worker holds it (a duplicate message).
  const { count } = await db.webhookDelivery.updateMany({
    where: { id: payload.deliveryId, status: 'pending', attempts: payload.attempt, OR: [{ lockedUntil: null }, { lockedUntil: { lt: claimedAt } }] },
    data: { lockedUntil: new Date(claimedAt.getTime() + CLAIM_MS) },
  });
  if (count === 0) return 'skipped';
  const delivery = await db.webhookDelivery.findUniqueOrThrow({
    where: { id: payload.deliveryId },
    select: { id: true, jobId: true, payload: true, webhook: { select: { id: true, url: true, secret: true, previousSecret: true, previousSecretExpiresAt: true, deletedAt: true } } },
  });
  const hook = delivery.webhook;
  if (hook.deletedAt) {
    await db.webhookDelivery.update({ where: { id: delivery.id }, data: { status: 'failed', lastError: 'webhook deleted', nextAttemptAt: null, lockedUntil: null } });
    return 'failed';
  }

  const now = new Date();
  const expiresAt = await jobExpiresAt(db, delivery.jobId);
  const body = Buffer.from(JSON.stringify(withDownloadUrls(delivery.payload as WebhookEventBody, { expiresAt: expiresAt ?? new Date(0) }, now, deps.downloadUrl)));
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'x-webhook-id': hook.id,
    'x-delivery-id': delivery.id,
    'x-signature': signatureHeader(signingSecrets(deps.secrets, hook, now), timestamp, body),
  };
  const started = Date.now();
  const result = await post(hook.url, body, headers, agents, guard);
  const durationMs = Date.now() - started;

  const number = payload.attempt + 1;
  const ok = result.status !== null && result.status >= 200 && result.status < 300;
  const delay = ok ? null : nextRetryDelayMs(number, deps.retryBaseMs);
  const finished = new Date();
  const recorded = await db.$transaction(async (tx) => {
    const { count: updated } = await tx.webhookDelivery.updateMany({
      where: { id: delivery.id, status: 'pending', attempts: payload.attempt },
      data: {
        attempts: number,
        lastStatusCode: result.status,
        lastError: result.error,
        lockedUntil: null,
        ...(ok
          ? { status: 'delivered', deliveredAt: finished, nextAttemptAt: null }
          : delay === null
            ? { status: 'failed', nextAttemptAt: null }
            : { nextAttemptAt: new Date(finished.getTime() + delay) }),
      },
    });
    if (updated === 0) return false;
    await tx.webhookDeliveryAttempt.create({ data: { deliveryId: delivery.id, number, statusCode: result.status, error: result.error, durationMs, createdAt: finished } });
    return true;
  });
  const outcome: AttemptOutcome = !recorded ? 'skipped' : ok ? 'delivered' : delay === null ? 'failed' : 'retrying';
  // The URL is not logged: receivers often put a token in it.
  log.info({ deliveryId: delivery.id, webhookId: hook.id, jobId: delivery.jobId, attempt: number, status: result.status, error: result.error, outcome }, 'webhook delivery attempt');
  if (outcome !== 'skipped') deps.onAttempt?.(outcome);
  if (outcome === 'retrying') {
    const next = { deliveryId: delivery.id, attempt: number };
    // Should this add fail, the reconciler adds it once it is due (the row says when).
    await deps.queue.add('webhook', next, { jobId: jobIds.webhook(next), delay: delay! }).catch((err: Error) => log.warn({ deliveryId: delivery.id, err: err.message }, 'next webhook attempt not queued; the reconciler will'));
  }
  return outcome;
}

interface PostResult {
  status: number | null;
  error: string | null;
}

/** One POST: the status of the response's head within the timeout, the body unread. */
function post(target: string, body: Buffer, headers: Record<string, string>, agents: GuardedAgents, guard: GuardOptions): Promise<PostResult> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve({ status: null, error: 'invalid URL' });
  }
  const refused = checkUrl(url, guard);
  if (refused) return Promise.resolve({ status: null, error: refused.userMessage });
  const secure = url.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, 'content-length': String(body.length) },
    });
    const timer = setTimeout(() => {
      finish({ status: null, error: `no response within ${DELIVERY_TIMEOUT_MS / 1000} s` });
      req.destroy();
    }, DELIVERY_TIMEOUT_MS);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const error = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
      finish({ status, error });
      // The receiver's body is not needed: at most 64 KiB of it is read, so the socket of a short one can be reused.
      void discardResponseBody(res);
    });
    req.on('error', (err) => finish({ status: null, error: describeError(err) }));
    req.end(body);
  });
}

function describeError(err: unknown): string {
  const worded = wordedError(err, 'receiver');
  return worded === INTERNAL_FAILURE ? 'connection failed' : worded;
}
