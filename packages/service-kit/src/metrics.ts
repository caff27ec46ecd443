// Every Prometheus metric of the project, defined once (docs/operations.md#the-rules fixes the
// names and labels; dashboards and alerts rely on them). Each service process has one registry,
// served on its operations port (HEALTH_PORT) at /metrics, never on the API's public port.
import { Transform, type TransformCallback } from 'node:stream';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

export const httpRequestsTotal = new Counter({
  name: 'archive_http_requests_total',
  help: 'HTTP requests answered by the API, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'archive_http_request_duration_seconds',
  help: 'Time from request to the end of the response, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

export const jobsCreatedTotal = new Counter({
  name: 'archive_jobs_created_total',
  help: 'Jobs created through the API, by mode',
  labelNames: ['mode'] as const,
  registers: [metricsRegistry],
});

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

export const binsTotal = new Counter({
  name: 'archive_bins_total',
  help: 'ZIP bins a packer finished, by result (completed, failed)',
  labelNames: ['result'] as const,
  registers: [metricsRegistry],
});

export const binDuration = new Histogram({
  name: 'archive_bin_duration_seconds',
  help: 'Time a packer spent on one bin that it completed',
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800],
  registers: [metricsRegistry],
});

export const bytesFetchedTotal = new Counter({
  name: 'archive_bytes_fetched_total',
  help: 'Body bytes read from origins, by service (packer for stored bins, api for stream downloads)',
  labelNames: ['service'] as const,
  registers: [metricsRegistry],
});

export const bytesUploadedTotal = new Counter({
  name: 'archive_bytes_uploaded_total',
  help: 'Archive bytes a packer sent to the object store',
  registers: [metricsRegistry],
});

export const bytesCopiedServerSideTotal = new Counter({
  name: 'archive_bytes_copied_server_side_total',
  help: 'Archive bytes S3 copied from source objects into a destination ZIP (UploadPartCopy), never passing through a packer',
  registers: [metricsRegistry],
});

export const segmentsTotal = new Counter({
  name: 'archive_segments_total',
  help: 'Segments of big bins packed by a packer (docs/segments.md), by result (completed, failed)',
  labelNames: ['result'] as const,
  registers: [metricsRegistry],
});

export const streamBytesSentTotal = new Counter({
  name: 'archive_stream_bytes_sent_total',
  help: 'Bytes of stream-mode archives sent to clients by the API',
  registers: [metricsRegistry],
});

export const fetchErrorsTotal = new Counter({
  name: 'archive_fetch_errors_total',
  help: 'Failed fetches from origins (after retries), by reason (the fetch error kind)',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveriesTotal = new Counter({
  name: 'archive_webhook_deliveries_total',
  help: 'Webhook delivery attempts, by result',
  labelNames: ['result'] as const,
  registers: [metricsRegistry],
});

/** What the queue gauge needs of a BullMQ queue. */
export interface CountableQueue {
  readonly name: string;
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
}

const watchedQueues = new Set<CountableQueue>();

/** `archive_queue_jobs{queue,state}`: read from Redis at each scrape, so it is never stale. */
export const queueJobs = new Gauge({
  name: 'archive_queue_jobs',
  help: 'Messages in each work queue, by state, read at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [metricsRegistry],
  async collect() {
    this.reset();
    await Promise.all(
      [...watchedQueues].map(async (queue) => {
        // Redis down: the series are left out rather than reported as zero.
        const counts = await queue.getJobCounts(...QUEUE_STATES, 'prioritized').catch(() => null);
        if (!counts) return;
        // Bins carry a priority (fair share), which BullMQ keeps apart from `waiting`; they wait all the same.
        counts.waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
        for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
      }),
    );
  },
});

/** Reports these queues in `archive_queue_jobs`; the returned function stops that. */
export function watchQueues(queues: readonly CountableQueue[]): () => void {
  for (const q of queues) watchedQueues.add(q);
  return () => {
    for (const q of queues) watchedQueues.delete(q);
  };
}

/** A pass-through stream that adds every byte it passes to `counter`. */
export function byteCounter(counter: Counter<string>, labels: Record<string, string> = {}): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      counter.inc(labels, chunk.length);
      done(null, chunk);
    },
  });
}

/** The Prometheus exposition text and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}
