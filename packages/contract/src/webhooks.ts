// Webhooks, usage and job stats (docs/webhooks.md#webhooks, docs/product-rules.md#usage-and-stats): request schemas
// the API validates with, and response schemas of what it answers (for clients and OpenAPI).
//
// Decisions (where docs/webhooks.md#delivery-rules is silent):
// - `url`: an absolute http(s) URL of at most 2,048 characters; the scheme and address rules
//   (https, or http to a loopback/private host with ALLOW_PRIVATE_URLS=true; the fetch guard's
//   address rules) are checked by the API after this schema, since they need DNS.
// - `events`: a non-empty array of distinct known event names; order kept as given.
// - `description`: at most 255 characters, no control characters; `null` = none.
// - Unknown fields are a 400, as everywhere else.

import { z } from 'zod';
import { JOB_STATUSES, ZIP_STATUSES } from './responses';
import { listJobsQuerySchema } from './schemas';
import { hasControlCharacter, hasLoneSurrogate, codePointLength } from './text';
import { PLAN_NAMES } from './plans';

export const WEBHOOK_EVENTS = ['job.completed', 'job.failed', 'download.completed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEvent[] = ['job.completed', 'job.failed'];

export const WEBHOOK_URL_MAX_CHARS = 2_048;
export const WEBHOOK_DESCRIPTION_MAX_CHARS = 255;
/** Secrets are shown once, with this prefix. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

const typed = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`),
});

const webhookUrlSchema = z.string(typed('a string')).superRefine((value, ctx) => {
  if (value.length > WEBHOOK_URL_MAX_CHARS) return void ctx.addIssue({ code: 'custom', message: `must be at most ${WEBHOOK_URL_MAX_CHARS} characters` });
  let url: URL | null = null;
  try {
    url = value === value.trim() && !hasControlCharacter(value) ? new URL(value) : null;
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    ctx.addIssue({ code: 'custom', message: 'must be an https URL' });
  } else if (url.username || url.password) {
    ctx.addIssue({ code: 'custom', message: 'must not contain credentials (sign requests with the webhook secret instead)' });
  }
});

const eventSchema = z.enum(WEBHOOK_EVENTS, {
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be one of ${WEBHOOK_EVENTS.map((e) => `"${e}"`).join(', ')}`),
});

export const webhookCreateSchema = z.strictObject(
  {
    url: webhookUrlSchema,
    events: z
      .array(eventSchema, typed('an array of event names'))
      .min(1, 'must name at least one event')
      .refine((events) => new Set(events).size === events.length, 'must not name an event twice')
      .default([...DEFAULT_WEBHOOK_EVENTS]),
    description: z
      .string(typed('a string'))
      .superRefine((value, ctx) => {
        const chars = codePointLength(value);
        if (chars > WEBHOOK_DESCRIPTION_MAX_CHARS) ctx.addIssue({ code: 'custom', message: `must be at most ${WEBHOOK_DESCRIPTION_MAX_CHARS} characters (got ${chars})` });
        else if (hasControlCharacter(value) || hasLoneSurrogate(value)) ctx.addIssue({ code: 'custom', message: 'must not contain control characters' });
      })
      .nullish(),
  },
  { error: () => 'the request body must be a JSON object' },
);
export type WebhookCreateRequest = z.output<typeof webhookCreateSchema>;

/** `GET /webhooks/:id/deliveries` query: the job list's `limit` and `cursor` rules. */
export const listDeliveriesQuerySchema = listJobsQuerySchema.pick({ limit: true, cursor: true });

// ---------------------------------------------------------------------------------------------
// Responses

const isoDateTime = z.iso.datetime();

export const webhookSchema = z.object({
  id: z.uuid(),
  url: z.string(),
  events: z.array(eventSchema),
  description: z.string().nullable(),
  created_at: isoDateTime,
});
export type WebhookView = z.infer<typeof webhookSchema>;

export const webhookWithSecretSchema = webhookSchema.extend({
  secret: z.string().startsWith(WEBHOOK_SECRET_PREFIX),
});
export type WebhookWithSecretView = z.infer<typeof webhookWithSecretSchema>;

/** `POST /webhooks` (201) and `POST /webhooks/:id/rotate-secret` (200). */
export const webhookSecretResponseSchema = z.object({ success: z.literal(true), webhook: webhookWithSecretSchema });
export const webhookListResponseSchema = z.object({ success: z.literal(true), webhooks: z.array(webhookSchema) });
export const webhookDeleteResponseSchema = z.object({ success: z.literal(true), message: z.string() });

export const webhookDeliverySchema = z.object({
  id: z.uuid(),
  event: eventSchema,
  job_id: z.uuid(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  attempts: z.number().int().min(0),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: isoDateTime.nullable(),
  delivered_at: isoDateTime.nullable(),
  created_at: isoDateTime,
});
export type WebhookDeliveryView = z.infer<typeof webhookDeliverySchema>;

export const listMetaSchema = z.object({
  limit: z.number().int(),
  total: z.number().int(),
  next_cursor: z.string().nullable(),
  has_more: z.boolean(),
});

export const webhookDeliveriesResponseSchema = z.object({
  success: z.literal(true),
  deliveries: z.array(webhookDeliverySchema),
  meta: listMetaSchema,
});

/** A ZIP entry as in `GET /jobs/:id`. */
export const webhookZipSchema = z.object({
  id: z.string(),
  sequence: z.number().int(),
  status: z.enum(ZIP_STATUSES),
  filename: z.string(),
  file_count: z.number().int(),
  size: z.number().nullable(),
  download_url: z.string().nullable(),
  errors: z.array(z.object({ url: z.string(), error: z.string() })).optional(),
  bytes_done: z.number(),
  expected_size: z.number().nullable(),
});

/** What a receiver gets (the POST body), signed in `X-Signature`. */
export const webhookEventBodySchema = z.object({
  delivery_id: z.uuid(),
  event: eventSchema,
  job_id: z.uuid(),
  status: z.enum(JOB_STATUSES),
  url_count: z.number().int(),
  file_count: z.number().int(),
  errors: z.array(z.object({ url: z.string(), error: z.string() })),
  zips: z.array(webhookZipSchema),
  metadata: z.record(z.string(), z.string()).nullable(),
  timestamp: isoDateTime,
  /** Only on `download.completed`. `range` null: the whole ZIP was asked for. */
  download: z
    .object({
      zip_id: z.string(),
      bytes_sent: z.number().int().min(0),
      range: z.object({ start: z.number().int(), end: z.number().int() }).nullable(),
      complete: z.boolean(),
    })
    .optional(),
});
export type WebhookEventBody = z.infer<typeof webhookEventBodySchema>;

export const usageResponseSchema = z.object({
  success: z.literal(true),
  usage: z.object({
    plan: z.enum(PLAN_NAMES),
    /** First instant of the current UTC month. */
    period_start: isoDateTime,
    /** First instant of the next UTC month (exclusive end). */
    period_end: isoDateTime,
    overage_enabled: z.boolean(),
    stream_bytes: z.number().int().min(0),
    stream_quota_bytes: z.number().int(),
    /** GB-days charged this month (1 GB = 10^9 bytes). */
    stored_gb_days: z.number().min(0),
    stored_quota_gb_days: z.number(),
  }),
});
export type UsageView = z.infer<typeof usageResponseSchema>['usage'];

export const jobStatsResponseSchema = z.object({
  success: z.literal(true),
  stats: z.object({
    total: z.number().int(),
    preparing: z.number().int(),
    pending: z.number().int(),
    processing: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
  }),
});
export type JobStatsView = z.infer<typeof jobStatsResponseSchema>['stats'];
