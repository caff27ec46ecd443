// The body of a delivery (docs/webhooks.md#webhooks): {delivery_id, event, job_id, status,
// url_count, file_count, errors, zips, metadata, timestamp} (+ download on download.completed),
// with `zips` as in GET /jobs/:id. Pure: built from rows, so it is tested without servers.
//
// The body is fixed when the event is written (the outbox row holds it), so every attempt
// sends the same bytes apart from `download_url`s: those are signed at send time and never
// stored (a signed URL is a bearer credential).
import { jobOutcome, type WebhookEvent, type WebhookEventBody } from '@ap/contract';

export interface EventJobRow {
  id: string;
  status: WebhookEventBody['status'];
  urlCount: number;
  fileCount: number;
  metadata: unknown;
  error: string | null;
  /** A stream job's ZIPs are never written ahead (`bytes_done` 0). */
  mode?: string;
}

export interface EventZipRow {
  id: string;
  sequence: number;
  status: WebhookEventBody['zips'][number]['status'];
  filename: string;
  fileCount: number;
  size: bigint | null;
  error: string | null;
  plannedSize?: bigint | null;
}

/** Files of the job that failed (the others say nothing in a body). */
export interface EventFileErrorRow {
  url: string;
  error: string | null;
  zipId: string | null;
}

export type DownloadReport = NonNullable<WebhookEventBody['download']>;

/** Mirrors GET /jobs/:id (`jobOutcome`); `download_url`s are added at send time. */
export function eventBody(input: {
  deliveryId: string;
  event: WebhookEvent;
  job: EventJobRow;
  zips: readonly EventZipRow[];
  failedFiles: readonly EventFileErrorRow[];
  now: Date;
  download?: DownloadReport;
}): WebhookEventBody {
  const { job } = input;
  const { errors, zips } = jobOutcome({ files: input.failedFiles, zips: input.zips, jobError: job.error, downloadUrl: () => null, stream: job.mode === 'stream' });
  return {
    delivery_id: input.deliveryId,
    event: input.event,
    job_id: job.id,
    status: job.status,
    url_count: job.urlCount,
    file_count: job.fileCount,
    errors,
    zips,
    metadata: (job.metadata as Record<string, string> | null) ?? null,
    timestamp: input.now.toISOString(),
    ...(input.download ? { download: input.download } : {}),
  };
}

/** The body as sent: completed ZIPs of a completed, unexpired job get their signed link. */
export function withDownloadUrls(
  body: WebhookEventBody,
  job: { expiresAt: Date },
  now: Date,
  downloadUrl: (zipId: string, expiresAt: Date) => string,
): WebhookEventBody {
  const downloadable = body.status === 'completed' && job.expiresAt > now;
  return {
    ...body,
    zips: body.zips.map((z) => ({ ...z, download_url: downloadable && z.status === 'completed' ? downloadUrl(z.id, job.expiresAt) : null })),
  };
}
