export { newWebhookSecret, signPayload, signatureHeader, parseSignatureHeader, verifySignature, type ParsedSignature } from './signature';
export { RETRY_SCHEDULE, MAX_DELIVERY_ATTEMPTS, DEFAULT_RETRY_BASE_MS, DELIVERY_TIMEOUT_MS, nextRetryDelayMs } from './schedule';
export { eventBody, withDownloadUrls, type DownloadReport, type EventJobRow, type EventZipRow, type EventFileErrorRow } from './body';
export { recordJobEvent, dueDeliveries, eventsOf, type OutboxDb } from './outbox';
export {
  createWebhook,
  listWebhooks,
  findWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  signingSecrets,
  webhookSecretPlace,
  webhookPreviousSecretPlace,
  isPlainWebhookSecret,
  listDeliveries,
  ROTATION_OVERLAP_MS,
  type WebhookRow,
  type DeliveryRow,
} from './store';
export { createDeliverySender, createDeliveryProcessor, WEBHOOK_USER_AGENT, type DeliveryDeps, type DeliverySender, type AttemptOutcome } from './deliver';
export { MAX_IN_FLIGHT_PER_WEBHOOK, RESPONSE_BODY_MAX_BYTES, WEBHOOK_WORKER_CONCURRENCY, discardResponseBody } from './limits';
